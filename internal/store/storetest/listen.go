package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// testListen: ListenJobs tells of the jobs ingest creates, naming their
// subscriptions, once the transaction committed; an ingest that creates
// no job tells nothing. (Other processes' jobs, through PostgreSQL's
// LISTEN/NOTIFY, are the postgres driver's own tests.)
func testListen(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "acme", "")
	e.tenant(t, "quiet", "")
	sub := e.subscribe(t, "acme", "sub_1", 1)
	heard := make(chan []string, 10)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.store.ListenJobs(ctx, store.ListenParams{OnJobs: func(subs []string) { heard <- subs }})
	}()
	// The in-process listener is registered as ListenJobs starts: ingest
	// until one is heard.
	deadline := time.After(testkit.Patience)
	for i := 0; ; i++ {
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", fmt.Sprintf("e-%d", i))}})
		if res.Jobs != 1 || !slices.Equal(res.Subscriptions, []string{sub.ID}) {
			t.Fatalf("ingest result %+v, want one job of %s", res, sub.ID)
		}
		select {
		case subs := <-heard:
			if subs != nil && !slices.Equal(subs, []string{sub.ID}) {
				t.Fatalf("heard %v, want [%s]", subs, sub.ID)
			}
			if subs == nil {
				continue // a catch-up: any subscription may have jobs
			}
		case <-time.After(50 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("no ingest was heard")
		}
		break
	}
	for len(heard) > 0 {
		<-heard
	}
	if res := e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("quiet", "no-subscription")}}); res.Jobs != 0 {
		t.Fatalf("ingest result %+v", res)
	}
	e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", "after")}})
	for {
		select {
		case subs := <-heard:
			if subs == nil {
				// A catch-up: PostgreSQL's listening connection came up (on a
				// loaded machine, after the drain above) and says any
				// subscription may have jobs. The ingest is still to be heard.
				continue
			}
			if !slices.Equal(subs, []string{sub.ID}) {
				t.Fatalf("heard %v after an ingest without jobs and one with, want [%s]", subs, sub.ID)
			}
		case <-time.After(testkit.Patience):
			t.Fatal("the ingest was not heard")
		}
		break
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("ListenJobs did not return when its context ended")
	}
}
