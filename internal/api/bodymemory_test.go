package api_test

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestHostileBodies_EveryBodyRouteAnswers4xxInBoundedMemory: bodies of
// 1 MiB of every hostile shape (api.HostileBodies), sent to every route the
// OpenAPI document gives a request body (the document is kept equal to the
// routes), answer 4xx, never 500, and raise the process's heap by at most
// 16 MiB while they are read (docs/concepts.md#tenants-keys-and-subscriptions).
// Before the check was linear, 680 KB of nested objects took 3.27 GB.
//
// The heap is the runtime's count of bytes in heap objects, sampled every
// 100 µs while the request runs, against its value after a forced
// collection before it; the collector runs at GOGC=10 meanwhile, so that
// garbage not yet collected is at most a tenth of what is live and the
// peak is what the request holds, not when the collector last ran. Sampling
// can miss a peak, never invent one: on a loaded machine the test can only
// pass more easily, and an allocation that is held for as long as the old
// walk held its paths (seconds) cannot be missed.
func TestHostileBodies_EveryBodyRouteAnswers4xxInBoundedMemory(t *testing.T) {
	testkit.Long(t)
	const limit = 16 << 20
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{allowPrivate: true}) // the store is not the point: SQLite
	acme := h.tenant("acme")
	subID, _ := acme.subscription(newReceiver(t).URL)

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	h.admin.json("GET", "/v1/openapi.json", "", 200, &doc)
	type route struct{ method, path string }
	var routes []route
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				RequestBody json.RawMessage `json:"requestBody"`
			}
			if method != "parameters" && json.Unmarshal(raw, &op) == nil && op.RequestBody != nil {
				routes = append(routes, route{strings.ToUpper(method), path})
			}
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].path+routes[i].method < routes[j].path+routes[j].method })
	if len(routes) < 12 {
		t.Fatalf("only %d routes with a request body in the document: %v", len(routes), routes)
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	bodies := api.HostileBodies(1 << 20)
	worst := map[string]uint64{}
	for _, r := range routes {
		who, path := acme, r.path
		if strings.HasPrefix(path, "/v1/tenants") {
			who, path = h.admin, strings.ReplaceAll(path, "{id}", "acme")
		}
		path = strings.ReplaceAll(path, "/subscriptions/{id}", "/subscriptions/"+subID)
		path = strings.ReplaceAll(path, "{id}", "dlv_0000000000000000000000")
		for _, b := range bodies {
			body := string(b.Body) // before the measure: the client's copy is not the server's
			var status int
			var answer []byte
			rise := heapRise(func() {
				status, _, answer = who.do(r.method, path, body)
			})
			worst[b.Name] = max(worst[b.Name], rise)
			if status < 400 || status >= 500 {
				t.Errorf("%s %s, %s: %d %.200s, want 4xx", r.method, r.path, b.Name, status, answer)
			}
			if rise > limit {
				t.Errorf("%s %s, %s: the heap rose by %d bytes, want at most %d", r.method, r.path, b.Name, rise, limit)
			}
		}
	}
	for _, b := range bodies {
		t.Logf("%-55s worst rise %6.2f MiB", b.Name, float64(worst[b.Name])/(1<<20))
	}
	if strings.Contains(h.logs.String(), `"level":"ERROR"`) {
		t.Errorf("a hostile body was logged at ERROR:\n%.2000s", h.logs.String())
	}
}

// heapRise runs fn and answers by how much the bytes in heap objects rose
// above their value after a collection, at the highest sample while fn ran.
func heapRise(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// TestStrictJSON_NestingDeeperThan64LevelsIs400: a body nested 65 levels
// deep is 400 invalid_request naming the limit and where it was met; one
// of 64 levels is not refused for its depth (the fields answer it).
func TestStrictJSON_NestingDeeperThan64LevelsIs400(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{})
	acme := h.tenant("acme")
	nest := func(levels int) string {
		return `{"filters":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + "}"
	}
	status, _, body := acme.do("POST", "/v1/subscriptions", nest(65))
	wantRefused(t, "65 levels", status, body, "body: nesting deeper than 64 levels at filters"+strings.Repeat("[0]", 51)+"…")
	status, _, body = acme.do("POST", "/v1/subscriptions", nest(64))
	wantError(t, status, body, 400, "invalid")
	if msg := errorMessage(t, body); strings.Contains(msg, "nesting") {
		t.Fatalf("64 levels refused for their depth: %s", msg)
	}
}
