package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// sink is a real HTTP destination whose answers a test scripts.
type sink struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	answer   func(n int, r *http.Request) (status int, header http.Header, body string)
}

type received struct {
	header http.Header
	body   []byte
}

func newSink(t testing.TB) *sink {
	s := &sink{answer: func(int, *http.Request) (int, http.Header, string) { return 200, nil, "ok" }}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, received{r.Header.Clone(), body})
		n, answer := len(s.requests), s.answer
		s.mu.Unlock()
		status, header, text := answer(n, r)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, text)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) got() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.requests...)
}

func (s *sink) script(fn func(n int, r *http.Request) (int, http.Header, string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = fn
}

// rig is one store with a tenant, a verified subscription to a sink, and a
// dispatcher on a fake clock with seeded jitter.
type rig struct {
	t       testing.TB
	ctx     context.Context
	store   store.Store
	clock   *testkit.Clock
	keyring *envelope.Keyring
	sink    *sink
	sub     hub.Subscription
	secret  string
	d       *dispatch.Dispatcher
	metrics *metrics.Metrics
	// live: the dispatcher runs, so events are published through its
	// writer, as ingest does (jobs may be born leased to it).
	live atomic.Bool
}

type rigOptions struct {
	retrySchedule []string
	maxInFlight   int
	secret        string
	cfg           func(*dispatch.Config)
}

func newRig(t testing.TB, d testkit.Driver, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, ctx: context.Background(), clock: testkit.NewClock(), sink: newSink(t), metrics: metrics.New()}
	r.store = d.Open(t, store.Options{Now: r.clock.Now})
	var err error
	if r.keyring, err = envelope.NewKeyring(bytes.Repeat([]byte{9}, 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	r.secret = o.secret
	if r.secret == "" {
		r.secret = destination.NewSecret()
	}
	r.sub = r.subscribe("acme", "sub_1", r.sink.URL, o)
	cfg := dispatch.Config{
		Dispatch: config.Defaults(config.Serve).Dispatch,
		Store:    r.store, Keyring: r.keyring, Metrics: r.metrics, Now: r.clock.Now,
		// No test here times a destination out: the timeout is a safety
		// net, so a loaded machine's slow answer never reads as a failure.
		Destinations: destinations(t, testkit.Patience, nil),
		Rand:         mrand.New(mrand.NewPCG(1, 2)),
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if r.d, err = dispatch.New(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

// subscribe stores a verified subscription of tenant to transaction.posted
// v1 with r's signing secret and a bearer credential.
func (r *rig) subscribe(tenant, id, url string, o rigOptions) hub.Subscription {
	r.t.Helper()
	s := storetest.NewSubscription(tenant, id)
	s.Destination = hub.Destination{Type: "webhook", URL: url, Headers: map[string]string{"X-Custom": "v"}, AuthType: hub.AuthBearer}
	s.VerificationState, s.RetrySchedule, s.MaxInFlight = hub.VerificationActive, o.retrySchedule, max(o.maxInFlight, 1)
	if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{
		Signing: []hub.SigningSecret{{Secret: r.secret}}, Auth: hub.Credentials{Token: "sink-token"},
	}); err != nil {
		r.t.Fatal(err)
	}
	out, err := r.store.CreateSubscription(r.ctx, s)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// publish stores events as ingest would (matching included): through the
// dispatcher's writer while it runs.
func (r *rig) publish(evs ...hub.Event) {
	r.t.Helper()
	ingest := r.store.Ingest
	if r.live.Load() {
		ingest = r.d.Writer().Ingest
	}
	res, err := ingest(r.ctx, store.IngestParams{Events: evs})
	if err != nil {
		r.t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		if o.Verdict != hub.Accept {
			r.t.Fatalf("event %d not accepted: %+v", i, o)
		}
	}
}

func (r *rig) step() int {
	r.t.Helper()
	n, err := r.d.Step(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *rig) onlyJob() (hub.Job, []hub.Attempt) {
	r.t.Helper()
	jobs, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 10})
	if err != nil || len(jobs) != 1 {
		r.t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	j, as, err := r.store.GetJob(r.ctx, "acme", jobs[0].ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return j, as
}

func event(tenant, id string) hub.Event { return storetest.NewEvent(tenant, id) }

func fmtDurations(ds []time.Duration) string { return fmt.Sprint(ds) }

func listParams(r *rig) store.ListJobsParams {
	return store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 10}
}

// d2destinations is another send path (private sinks allowed) for extra
// dispatchers.
func (r *rig) d2destinations() *destination.Registry {
	return destinations(r.t, testkit.Patience, nil)
}

// destinations is the send path of the tests: the webhook driver with
// private sinks allowed (the sinks are on loopback) and extra's drivers,
// each attempt bounded by timeout.
func destinations(t testing.TB, timeout time.Duration, extra map[string]destination.Driver) *destination.Registry {
	t.Helper()
	drivers := map[string]destination.Driver{
		hub.DestinationWebhook: webhook.New(destination.NewDialer(destination.DialOptions{AllowPrivate: true})),
	}
	for typ, d := range extra {
		drivers[typ] = d
	}
	return destination.NewRegistry(timeout, drivers)
}
