package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The operator overview lists every tenant's auto-disabled subscriptions,
// the most recently disabled first, as the API pages them
// (GET /v1/admin/disabled-subscriptions): more than one page of them is
// read to the end.
func TestOperatorOverview_ListsEveryTenantsDisabledSubscriptionsAcrossPages(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		h.tenant("acme")
		h.tenant("globex")
		now := h.clock.Now()
		const n = 501 // one more than the API's largest page
		for i := range n {
			tenant := []string{"acme", "globex"}[i%2]
			s := storetest.NewSubscription(tenant, fmt.Sprintf("sub_%04d", i))
			s.Name = fmt.Sprintf("hooks-%04d", i)
			at := now.Add(-time.Duration(i) * time.Minute)
			s.Enabled, s.DisabledReason, s.DisabledAt = false, fmt.Sprintf("auto-disabled #%d", i), &at
			if _, err := h.store.CreateSubscription(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
		live := storetest.NewSubscription("acme", "sub_live")
		live.Name = "still-live"
		if _, err := h.store.CreateSubscription(context.Background(), live); err != nil {
			t.Fatal(err)
		}

		got := h.signIn(adminToken).get("/console/")
		if got.status != 200 {
			t.Fatalf("overview: %d\n%s", got.status, got.body)
		}
		_, section, _ := strings.Cut(got.body, "Auto-disabled subscriptions")
		newest, oldest := strings.Index(section, "hooks-0000"), strings.Index(section, fmt.Sprintf("hooks-%04d", n-1))
		if newest < 0 || oldest < newest || !strings.Contains(section, "auto-disabled #500") || !strings.Contains(section, "/console/tenants/globex") {
			t.Fatalf("overview's disabled subscriptions: newest at %d, oldest at %d:\n%s", newest, oldest, section)
		}
		if rows := strings.Count(section, "<tr>"); rows != n+1 { // and the header's
			t.Errorf("%d rows, want %d and the header", rows-1, n)
		}
		if strings.Contains(section, "still-live") {
			t.Error("an enabled subscription is listed as disabled")
		}
	})
}
