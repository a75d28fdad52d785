package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// run pulls until n events were handled, and returns them and the last
// saved cursor.
func run(t *testing.T, p *Puller, cursor string, n int) (ids []string, saved string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience) // a safety net, not a speed
	defer cancel()
	var mu sync.Mutex
	err := p.Run(ctx, cursor,
		func(ev Event) error {
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, ev.ID)
			return nil
		},
		func(c string) error {
			mu.Lock()
			defer mu.Unlock()
			saved = c
			if len(ids) >= n {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v after %v, want it canceled after %d events", err, ids, n)
	}
	return ids, saved
}

// The guide's pull loop against a real dev hub: it reads the tenant's
// events in order, resumes from the saved cursor without a repeat, and waits
// out the rate limit (a page of one event each, 2 requests a second).
func TestPuller_ReadsInOrderResumesAndWaitsOutTheRateLimit(t *testing.T) {
	testkit.Long(t)
	h := devhub.Start(t, devhub.Options{Env: map[string]string{
		"STREAMING_HUB_PULL_RATE": "2", "STREAMING_HUB_PULL_BURST": "2",
	}})
	var key struct{ Key string }
	if st := h.Do("POST", "/v1/tenants/default/keys", "", "", &key); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	prod := testkit.Producer(t, h.Broker)
	produce := func(tenant string, ids ...string) {
		for _, id := range ids {
			testkit.Produce(t, prod, testkit.CERecord(app.DevTopic, 0, tenant, id))
		}
	}
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("evt-%d", i))
	}
	produce("default", want...)
	// Another tenant's events are not this tenant's to read.
	h.Do("POST", "/v1/tenants", "", `{"id":"globex","name":"Globex"}`, nil)
	produce("globex", "globex-0")

	p := &Puller{Hub: h.URL(), Token: key.Key, Limit: 1}
	start := time.Now()
	got, cursor := run(t, p, "", 5)
	if !slices.Equal(got, want) {
		t.Fatalf("pulled %v, want %v", got, want)
	}
	// 5 pages at 2 a second after a burst of 2: the 429s were waited out.
	if took := time.Since(start); took < time.Second {
		t.Fatalf("5 pages took %v: the rate limit did not hold", took)
	}

	produce("default", "evt-5", "evt-6")
	got, _ = run(t, p, cursor, 2)
	if !slices.Equal(got, []string{"evt-5", "evt-6"}) {
		t.Fatalf("resumed with %v, want [evt-5 evt-6]", got)
	}
}
