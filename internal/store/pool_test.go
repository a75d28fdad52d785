package store_test

import (
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func TestSplitPool(t *testing.T) {
	for _, c := range []struct {
		n                 int
		ingests, delivers bool
		api, ingest, disp int
	}{
		// The defaults by role (docs/performance.md): all 16, ingest 8,
		// delivery 16.
		{16, true, true, 2, 8, 5},
		{8, true, false, 3, 4, 0},
		{16, false, true, 2, 0, 13},
		{32, true, true, 5, 16, 10},
		{4, true, true, 1, 1, 1},
		// Too small to divide: the budgets share what there is.
		{2, true, true, 1, 1, 1},
		{3, true, true, 2, 2, 2},
		// A tool (migrate, rewrap): all of it for the API's calls.
		{4, false, false, 3, 0, 0},
	} {
		s := store.SplitPool(c.n, c.ingests, c.delivers)
		if s[store.BudgetAPI] != c.api || s[store.BudgetIngest] != c.ingest || s[store.BudgetDispatch] != c.disp {
			t.Errorf("SplitPool(%d, ingests %v, delivers %v) = %v; want api %d ingest %d dispatch %d",
				c.n, c.ingests, c.delivers, s, c.api, c.ingest, c.disp)
		}
		if c.n >= 4 && s[store.BudgetIngest] > c.n/2 {
			t.Errorf("SplitPool(%d): ingest holds %d, more than half the pool", c.n, s[store.BudgetIngest])
		}
		if sum := s[store.BudgetAPI] + s[store.BudgetIngest] + s[store.BudgetDispatch]; c.n >= 4 && sum > c.n-1 {
			t.Errorf("SplitPool(%d): the shares sum to %d, leaving no connection for the session locks", c.n, sum)
		}
	}
}
