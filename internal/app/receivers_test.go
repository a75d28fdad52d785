package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Through the whole hub (Kafka, ingest, dispatch), on both drivers:
// receivers that hang beside healthy ones do not stall them. With two
// workers and three hung receivers, every healthy tenant still gets every
// event, once each, while the hung ones hold their attempts.
func TestEndToEnd_HungReceiversBesideHealthyOnesDoNotStallThem(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		l := startLiveWith(t, d, clock, map[string]string{"STREAMING_HUB_DISPATCH_WORKERS": "2"})
		release := make(chan struct{})
		var once sync.Once
		var mu sync.Mutex
		hungHits := 0
		for i := range 3 {
			hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hungHits++
				mu.Unlock()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(hung.Close)
			l.subscribe(fmt.Sprintf("hung%d", i), hung.URL+"/hook", testSecret, nil)
		}
		t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the servers close
		healthy := make([]*recorder, 4)
		for i := range healthy {
			healthy[i] = newRecorder(t)
			l.subscribe(fmt.Sprintf("ok%d", i), healthy[i].URL+"/hook", testSecret, nil)
		}
		for n := range 20 {
			for i := range 3 {
				l.produce(ceRecord(fmt.Sprintf("hung%d", i), fmt.Sprintf("h-%02d", n), "{}"))
			}
			for i := range healthy {
				l.produce(ceRecord(fmt.Sprintf("ok%d", i), fmt.Sprintf("e-%02d", n), "{}"))
			}
		}
		testkit.WaitFor(t, "every healthy tenant's 20 events", func() bool {
			for _, rc := range healthy {
				if rc.count() < 20 {
					return false
				}
			}
			return true
		})
		time.Sleep(100 * time.Millisecond)
		for i, rc := range healthy {
			if n := rc.count(); n != 20 {
				t.Fatalf("healthy receiver %d got %d requests, want 20 (once each)", i, n)
			}
			seen := map[string]bool{}
			for k := range 20 {
				req, _ := rc.request(k)
				id := req.Header.Get("X-Lerian-Event-Id")
				if seen[id] || id != fmt.Sprintf("e-%02d", k) {
					t.Fatalf("healthy receiver %d: delivery %d was %s (in order, once each)", i, k, id)
				}
				seen[id] = true
			}
		}
		mu.Lock()
		hits := hungHits
		mu.Unlock()
		// Ordered subscriptions: one attempt each in flight, no more.
		if hits != 3 {
			t.Fatalf("the hung receivers got %d requests, want one each", hits)
		}
	})
}
