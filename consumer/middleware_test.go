package consumer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// delivery builds one attempt of an event as the hub sends it.
type delivery struct {
	eventID, deliveryID, eventType, tenant string
	seq                                    int64
	body                                   string
	secret                                 string
	ts                                     int64
}

func (d delivery) request(t *testing.T) *http.Request {
	t.Helper()
	secret := d.secret
	if secret == "" {
		secret = testSecret
	}
	r := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(d.body))
	for k, vs := range signedHeaders(t, secret, d.eventID, d.ts, []byte(d.body)) {
		r.Header[k] = vs
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEventID, d.eventID)
	r.Header.Set(HeaderDeliveryID, d.deliveryID)
	r.Header.Set(HeaderEventType, d.eventType)
	r.Header.Set(HeaderTenantID, d.tenant)
	if d.seq != 0 {
		r.Header.Set(HeaderSequence, strconv.FormatInt(d.seq, 10))
	}
	return r
}

// recorded is one call of the wrapped handler.
type recorded struct {
	ev   Event
	ok   bool
	body string
}

// fixture is a middleware around a scripted handler.
type fixture struct {
	t       *testing.T
	clock   *fakeClock
	handler http.Handler
	mu      sync.Mutex
	calls   []recorded
	answer  atomic.Int32 // status the handler answers; 0 writes nothing
	errs    []error
	dups    []Event
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: newFakeClock()}
	f.answer.Store(http.StatusNoContent)
	if o.Secrets == nil {
		o.Secrets = []string{testSecret}
	}
	if o.Now == nil {
		o.Now = f.clock.Now
	}
	o.OnError = func(_ *http.Request, err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.errs = append(f.errs, err)
	}
	o.OnDuplicate = func(_ *http.Request, ev Event) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.dups = append(f.dups, ev)
	}
	mw, err := Middleware(o)
	if err != nil {
		t.Fatalf("Middleware: %v", err)
	}
	f.handler = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, ok := EventFrom(r.Context())
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, recorded{ev: ev, ok: ok, body: string(body)})
		f.mu.Unlock()
		if code := int(f.answer.Load()); code != 0 {
			w.WriteHeader(code)
		}
	}))
	return f
}

func (f *fixture) delivery(eventID, deliveryID string) delivery {
	return delivery{eventID: eventID, deliveryID: deliveryID, eventType: "transaction.posted",
		tenant: "acme", seq: 42, body: `{"amount":100}`, ts: f.clock.Now().Unix()}
}

func (f *fixture) send(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

func (f *fixture) ncalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func expect(t *testing.T, w *httptest.ResponseRecorder, code int, bodyHas string) {
	t.Helper()
	if w.Code != code || !strings.Contains(w.Body.String(), bodyHas) {
		t.Fatalf("answer %d %q, want %d containing %q", w.Code, w.Body.String(), code, bodyHas)
	}
}

func TestMiddlewareDeliversOnceWithMetadata(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	d := f.delivery("evt-1", "dlv-1")
	expect(t, f.send(d.request(t)), http.StatusNoContent, "")
	if n := f.ncalls(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
	got := f.calls[0]
	want := Event{ID: "evt-1", DeliveryID: "dlv-1", Type: "transaction.posted", TenantID: "acme",
		Sequence: 42, Timestamp: time.Unix(d.ts, 0)}
	if !got.ok || got.ev != want {
		t.Errorf("EventFrom = %+v, %v; want %+v", got.ev, got.ok, want)
	}
	if got.body != d.body {
		t.Errorf("handler read body %q, want %q", got.body, d.body)
	}

	// A replay: same event, new attempt, signed again later.
	f.clock.Advance(time.Minute)
	retry := f.delivery("evt-1", "dlv-2")
	expect(t, f.send(retry.request(t)), http.StatusOK, "duplicate")
	if n := f.ncalls(); n != 1 {
		t.Fatalf("handler called %d times after a duplicate, want 1", n)
	}
	if len(f.dups) != 1 || f.dups[0].DeliveryID != "dlv-2" || f.dups[0].ID != "evt-1" {
		t.Fatalf("OnDuplicate saw %+v, want the one duplicate dlv-2", f.dups)
	}

	// The same event id in another tenant is another event.
	other := f.delivery("evt-1", "dlv-3")
	other.tenant = "globex"
	expect(t, f.send(other.request(t)), http.StatusNoContent, "")
	if n := f.ncalls(); n != 2 {
		t.Fatalf("handler called %d times, want 2: another tenant's event is not a duplicate", n)
	}
}

func TestMiddlewareRejectsBadSignature(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	d := f.delivery("evt-1", "dlv-1")

	wrongSecret := d
	wrongSecret.secret = vectors[1].secret
	tampered := d.request(t)
	tampered.Body = io.NopCloser(strings.NewReader(`{"amount":1000000}`))
	missing := d.request(t)
	missing.Header.Del(HeaderWebhookSignature)
	stale := d
	stale.ts -= int64((DefaultTolerance + time.Minute).Seconds())

	for name, r := range map[string]*http.Request{
		"wrong secret": wrongSecret.request(t), "tampered body": tampered,
		"missing signature": missing, "stale timestamp": stale.request(t),
	} {
		w := f.send(r)
		expect(t, w, http.StatusUnauthorized, "consumer: ")
		if strings.Contains(w.Body.String(), strings.TrimPrefix(testSecret, SecretPrefix)) {
			t.Errorf("%s: the answer quotes the secret", name)
		}
	}
	if n := f.ncalls(); n != 0 {
		t.Fatalf("handler called %d times for bad signatures, want 0", n)
	}
	if len(f.errs) != 4 {
		t.Errorf("OnError saw %v, want 4 verification errors", f.errs)
	}
	for _, err := range f.errs {
		if !errors.Is(err, ErrNoMatchingSignature) && !errors.Is(err, ErrMissingHeader) && !errors.Is(err, ErrTimestampOutsideTolerance) {
			t.Errorf("OnError saw %v, want a verification error", err)
		}
	}
	// The failed attempts claimed nothing: the genuine one goes through.
	expect(t, f.send(d.request(t)), http.StatusNoContent, "")
}

func TestMiddlewareRejectsAlteredHeaders(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	r := f.delivery("evt-1", "dlv-1").request(t)
	r.Header.Set(HeaderEventID, "evt-2") // unsigned: an attempt to dodge dedupe
	expect(t, f.send(r), http.StatusBadRequest, "does not match webhook-id")

	r = f.delivery("evt-1", "dlv-1").request(t)
	r.Header.Set(HeaderSequence, "forty-two")
	expect(t, f.send(r), http.StatusBadRequest, "X-Lerian-Sequence")
	if n := f.ncalls(); n != 0 {
		t.Fatalf("handler called %d times, want 0", n)
	}

	// Without X-Lerian-Event-Id the signed webhook-id is the event id.
	r = f.delivery("evt-1", "dlv-1").request(t)
	r.Header.Del(HeaderEventID)
	expect(t, f.send(r), http.StatusNoContent, "")
	if f.calls[0].ev.ID != "evt-1" {
		t.Errorf("event id = %q, want the webhook-id", f.calls[0].ev.ID)
	}
}

// probeRequest is a verification probe as webhook.Probe sends it.
func probeRequest(t *testing.T, f *fixture, challenge string) *http.Request {
	t.Helper()
	body := `{"challenge":"` + challenge + `","subscription_id":"sub-1","type":"hub.verification"}`
	r := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(body))
	for k, vs := range signedHeaders(t, testSecret, "probe_0123456789ab", f.clock.Now().Unix(), []byte(body)) {
		r.Header[k] = vs
	}
	r.Header.Set(HeaderEventType, ProbeEventType)
	return r
}

func TestMiddlewareAnswersProbes(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	w := f.send(probeRequest(t, f, "c0ffee42deadbeef"))
	expect(t, w, http.StatusOK, "c0ffee42deadbeef")
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if n := f.ncalls(); n != 0 {
		t.Fatalf("handler called %d times for a probe, want 0", n)
	}

	// A probe is verified like any delivery: a wrong secret fails it.
	bad := probeRequest(t, f, "c0ffee")
	bad.Header.Set(HeaderWebhookSignature, "v1,Kv+vSBTTRaQEd8bT2Zu3DaRIU9iA7vj/2PCxW2O0pPM=")
	expect(t, f.send(bad), http.StatusUnauthorized, "signature")

	// A signed request typed as a probe without a challenge is refused.
	empty := probeRequest(t, f, "")
	expect(t, f.send(empty), http.StatusBadRequest, "challenge")
}

func TestMiddlewarePassProbes(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{}), PassProbes: true})
	expect(t, f.send(probeRequest(t, f, "c0ffee")), http.StatusNoContent, "")
	expect(t, f.send(probeRequest(t, f, "c0ffee")), http.StatusNoContent, "") // never deduped
	if n := f.ncalls(); n != 2 || !f.calls[0].ev.IsProbe() || !strings.Contains(f.calls[0].body, "c0ffee") {
		t.Fatalf("calls = %+v, want 2 probes with their body", f.calls)
	}
}

func TestMiddlewareFailedHandlerIsRetried(t *testing.T) {
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusBadRequest, http.StatusMovedPermanently} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
			f.answer.Store(int32(code))
			expect(t, f.send(f.delivery("evt-1", "dlv-1").request(t)), code, "")
			f.answer.Store(http.StatusOK)
			expect(t, f.send(f.delivery("evt-1", "dlv-2").request(t)), http.StatusOK, "")
			expect(t, f.send(f.delivery("evt-1", "dlv-3").request(t)), http.StatusOK, "duplicate")
			if n := f.ncalls(); n != 2 {
				t.Fatalf("handler called %d times, want 2 (the failure, then the retry)", n)
			}
		})
	}
}

func TestMiddlewareHandlerWritingNothingSucceeds(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	f.answer.Store(0) // net/http answers 200
	f.send(f.delivery("evt-1", "dlv-1").request(t))
	expect(t, f.send(f.delivery("evt-1", "dlv-2").request(t)), http.StatusOK, "duplicate")
	if n := f.ncalls(); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

func TestMiddlewarePanickingHandlerIsRetried(t *testing.T) {
	dedupe := NewMemoryDeduper(MemoryOptions{})
	mw, err := Middleware(Options{Secrets: []string{testSecret}, Deduper: dedupe})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			panic("handler bug")
		}
	}))
	d := delivery{eventID: "evt-1", deliveryID: "dlv-1", tenant: "acme", body: "{}", ts: time.Now().Unix()}
	func() {
		defer func() {
			if p := recover(); p != "handler bug" {
				t.Errorf("recovered %v, want the handler's panic unchanged", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), d.request(t))
	}()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, d.request(t))
	if w.Code != http.StatusOK || calls != 2 {
		t.Fatalf("retry after a panic: answer %d, handler calls %d; want 200, 2", w.Code, calls)
	}
}

func TestMiddlewareInProgressIsRetriedLater(t *testing.T) {
	clock := newFakeClock()
	mw, err := Middleware(Options{Secrets: []string{testSecret}, Now: clock.Now, Deduper: NewMemoryDeduper(MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	entered, finish := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 { // the slow attempt, which fails
			close(entered)
			<-finish
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	attempt := func(deliveryID string) *http.Request {
		return delivery{eventID: "evt-1", deliveryID: deliveryID, tenant: "acme", body: "{}", ts: clock.Now().Unix()}.request(t)
	}
	slow := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(slow, attempt("dlv-1"))
	}()
	<-entered

	// The hub timed out on the slow attempt and retried while it runs: its
	// outcome is unknown, so the retry must not be acknowledged.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, attempt("dlv-2"))
	expect(t, w, http.StatusConflict, "retry later")

	close(finish)
	<-done
	expect(t, slow, http.StatusInternalServerError, "")
	// The slow attempt failed: the next retry is processed, then deduped.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, attempt("dlv-3"))
	expect(t, w, http.StatusOK, "")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, attempt("dlv-4"))
	expect(t, w, http.StatusOK, "duplicate")
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler called %d times, want 2", n)
	}
}

func TestMiddlewareBodyLimit(t *testing.T) {
	f := newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{}), MaxBodyBytes: 64})
	d := f.delivery("evt-1", "dlv-1")
	d.body = `{"pad":"` + strings.Repeat("x", 64) + `"}`
	expect(t, f.send(d.request(t)), http.StatusRequestEntityTooLarge, "too large")

	// Without a Content-Length (chunked), the limit holds while reading.
	r := d.request(t)
	r.ContentLength = -1
	r.Body = io.NopCloser(strings.NewReader(d.body))
	expect(t, f.send(r), http.StatusRequestEntityTooLarge, "too large")
	if n := f.ncalls(); n != 0 {
		t.Fatalf("handler called %d times, want 0", n)
	}

	// The default limit is 1 MiB.
	f = newFixture(t, Options{Deduper: NewMemoryDeduper(MemoryOptions{})})
	d = f.delivery("evt-2", "dlv-1")
	d.body = strings.Repeat("x", DefaultMaxBodyBytes+1)
	expect(t, f.send(d.request(t)), http.StatusRequestEntityTooLarge, "1048576")
	d.body = strings.Repeat("x", DefaultMaxBodyBytes)
	expect(t, f.send(d.request(t)), http.StatusNoContent, "")
	if n := f.ncalls(); n != 1 || len(f.calls[0].body) != DefaultMaxBodyBytes {
		t.Fatalf("handler calls %d, want 1 with the whole 1 MiB body", n)
	}
}

// failingDeduper is a store that is down.
type failingDeduper struct{}

func (failingDeduper) Claim(context.Context, string) (Claim, error) {
	return Claim{}, errors.New("dial tcp: connection refused")
}
func (failingDeduper) Commit(context.Context, Claim) error  { return nil }
func (failingDeduper) Release(context.Context, Claim) error { return nil }

func TestMiddlewareDeduperDown(t *testing.T) {
	f := newFixture(t, Options{Deduper: failingDeduper{}})
	expect(t, f.send(f.delivery("evt-1", "dlv-1").request(t)), http.StatusServiceUnavailable, "deduper")
	if n := f.ncalls(); n != 0 {
		t.Fatalf("handler called %d times, want 0: unsure it is new, the hub retries later", n)
	}
	if len(f.errs) != 1 || !errors.Is(f.errs[0], ErrDedupe) {
		t.Errorf("OnError saw %v, want ErrDedupe", f.errs)
	}
}

func TestMiddlewareWithoutDeduper(t *testing.T) {
	f := newFixture(t, Options{})
	f.send(f.delivery("evt-1", "dlv-1").request(t))
	f.send(f.delivery("evt-1", "dlv-2").request(t))
	if n := f.ncalls(); n != 2 {
		t.Fatalf("handler called %d times, want 2 without a deduper", n)
	}
}

func TestMiddlewareRotation(t *testing.T) {
	f := newFixture(t, Options{Secrets: []string{testSecret, vectors[1].secret}})
	d := f.delivery("evt-1", "dlv-1")
	d.secret = vectors[1].secret
	expect(t, f.send(d.request(t)), http.StatusNoContent, "")
}

func TestMiddlewareConfigErrors(t *testing.T) {
	for name, secrets := range map[string][]string{
		"none": nil, "empty": {""}, "not base64": {"whsec_***"}, "second bad": {testSecret, "whsec_"},
	} {
		if _, err := Middleware(Options{Secrets: secrets}); !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("%s: err = %v, want ErrInvalidSecret", name, err)
		}
	}
}
