package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The report's reproduction: one tenant loops transform-preview of a
// program that hits its limit from 16 callers (and names the other tenant
// in the event, which changes nothing: the caller's tenant waits), and
// the other tenant's previews stay within 100 ms of their own p99
// measured just before (docs/filters-and-transforms.md#fair-workers).
func TestTransform_AHostileTenantsPreviewsLeaveAnotherTenantsOnTime(t *testing.T) {
	testkit.Long(t)
	const samples = 200
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{allowPrivate: true, pull: &config.Pull{Rate: 1e6, Burst: 1e6}})
	evil, acme := h.tenant("evil"), h.tenant("acme")
	newSub := func(c client) string {
		var sub struct{ ID string }
		c.json("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"https://hooks.example.com/x"}}`, 201, &sub)
		return "/v1/subscriptions/" + sub.ID + "/transform-preview"
	}
	evilPreview, acmePreview := newSub(evil), newSub(acme)

	measure := func(phase string) []time.Duration {
		var out []time.Duration
		stop := time.Now().Add(time.Minute)
		for i := 0; i < samples && time.Now().Before(stop); i++ {
			start := time.Now()
			status, _, b := acme.do("POST", acmePreview, `{"id":"ev_1","data":{"amount":"10.00"},"transform":"{amount: .data.amount}"}`)
			if status == http.StatusUnprocessableEntity && strings.Contains(string(b), "transform_limit") && !strings.Contains(string(b), "no transform worker free") {
				// A worker a loaded machine starved, or that died: once
				// more, counted whole.
				t.Logf("%s: acme's preview %d: %s; tried again", phase, i, b)
				status, _, b = acme.do("POST", acmePreview, `{"id":"ev_1","data":{"amount":"10.00"},"transform":"{amount: .data.amount}"}`)
			}
			d := time.Since(start)
			if status != http.StatusOK || !strings.Contains(string(b), `10.00`) {
				t.Fatalf("%s: acme's preview %d: %d %s after %s", phase, i, status, b, d)
			}
			out = append(out, d)
			time.Sleep(10 * time.Millisecond)
		}
		return out
	}
	measure("warm-up")
	base := measure("baseline")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var limits atomic.Int64
	body := `{"id":"ev_1","tenant_id":"acme","data":{},"transform":"\"a\" * 20000000 | test(\"(a|a)*b\")"}`
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", h.url+evilPreview, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+evil.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				var b [512]byte
				n, _ := resp.Body.Read(b[:])
				resp.Body.Close()
				if resp.StatusCode == http.StatusUnprocessableEntity && strings.Contains(string(b[:n]), "transform_limit") {
					limits.Add(1)
				}
			}
		})
	}
	testkit.Eventually(t, 30*time.Second, "one of evil's previews to hit its limit", func() bool { return limits.Load() > 0 })
	under := measure("under attack")
	cancel()
	wg.Wait()

	q := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, len(s)*99/100)]
	}
	pb, pu := q(base), q(under)
	t.Logf("acme's preview p99 %s alone, %s beside evil (%d samples; evil hit %d limits)", pb, pu, len(under), limits.Load())
	if len(under) < samples || pu-pb >= 100*time.Millisecond {
		t.Fatalf("beside evil's previews acme's p99 went from %s to %s (%d of %d previews in a minute)", pb, pu, len(under), samples)
	}
}
