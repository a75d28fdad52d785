package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// liveHub is a whole dev-mode hub (embedded Kafka, ingest, dispatch, API)
// on a fake clock, with its database on the given driver.
type liveHub struct {
	*devhub.Hub
	t     *testing.T
	clock *testkit.Clock
	prod  *kgo.Client
}

func startLive(t *testing.T, d testkit.Driver, clock *testkit.Clock) *liveHub {
	t.Helper()
	return startLiveWith(t, d, clock, nil)
}

// startLiveWith is startLive with more variables set.
func startLiveWith(t *testing.T, d testkit.Driver, clock *testkit.Clock, more map[string]string) *liveHub {
	t.Helper()
	env := map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20"}
	for k, v := range more {
		env[k] = v
	}
	if d.Name == "postgres" {
		env["STREAMING_HUB_DATABASE_URL"] = testkit.PostgresPoolURL(t)
	}
	h := devhub.Start(t, devhub.Options{Env: env, Now: clock.Now})
	prod, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	l := &liveHub{Hub: h, t: t, clock: clock, prod: prod}
	t.Cleanup(l.dumpJobsOnFailure)
	return l
}

// dumpJobsOnFailure logs tenant acme's jobs when the test failed, so a
// wait that timed out shows where delivery stood.
func (l *liveHub) dumpJobsOnFailure() {
	if !l.t.Failed() {
		return
	}
	ctx := context.Background()
	subs, err := l.Store.ListSubscriptions(ctx, store.ListSubscriptionsParams{TenantID: "acme", Limit: 100})
	l.t.Logf("acme's jobs at %s (fake clock), err=%v:", l.clock.Now().Format(time.RFC3339), err)
	for _, s := range subs {
		jobs, err := l.Store.ListJobs(ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: s.ID, Limit: 100})
		l.t.Logf(" subscription %s enabled=%v err=%v", s.ID, s.Enabled, err)
		for _, j := range jobs {
			l.t.Logf("  %s event=%s status=%s attempts=%d recoveries=%d next=%s reason=%q last_error=%q",
				j.ID, j.EventID, j.Status, j.Attempts, j.Recoveries, j.NextAttemptAt.Format(time.RFC3339), j.DeadLetterReason, j.LastError)
		}
	}
}

// written waits until the result of the job of tenant acme's event id for
// subscription subID is stored after its attempt number n: the job is out
// of flight with n attempts. Moving the fake clock on before that could let
// the lease of the attempt still being answered expire, and its recovery
// send the event once more: the receiver would see an attempt the test did
// not ask for.
func (l *liveHub) written(subID, id string, n int) {
	l.t.Helper()
	testkit.WaitFor(l.t, fmt.Sprintf("the result of attempt %d of %s", n, id), func() bool {
		jobs, err := l.Store.ListJobs(context.Background(), store.ListJobsParams{TenantID: "acme", SubscriptionID: subID, Limit: 100})
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if j.EventID == id {
				return j.Status != hub.JobInFlight && j.Attempts >= n
			}
		}
		return false
	})
}

// failAt sets the clock to at, produces tenant acme's event id and waits
// until the hub has dealt with it for subscription subID: attempted (and
// failed), or shed by the breaker; and until no job of subID is in flight,
// so that every attempt the clock made due finished at this time, not at
// the next one the test sets.
func (l *liveHub) failAt(at time.Time, subID, id string) {
	l.t.Helper()
	l.clock.Set(at)
	l.produce(ceRecord("acme", id, ""))
	testkit.WaitFor(l.t, "the hub to handle "+id, func() bool {
		jobs, err := l.Store.ListJobs(context.Background(), store.ListJobsParams{TenantID: "acme", SubscriptionID: subID, Limit: 100})
		handled := false
		for _, j := range jobs {
			if j.Status == hub.JobInFlight {
				return false
			}
			if j.EventID == id && (j.Attempts > 0 || j.Status != hub.JobPending || j.NextAttemptAt.After(l.clock.Now())) {
				handled = true
			}
		}
		return err == nil && handled
	})
}

// subscribe stores a verified subscription of tenant to transaction.posted
// v1 at url, signing with secret.
func (l *liveHub) subscribe(tenant, url, secret string, schedule []string) hub.Subscription {
	l.t.Helper()
	ctx := context.Background()
	if _, err := l.Store.GetTenant(ctx, tenant); err != nil {
		if _, err := l.Store.CreateTenant(ctx, store.CreateTenantParams{ID: tenant, Name: tenant}); err != nil {
			l.t.Fatal(err)
		}
	}
	s := hub.Subscription{
		ID: hub.NewID("sub", l.clock.Now()), TenantID: tenant, Name: "e2e",
		EventTypes:    []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
		Destination:   hub.Destination{Type: "webhook", URL: url, Headers: map[string]string{"X-Custom": "v"}, AuthType: hub.AuthBearer},
		RetrySchedule: schedule, MaxInFlight: 1, Enabled: true, VerificationState: hub.VerificationActive,
	}
	if err := destination.SealSecrets(l.Keyring, &s, hub.SubscriptionSecrets{
		Signing: []hub.SigningSecret{{Secret: secret}}, Auth: hub.Credentials{Token: "sink-token"},
	}); err != nil {
		l.t.Fatal(err)
	}
	out, err := l.Store.CreateSubscription(ctx, s)
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

func (l *liveHub) produce(recs ...*kgo.Record) {
	l.t.Helper()
	testkit.Produce(l.t, l.prod, recs...)
}

// api calls the hub's API as the admin acting on tenant.
func (l *liveHub) api(method, path, tenant, body string, out any) int {
	l.t.Helper()
	return l.Do(method, path, tenant, body, out)
}

// recorder is a real HTTP destination that records requests and answers
// as scripted.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	status func(n int) int
	delay  time.Duration // how long it takes to answer, after recording the request
}

func newRecorder(t *testing.T) *recorder {
	rc := &recorder{status: func(int) int { return 200 }}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, r)
		rc.bodies = append(rc.bodies, b)
		status, delay := rc.status(len(rc.got)), rc.delay
		rc.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(status)
		w.Write(b) // an echo: verification probes find their challenge
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func (rc *recorder) request(i int) (*http.Request, []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[i], rc.bodies[i]
}

// setDelay makes the receiver answer d after it recorded a request: a test
// that sees the request counted then knows the attempt is still in flight.
func (rc *recorder) setDelay(d time.Duration) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.delay = d
}

func (rc *recorder) setStatus(fn func(n int) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status = fn
}

func ceRecord(tenant, id, value string) *kgo.Record {
	return testkit.CERecord(app.DevTopic, 0, tenant, id, kgo.RecordHeader{Key: "ce-subject", Value: []byte("tx/" + id)})
}

// The published Standard Webhooks vector, end to end: an event produced to
// Kafka arrives at a real HTTP sink with every header docs/delivery.md
// names, its body byte
// for byte, and exactly the vector's signature.
func TestEndToEnd_ProducedEventArrivesSignedWithEveryHeader(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		clock.Set(time.Unix(1614265330, 0))
		l := startLive(t, d, clock)
		sink := newRecorder(t)
		sub := l.subscribe("acme", sink.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", nil)

		body := `{"test": 2432232314}`
		rec := &kgo.Record{Topic: app.DevTopic, Key: []byte("acme"), Value: []byte(body), Headers: []kgo.RecordHeader{
			{Key: "ce-specversion", Value: []byte("1.0")},
			{Key: "ce-id", Value: []byte("msg_p5jXN8AQM9LWM0D4loKWxJek")},
			{Key: "ce-source", Value: []byte("//midaz/ledger")},
			{Key: "ce-type", Value: []byte("studio.lerian.transaction.posted")},
			{Key: "ce-time", Value: []byte("2021-02-26T02:22:10.123456789Z")},
			{Key: "ce-subject", Value: []byte("transaction/42")},
			{Key: "ce-tenantid", Value: []byte("acme")},
			{Key: "ce-schemaversion", Value: []byte("1.4.0")},
			{Key: "ce-resourcetype", Value: []byte("transaction")},
			{Key: "content-type", Value: []byte("application/json")},
		}}
		l.produce(rec)
		testkit.WaitFor(t, "the delivery", func() bool { return sink.count() == 1 })
		req, got := sink.request(0)

		var page struct {
			Data []struct{ ID string }
		}
		l.api("GET", "/v1/subscriptions/"+sub.ID+"/deliveries", "acme", "", &page)
		var delivery struct {
			Status     string
			AttemptLog []struct{ ID string } `json:"attempt_log"`
		}
		testkit.WaitFor(t, "the result recorded", func() bool {
			l.api("GET", "/v1/deliveries/"+page.Data[0].ID, "acme", "", &delivery)
			return delivery.Status == "succeeded"
		})
		want := map[string]string{
			"Content-Type":         "application/json",
			"X-Lerian-Event-Id":    "msg_p5jXN8AQM9LWM0D4loKWxJek",
			"X-Lerian-Delivery-Id": delivery.AttemptLog[0].ID,
			"X-Lerian-Event-Type":  "transaction.posted",
			"X-Lerian-Tenant-Id":   "acme",
			"X-Lerian-Sequence":    "1",
			"ce-id":                "msg_p5jXN8AQM9LWM0D4loKWxJek",
			"ce-type":              "studio.lerian.transaction.posted",
			"ce-source":            "//midaz/ledger",
			"ce-specversion":       "1.0",
			"ce-time":              "2021-02-26T02:22:10.123456789Z",
			"ce-subject":           "transaction/42",
			"ce-tenantid":          "acme",
			"ce-schemaversion":     "1.4.0",
			"ce-resourcetype":      "transaction",
			"webhook-id":           "msg_p5jXN8AQM9LWM0D4loKWxJek",
			"webhook-timestamp":    "1614265330",
			"webhook-signature":    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
			"User-Agent":           "streaming-hub/" + hub.Version,
			"Authorization":        "Bearer sink-token",
			"X-Custom":             "v",
		}
		for k, v := range want {
			if got := req.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		if string(got) != body {
			t.Errorf("body = %q, want %q byte for byte", got, body)
		}
		if req.Method != "POST" || strings.HasPrefix(req.Header.Get("X-Lerian-Delivery-Id"), "att_") == false {
			t.Errorf("method %s, delivery id %q", req.Method, req.Header.Get("X-Lerian-Delivery-Id"))
		}
	})
}

// One partition, two tenants interleaved, a healthy sink: each tenant's
// events arrive once each, in the order produced, with rising sequences.
func TestEndToEnd_PerTenantOrderOnOnePartition(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())
		sink := newRecorder(t)
		secret := destination.NewSecret()
		l.subscribe("acme", sink.URL, secret, nil)
		l.subscribe("globex", sink.URL, secret, nil)
		var recs []*kgo.Record
		for i := range 60 {
			for _, tenant := range []string{"acme", "globex"} {
				recs = append(recs, ceRecord(tenant, fmt.Sprintf("%s-%03d", tenant, i), ""))
			}
		}
		l.produce(recs...)
		testkit.WaitFor(t, "120 deliveries", func() bool { return sink.count() >= 120 })
		next := map[string]int{}
		for i := range sink.count() {
			req, _ := sink.request(i)
			tenant := req.Header.Get("X-Lerian-Tenant-Id")
			n := next[tenant]
			if id, seq := req.Header.Get("X-Lerian-Event-Id"), req.Header.Get("X-Lerian-Sequence"); id != fmt.Sprintf("%s-%03d", tenant, n) || seq != fmt.Sprint(n+1) {
				t.Fatalf("delivery %d: %s got %s (sequence %s), want %s-%03d (sequence %d)", i, tenant, id, seq, tenant, n, n+1)
			}
			next[tenant] = n + 1
		}
		if sink.count() != 120 {
			t.Fatalf("%d deliveries, want 120", sink.count())
		}
	})
}

// A receiver that fails twice gets the event on the third attempt, with
// three distinct delivery ids; one that always fails ends dead-lettered,
// and a replay sends the event again.
func TestEndToEnd_RetriesDeadLetterAndReplay(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		sink := newRecorder(t)
		sub := l.subscribe("acme", sink.URL, destination.NewSecret(), []string{"1m", "1m"})
		sink.setStatus(func(n int) int {
			if n <= 2 {
				return 500
			}
			return 200
		})
		// The receiver answers a little after it counts a request, as
		// everything does on a loaded machine: the test must not move the
		// clock on past an attempt still in flight (its lease would expire
		// and the event go out once more than the receiver asked for).
		sink.setDelay(300 * time.Millisecond)
		l.produce(ceRecord("acme", "evt-1", ""))
		for want := 1; want <= 3; want++ {
			testkit.WaitFor(t, fmt.Sprintf("attempt %d", want), func() bool { return sink.count() >= want })
			l.written(sub.ID, "evt-1", want)
			if want < 3 {
				clock.Advance(time.Minute) // the retry comes due (jitter <= 1m)
			}
		}
		var page struct {
			Data []struct {
				ID, Status string
				Attempts   int
			}
		}
		testkit.WaitFor(t, "success recorded", func() bool {
			l.api("GET", "/v1/subscriptions/"+sub.ID+"/deliveries", "acme", "", &page)
			return len(page.Data) == 1 && page.Data[0].Status == "succeeded"
		})
		// What the receiver saw: three requests, each with its own delivery id.
		ids := map[string]bool{}
		for i := range sink.count() {
			req, _ := sink.request(i)
			ids[req.Header.Get("X-Lerian-Delivery-Id")] = true
		}
		if sink.count() != 3 || len(ids) != 3 || page.Data[0].Attempts != 3 {
			t.Fatalf("the receiver got %d requests with %d distinct delivery ids, the hub counts %d attempts; want 3, 3 and 3",
				sink.count(), len(ids), page.Data[0].Attempts)
		}

		// Always failing: 1 + 2 attempts, then the dead letter.
		sink.setStatus(func(int) int { return 503 })
		l.produce(ceRecord("acme", "evt-2", ""))
		for want := 4; want <= 6; want++ {
			testkit.WaitFor(t, fmt.Sprintf("request %d", want), func() bool { return sink.count() >= want })
			l.written(sub.ID, "evt-2", want-3)
			if want < 6 {
				clock.Advance(time.Minute)
			}
		}
		testkit.WaitFor(t, "the dead letter", func() bool {
			l.api("GET", "/v1/subscriptions/"+sub.ID+"/deliveries?status=dead_lettered", "acme", "", &page)
			return len(page.Data) == 1
		})
		var dead struct {
			ID               string
			DeadLetterReason string `json:"dead_letter_reason"`
			LastError        string `json:"last_error"`
		}
		l.api("GET", "/v1/deliveries/"+page.Data[0].ID, "acme", "", &dead)
		if dead.DeadLetterReason != "exhausted" || dead.LastError != "destination answered 503" {
			t.Fatalf("dead letter = %+v", dead)
		}

		sink.setStatus(func(int) int { return 200 })
		var replayed struct{ ID, Status string }
		if status := l.api("POST", "/v1/deliveries/"+dead.ID+"/replay", "acme", "", &replayed); status != 202 || replayed.Status != "pending" || replayed.ID == dead.ID {
			t.Fatalf("replay = %d %+v", status, replayed)
		}
		testkit.WaitFor(t, "the replayed delivery", func() bool { return sink.count() == 7 })
		req, _ := sink.request(6)
		if req.Header.Get("X-Lerian-Event-Id") != "evt-2" {
			t.Fatalf("replay sent %s", req.Header.Get("X-Lerian-Event-Id"))
		}
		var bulk struct{ Replayed int }
		if status := l.api("POST", "/v1/subscriptions/"+sub.ID+"/replay", "acme", `{"status":"dead_lettered"}`, &bulk); status != 202 || bulk.Replayed != 0 {
			t.Fatalf("bulk replay after the single one = %d %+v: it must not send evt-2 again", status, bulk)
		}

		// What happened is in the metrics: 5 failed and 2 successful
		// attempts, two jobs succeeded, one dead-lettered as exhausted.
		testkit.WaitFor(t, "the metrics", func() bool {
			m := get(t, l.Hub.Hub, "/metrics")
			for _, line := range []string{
				`streaming_hub_delivery_attempts_total{outcome="failure"} 5`,
				`streaming_hub_delivery_attempts_total{outcome="success"} 2`,
				`streaming_hub_delivery_end_to_end_seconds_count 2`,
				`streaming_hub_jobs_completed_total{reason="",status="succeeded"} 2`,
				`streaming_hub_jobs_completed_total{reason="exhausted",status="dead_lettered"} 1`,
				`streaming_hub_delivery_attempt_duration_seconds_count{outcome="failure"} 5`,
			} {
				if !strings.Contains(m, line) {
					return false
				}
			}
			return true
		})
	})
}

// A destination down for five days is auto-disabled (its breaker open
// meanwhile, visible on the subscription); verify brings it back in place,
// and deliveries resume once the breaker's probe succeeds.
func TestEndToEnd_AutoDisableAndRecoveryThroughVerify(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		sink := newRecorder(t)
		sink.setStatus(func(int) int { return 503 })
		sub := l.subscribe("acme", sink.URL, destination.NewSecret(), []string{"1s"})
		t0 := clock.Now()
		// failAt produces an event at t0+h and waits until the hub has
		// dealt with it: attempted (and failed), or shed by the breaker.
		failAt := func(h time.Duration, id string) {
			l.failAt(t0.Add(h), sub.ID, id)
		}
		failAt(0, "evt-1")
		failAt(12*time.Hour, "evt-2")
		failAt(60*time.Hour, "evt-3")
		failAt(100*time.Hour, "evt-4")
		// At 120h both gates are met (120h sustained, 120h spread) by the
		// first failure at that time: evt-5's attempt, or the retry of an
		// older event that the clock's jump made due. Which one comes first
		// depends on the machine's speed; so evt-5 may find the subscription
		// already disabled and make no job. Wait for evt-5 to be stored
		// either way, so nothing of it is still to come after the verify.
		clock.Set(t0.Add(120 * time.Hour))
		l.produce(ceRecord("acme", "evt-5", ""))
		testkit.WaitFor(t, "evt-5 stored", func() bool {
			evs, err := l.Store.ListEvents(context.Background(), store.ListEventsParams{TenantID: "acme", Limit: 100})
			for _, ev := range evs {
				if ev.ID == "evt-5" {
					return err == nil
				}
			}
			return false // the hub's own operational events are in the inbox too
		})
		var s struct {
			Enabled           bool
			VerificationState string  `json:"verification_state"`
			DisabledReason    *string `json:"disabled_reason"`
			BreakerState      string  `json:"breaker_state"`
			FailureSpan       *struct {
				First time.Time `json:"first_failure_at"`
				Last  time.Time `json:"last_failure_at"`
			} `json:"failure_span"`
		}
		testkit.WaitFor(t, "the auto-disable", func() bool {
			l.api("GET", "/v1/subscriptions/"+sub.ID, "acme", "", &s)
			return !s.Enabled
		})
		if s.VerificationState != "active" || s.DisabledReason == nil || !strings.HasPrefix(*s.DisabledReason, "auto-disabled: failing since") ||
			s.FailureSpan == nil || !s.FailureSpan.First.Equal(t0) || s.BreakerState != "open" {
			t.Fatalf("after auto-disable: %+v (reason %v, span %+v)", s, s.DisabledReason, s.FailureSpan)
		}
		// The same maintenance pass then dead-letters the waiting jobs; wait
		// for it rather than race it (on a loaded machine the verify below
		// could re-enable first, and an old event go out before evt-6).
		testkit.WaitFor(t, "the disabled subscription's waiting jobs dead-lettered", func() bool {
			jobs, err := l.Store.ListJobs(context.Background(), store.ListJobsParams{TenantID: "acme", SubscriptionID: sub.ID, Limit: 100})
			if err != nil || len(jobs) < 4 {
				return false
			}
			for _, j := range jobs {
				if j.Status == hub.JobPending || j.Status == hub.JobInFlight {
					return false
				}
			}
			return true
		})

		// The destination is fixed; verify re-enables in place.
		sink.setStatus(func(int) int { return 200 })
		var verified struct {
			Enabled           bool
			VerificationState string    `json:"verification_state"`
			FailureSpan       *struct{} `json:"failure_span"`
			DisabledReason    *string   `json:"disabled_reason"`
		}
		if status := l.api("POST", "/v1/subscriptions/"+sub.ID+"/verify", "acme", "", &verified); status != 200 {
			t.Fatalf("verify = %d %+v", status, verified)
		}
		if !verified.Enabled || verified.VerificationState != "active" || verified.FailureSpan != nil || verified.DisabledReason != nil {
			t.Fatalf("after verify: %+v", verified)
		}
		// New events flow again once the breaker lets its probe through.
		before := sink.count()
		l.produce(ceRecord("acme", "evt-6", ""))
		clock.Advance(time.Minute)
		testkit.WaitFor(t, "delivery after recovery", func() bool {
			clock.Advance(time.Second)
			return sink.count() > before
		})
		if req, _ := sink.request(before); req.Header.Get("X-Lerian-Event-Id") != "evt-6" {
			t.Fatalf("after recovery the destination got %s", req.Header.Get("X-Lerian-Event-Id"))
		}
		// The breaker closes once the hub has the probe's answer, a moment
		// after the destination got it.
		testkit.WaitFor(t, "the breaker closed after recovery", func() bool {
			l.api("GET", "/v1/subscriptions/"+sub.ID, "acme", "", &s)
			return s.BreakerState == "closed"
		})
	})
}
