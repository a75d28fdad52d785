package app_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// STREAMING_HUB_PRE_STOP_DRAIN_TIMEOUT: on a stop, /readyz answers 503 at
// once; for the drain the process still serves its API and still ingests
// and delivers; only then does the usual graceful stop begin. The test
// records the order of those steps.
func TestStop_DrainsBeforeTheStop(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())
		rc := newRecorder(t)
		l.subscribe("acme", rc.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", nil)
		delivered := func() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.got) }
		l.produce(ceRecord("acme", "evt-1", ""))
		testkit.WaitFor(t, "the first delivery", func() bool { return delivered() == 1 })

		var mu sync.Mutex
		var steps []string
		step := func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }

		const drain = 8 * time.Second
		begun := time.Now()
		stopped := make(chan error, 1)
		go func() {
			err := l.Stop(drain, 20*time.Second)
			step("stopped")
			stopped <- err
		}()
		readyz := func() (int, map[string]any) {
			resp, err := http.Get(l.URL() + "/readyz")
			if err != nil {
				return 0, nil
			}
			defer resp.Body.Close()
			var body map[string]any
			json.NewDecoder(resp.Body).Decode(&body)
			return resp.StatusCode, body
		}
		testkit.WaitFor(t, "/readyz to answer 503", func() bool { st, _ := readyz(); return st == 503 })
		step("readyz 503")
		if _, body := readyz(); body["checks"].(map[string]any)["shutdown"] != "draining: the process is stopping" {
			t.Errorf("/readyz during the drain: %v", body)
		}
		// Still ingesting and delivering ...
		l.produce(ceRecord("acme", "evt-2", ""))
		testkit.WaitFor(t, "a delivery during the drain", func() bool { return delivered() == 2 })
		step("delivered")
		// ... and serving the API.
		if st := l.api("GET", "/v1/subscriptions", "acme", "", nil); st != 200 {
			t.Errorf("the API during the drain answered %d", st)
		}
		step("api 200")

		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(begun); took < drain {
			t.Errorf("the stop began after %s, before the drain's %s", took, drain)
		}
		mu.Lock()
		got := steps
		mu.Unlock()
		want := []string{"readyz 503", "delivered", "api 200", "stopped"}
		if len(got) != len(want) {
			t.Fatalf("steps %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("steps %q, want %q", got, want)
			}
		}
		if st, _ := readyz(); st != 0 {
			t.Errorf("after the stop /readyz still answers %d", st)
		}
	})
}
