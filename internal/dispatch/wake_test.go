package dispatch_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// noIdlePoll makes r's claim loop wait forever unless woken, and reports
// each wait: the loop is idle once one is reported.
func noIdlePoll(r *rig) <-chan time.Duration {
	idle := make(chan time.Duration, 100)
	dispatch.SetIdleAfter(r.d, func(d time.Duration) <-chan time.Time {
		select {
		case idle <- d:
		default:
		}
		return nil // never fires
	})
	return idle
}

// runUntilDone runs r's dispatcher until the test ends.
func runUntilDone(t *testing.T, r *rig) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.d.Run(ctx) }()
	r.live.Store(true)
	t.Cleanup(func() {
		r.live.Store(false)
		cancel()
		select {
		case <-done:
		case <-time.After(testkit.Patience):
			t.Error("Run did not return")
		}
	})
}

func waitIdle(t *testing.T, idle <-chan time.Duration) {
	t.Helper()
	select {
	case <-idle:
	case <-time.After(testkit.Patience):
		t.Fatal("the claim loop never went idle")
	}
}

func waitRequests(t *testing.T, s *sink, n int, why string) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Patience); len(s.got()) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests, want %d: %s", len(s.got()), n, why)
		}
	}
}

// A job ingest creates is delivered at once, woken by the store's
// announcement: the clock never moves and the idle poll never fires.
func TestRun_NewJobsWakeDispatchWithoutThePoll(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		idle := noIdlePoll(r)
		runUntilDone(t, r)
		waitIdle(t, idle) // the start's claim found nothing
		r.publish(event("acme", "evt-1"))
		waitRequests(t, r.sink, 1, "the new job did not wake dispatch")
		r.publish(event("acme", "evt-2"))
		waitRequests(t, r.sink, 2, "the second job did not wake dispatch")
	})
}

// Another replica's jobs wake this one through PostgreSQL's NOTIFY: the
// dispatcher runs on a store of its own (another pool), the events are
// ingested through another, the idle poll never fires. After its listening
// connection is killed the listener dials again and hears again.
func TestRun_AnotherReplicasJobsWakeItByNotify(t *testing.T) {
	url := testkit.PostgresPoolURL(t)
	ctx := context.Background()
	var ingestSide, dispatchSide *postgres.DB
	clock := testkit.NewClock()
	for _, db := range []**postgres.DB{&ingestSide, &dispatchSide} {
		var err error
		if *db, err = postgres.Open(ctx, url, store.Options{Now: clock.Now}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*db).Close() })
	}
	if err := ingestSide.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, testkit.Driver{Name: "postgres", Open: func(testing.TB, store.Options) store.Store { return ingestSide }},
		rigOptions{cfg: func(c *dispatch.Config) { c.Store = dispatchSide }})
	r.clock = clock
	idle := noIdlePoll(r)
	runUntilDone(t, r)
	waitIdle(t, idle)
	listening := func(not uint32) {
		t.Helper()
		for deadline := time.Now().Add(testkit.Patience); dispatchSide.ListenerPID() == 0 || dispatchSide.ListenerPID() == not; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the dispatcher's store does not listen")
			}
		}
	}
	listening(0)
	r.publish(event("acme", "evt-1"))
	waitRequests(t, r.sink, 1, "the other replica's job did not wake dispatch")

	old := dispatchSide.ListenerPID()
	if _, err := ingestSide.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(old)); err != nil {
		t.Fatal(err)
	}
	listening(old)
	r.publish(event("acme", "evt-2"))
	waitRequests(t, r.sink, 2, "after its connection was killed, the listener did not hear again")
}

// An ordered subscription's job announced while the one before it is in
// flight is delivered right after it, with the idle poll never firing:
// the finished job's claim for its subscription is not skipped as
// "nothing more due" when more was announced meanwhile.
func TestRun_AJobAnnouncedWhileItsSubscriptionIsBusyFollowsWithoutThePoll(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{maxInFlight: 1})
		release := make(chan struct{})
		r.sink.script(func(n int, _ *http.Request) (int, http.Header, string) {
			if n == 1 {
				<-release
			}
			return 200, nil, "ok"
		})
		idle := noIdlePoll(r)
		runUntilDone(t, r)
		waitIdle(t, idle)
		r.publish(event("acme", "evt-1"))
		waitRequests(t, r.sink, 1, "the first job was not delivered")
		r.publish(event("acme", "evt-2")) // announced while evt-1 is in flight
		time.Sleep(50 * time.Millisecond) // its claim finds the subscription busy
		close(release)
		waitRequests(t, r.sink, 2, "the job announced while the subscription was busy waited")
		r.publish(event("acme", "evt-3"))
		waitRequests(t, r.sink, 3, "a job announced once the subscription was drained waited")
		for i, want := range []string{"evt-1", "evt-2", "evt-3"} {
			if got := r.sink.got()[i].header.Get("X-Lerian-Event-Id"); got != want {
				t.Fatalf("request %d is %s, want %s", i+1, got, want)
			}
		}
	})
}
