package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// lookCounter counts the server's looks for events, one per pass of a long
// poll, as each look returns: a look counted has seen what it will see.
type lookCounter struct {
	store.Store
	looks atomic.Int64
}

func (c *lookCounter) ListEvents(ctx context.Context, p store.ListEventsParams) ([]hub.Event, error) {
	defer c.looks.Add(1)
	return c.Store.ListEvents(ctx, p)
}

// A long poll is answered by the in-process wake-up, not by its periodic
// re-check: with the re-check an hour away, a poll that a notification did
// not reach would look again only at its own deadline (30 s), and answer
// then with nothing. The proof counts looks, never time: woken with nothing
// new, the poll looks again and keeps waiting; woken with its event, it
// answers with it.
func TestPull_LongPollIsAnsweredByTheWakeUpNotTheRecheck(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		waiters := api.NewWaiters()
		var counter *lookCounter
		h := newHubAPI(t, d, apiOptions{waiters: waiters, pullRecheck: time.Hour, wrap: func(s store.Store) store.Store {
			counter = &lookCounter{Store: s}
			return counter
		}})
		acme := h.tenant("acme")

		type answer struct {
			status int
			page   pulledPage
			err    error
		}
		answered := make(chan answer, 1)
		go func() {
			var a answer
			defer func() { answered <- a }()
			req, _ := http.NewRequest("GET", acme.base+"/v1/events?wait=30s", nil)
			req.Header.Set("Authorization", "Bearer "+acme.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			a.status, a.err = resp.StatusCode, json.Unmarshal(b, &a.page)
		}()

		testkit.WaitFor(t, "the poll's first look", func() bool { return counter.looks.Load() == 1 })
		waiters.Notify([]string{"acme"}) // nothing new: the poll looks again and waits on
		testkit.WaitFor(t, "the woken poll's second look", func() bool { return counter.looks.Load() == 2 })
		select {
		case a := <-answered:
			t.Fatalf("woken with nothing stored, the poll answered: %+v", a)
		default:
		}

		ingestEvents(t, h.store, storetest.NewEvent("acme", "acme-1"))
		waiters.Notify([]string{"acme"})
		var a answer
		select {
		case a = <-answered:
		case <-time.After(testkit.Patience):
			t.Fatal("the woken poll never answered")
		}
		if a.err != nil || a.status != 200 || len(a.page.Data) != 1 || a.page.Data[0].ID != "acme-1" {
			t.Fatalf("the poll answered %d %+v (%v), want acme-1: a poll the wake-up did not reach answers empty at its deadline", a.status, a.page, a.err)
		}
		if n := counter.looks.Load(); n != 3 {
			t.Fatalf("%d looks, want 3: one, one per wake-up", n)
		}
	})
}
