package writer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// gatedStore is a real store whose Write can be held (gate) and made to
// fail, and which records what each Write carried.
type gatedStore struct {
	store.Store
	mu     sync.Mutex
	gate   chan struct{} // when set, a Write waits for it
	fail   func(p store.WriteParams) error
	writes []store.WriteParams
	inside atomic.Int32
}

func (g *gatedStore) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	g.mu.Lock()
	g.writes = append(g.writes, p)
	gate, fail := g.gate, g.fail
	g.mu.Unlock()
	g.inside.Add(1)
	defer g.inside.Add(-1)
	if gate != nil {
		<-gate
	}
	if fail != nil {
		if err := fail(p); err != nil {
			return store.WriteResult{}, err
		}
	}
	return g.Store.Write(ctx, p)
}

func (g *gatedStore) written() []store.WriteParams {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]store.WriteParams(nil), g.writes...)
}

type rig struct {
	t     testing.TB
	ctx   context.Context
	store *gatedStore
	w     *writer.Writer
	clock *testkit.Clock
}

func newRig(t testing.TB, d testkit.Driver, cfg writer.Config) *rig {
	t.Helper()
	clock := testkit.NewClock()
	s := &gatedStore{Store: d.Open(t, store.Options{Now: clock.Now})}
	if _, err := s.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Metrics, cfg.Now = s, metrics.New(), clock.Now
	if cfg.FlushSize == 0 {
		cfg.FlushSize = 256
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = 20 * time.Millisecond
	}
	if cfg.StatsInterval == 0 {
		cfg.StatsInterval = time.Hour
	}
	w, err := writer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ctx: context.Background(), store: s, w: w, clock: clock}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer ccancel()
		w.Close(cctx)
		cancel()
		<-done
	})
	return r
}

func (r *rig) ingest(evs ...hub.Event) (store.IngestResult, error) {
	return r.w.Ingest(r.ctx, store.IngestParams{Events: evs})
}

// Records that arrive while a transaction is in progress go together in
// the next one (group commit): one transaction for five partitions'
// batches, each told its own outcomes, sequences in arrival order per
// tenant.
func TestWriter_RecordsThatWaitedGoInOneTransaction(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, writer.Config{})
		gate := make(chan struct{})
		r.store.mu.Lock()
		r.store.gate = gate
		r.store.mu.Unlock()
		first := make(chan error, 1)
		go func() { _, err := r.ingest(storetest.NewEvent("acme", "p0")); first <- err }()
		testkit.WaitFor(t, "the first transaction in progress", func() bool { return r.store.inside.Load() == 1 })
		var wg sync.WaitGroup
		results := make([]store.IngestResult, 5)
		errs := make([]error, 5)
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = r.ingest(storetest.NewEvent("acme", fmt.Sprintf("p%d", i+1)))
			}()
		}
		// All five wait behind the first transaction.
		time.Sleep(50 * time.Millisecond)
		r.store.mu.Lock()
		r.store.gate = nil
		r.store.mu.Unlock()
		close(gate)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		seqs := map[int64]bool{}
		for i := range 5 {
			if errs[i] != nil || len(results[i].Outcomes) != 1 || results[i].Outcomes[0].Verdict != hub.Accept {
				t.Fatalf("batch %d: %+v, %v", i+1, results[i], errs[i])
			}
			seqs[results[i].Outcomes[0].Sequence] = true
		}
		if len(seqs) != 5 {
			t.Fatalf("sequences %v: want five distinct", seqs)
		}
		if n := len(r.store.written()); n != 2 {
			t.Fatalf("%d transactions for six batches, want 2: the first, then the five that waited for it", n)
		}
	})
}

// fakeDelivery is a dispatcher that offers no births and records what
// it is told.
type fakeDelivery struct {
	mu      sync.Mutex
	written []store.Completion
	fenced  []string
	given   []store.Completion
}

func (f *fakeDelivery) Offer() *store.BirthOffer                { return nil }
func (f *fakeDelivery) Born(*store.BirthOffer, []store.Claimed) {}
func (f *fakeDelivery) Stopping() <-chan struct{}               { return nil }
func (f *fakeDelivery) HandOff([]store.Completion) (store.CompleteParams, func([]store.Claimed, bool)) {
	return store.CompleteParams{}, func([]store.Claimed, bool) {}
}
func (f *fakeDelivery) Written(cs []store.Completion, res store.CompleteResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written = append(f.written, cs...)
	f.fenced = append(f.fenced, res.Fenced...)
}
func (f *fakeDelivery) GivenUp(cs []store.Completion) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.given = append(f.given, cs...)
}
func (f *fakeDelivery) counts() (written, given int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.written), len(f.given)
}

// claimOne makes one job of a new event and claims it.
func (r *rig) claimOne(id string) store.Claimed {
	r.t.Helper()
	if _, err := r.store.Store.Ingest(r.ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", id)}}); err != nil {
		r.t.Fatal(err)
	}
	c, err := r.store.ClaimJobs(r.ctx, store.ClaimParams{Batch: 1, Lease: time.Hour})
	if err != nil || len(c) != 1 {
		r.t.Fatalf("claim: %+v, %v", c, err)
	}
	return c[0]
}

func succeeded(c store.Claimed, at time.Time) store.Completion {
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
		SubscriptionID: c.Job.SubscriptionID, Attempt: &hub.Attempt{ID: hub.NewID("att", at), StartedAt: at, StatusCode: 200}}
}

// A result waits (written behind) until records come, and then goes in
// their transaction: one transaction for both.
func TestWriter_AResultRidesWithTheNextRecords(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		del := &fakeDelivery{}
		r := newRig(t, d, writer.Config{FlushInterval: time.Hour, Delivery: del})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState = hub.VerificationActive
		if _, err := r.store.CreateSubscription(r.ctx, sub); err != nil {
			t.Fatal(err)
		}
		c := r.claimOne("e-1")
		r.w.Result(succeeded(c, r.clock.Now()))
		time.Sleep(30 * time.Millisecond)
		if n := len(r.store.written()); n != 0 {
			t.Fatalf("%d transactions for one result alone within its flush interval", n)
		}
		if _, err := r.ingest(storetest.NewEvent("acme", "e-2")); err != nil {
			t.Fatal(err)
		}
		ws := r.store.written()
		if len(ws) != 1 || len(ws[0].Ingest.Events) != 1 || len(ws[0].Complete.Completions) != 1 {
			t.Fatalf("transactions %d; want one carrying the record and the result", len(ws))
		}
		if written, _ := del.counts(); written != 1 {
			t.Fatalf("the dispatcher was told of %d results written", written)
		}
		if j, _, _ := r.store.GetJob(r.ctx, "acme", c.Job.ID); j.Status != hub.JobSucceeded {
			t.Fatalf("job %s", j.Status)
		}
	})
}

// Results alone are written at FlushSize of them, or once the oldest
// waited FlushInterval.
func TestWriter_ResultsAloneWaitForTheirFlush(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		del := &fakeDelivery{}
		r := newRig(t, d, writer.Config{FlushSize: 2, FlushInterval: time.Hour, Delivery: del})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 8
		if _, err := r.store.CreateSubscription(r.ctx, sub); err != nil {
			t.Fatal(err)
		}
		a, b := r.claimOne("e-1"), r.claimOne("e-2")
		r.w.Result(succeeded(a, r.clock.Now()))
		time.Sleep(30 * time.Millisecond)
		if n := len(r.store.written()); n != 0 {
			t.Fatalf("one result of a batch of two written alone (%d transactions)", n)
		}
		r.w.Result(succeeded(b, r.clock.Now()))
		testkit.WaitFor(t, "the two results written together", func() bool { w, _ := del.counts(); return w == 2 })
		if n := len(r.store.written()); n != 1 {
			t.Fatalf("%d transactions, want 1", n)
		}
	})
}

// A lone result reaching an idle writer is written once FlushInterval
// passed, not at the next tick of anything else: an ordered
// subscription's next run is handed over with it. (It once waited for the
// statistics' interval, a second: one ordered tenant's backlog went at a
// run a second.)
func TestWriter_ALoneResultWakesAnIdleWriter(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		del := &fakeDelivery{}
		r := newRig(t, d, writer.Config{FlushSize: 256, FlushInterval: time.Millisecond, StatsInterval: time.Hour, Delivery: del})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 8
		if _, err := r.store.CreateSubscription(r.ctx, sub); err != nil {
			t.Fatal(err)
		}
		a := r.claimOne("e-1")
		time.Sleep(20 * time.Millisecond) // the writer is idle, waiting for nothing in particular
		r.w.Result(succeeded(a, r.clock.Now()))
		testkit.WaitFor(t, "the lone result written", func() bool { w, _ := del.counts(); return w == 1 })
	})
}

// Statistics are not written per batch but gathered and written every
// StatsInterval, and at Close.
func TestWriter_StatisticsAreWrittenPerIntervalNotPerEvent(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, writer.Config{StatsInterval: time.Hour})
		for i := range 3 {
			if _, err := r.ingest(storetest.NewEvent("acme", fmt.Sprintf("e-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if seen, _ := r.store.ListTypesSeen(r.ctx, "acme"); len(seen) != 0 {
			t.Fatalf("types seen written with the records: %+v", seen)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer cancel()
		if err := r.w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		seen, err := r.store.ListTypesSeen(r.ctx, "acme")
		if err != nil || len(seen) != 1 {
			t.Fatalf("after Close: types seen %+v, %v; want transaction.posted", seen, err)
		}
		if _, err := r.ingest(storetest.NewEvent("acme", "late")); err == nil {
			t.Fatal("a closed writer took records")
		}
	})
}

// Gathered statistics are written once their interval passes, with no
// record to carry them.
func TestWriter_StatisticsAreWrittenWhenTheirIntervalPasses(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, writer.Config{StatsInterval: 50 * time.Millisecond})
		if _, err := r.ingest(storetest.NewEvent("acme", "e-1")); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the type seen written by the interval", func() bool {
			seen, _ := r.store.ListTypesSeen(r.ctx, "acme")
			return len(seen) == 1
		})
	})
}

// When a batch carrying records and results fails, each part goes on
// alone: the records are written in a transaction of their own at once
// (their caller never sees the results' failure), and the results are
// held and tried again until the database takes them.
func TestWriter_AFailedBatchIsSplitIntoItsParts(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		del := &fakeDelivery{}
		r := newRig(t, d, writer.Config{FlushInterval: time.Hour, Delivery: del})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 8
		if _, err := r.store.CreateSubscription(r.ctx, sub); err != nil {
			t.Fatal(err)
		}
		c := r.claimOne("e-1")
		var refusals atomic.Int32
		r.store.mu.Lock()
		r.store.fail = func(p store.WriteParams) error {
			if len(p.Complete.Completions) > 0 && refusals.Add(1) <= 3 {
				return errors.New("read tcp: connection reset by peer")
			}
			return nil
		}
		r.store.mu.Unlock()
		r.w.Result(succeeded(c, r.clock.Now()))
		res, err := r.ingest(storetest.NewEvent("acme", "e-2"))
		if err != nil || len(res.Outcomes) != 1 || res.Outcomes[0].Verdict != hub.Accept {
			t.Fatalf("the records failed with the results: %+v, %v", res, err)
		}
		testkit.WaitFor(t, "the result written after its retries", func() bool { w, _ := del.counts(); return w == 1 })
		j, as, err := r.store.GetJob(r.ctx, "acme", c.Job.ID)
		if err != nil || j.Status != hub.JobSucceeded || len(as) != 1 {
			t.Fatalf("job %s with %d attempts (%v): want succeeded, one attempt", j.Status, len(as), err)
		}
	})
}

// lostAnswer commits a Write and then answers an error, as a connection
// cut right after the COMMIT does, once.
type lostAnswer struct {
	store.Store
	lose atomic.Bool
}

func (l *lostAnswer) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	res, err := l.Store.Write(ctx, p)
	if err == nil && l.lose.CompareAndSwap(true, false) {
		return store.WriteResult{}, errors.New("read tcp: connection reset by peer")
	}
	return res, err
}

// births is a dispatcher that offers room and keeps what it is born.
type births struct {
	fakeDelivery
	mu   sync.Mutex
	born []store.Claimed
	n    int
}

func (b *births) Offer() *store.BirthOffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return &store.BirthOffer{Owner: "proc", Token: fmt.Sprintf("lease_offer_%d", b.n), Lease: time.Minute, Room: 10, Exclude: []string{}}
}

func (b *births) Born(_ *store.BirthOffer, jobs []store.Claimed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.born = append(b.born, jobs...)
}

// A batch whose answer is lost may have committed: the jobs it leased at
// birth are found by the offer's token and handed over all the same, so
// none stays leased to the process unknown to it (an ordered
// subscription's later jobs would pass it).
func TestWriter_JobsBornInABatchWhoseAnswerWasLostAreHandedOver(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		lost := &lostAnswer{Store: d.Open(t, store.Options{Now: clock.Now})}
		ctx := context.Background()
		if _, err := lost.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
			t.Fatal(err)
		}
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState = hub.VerificationActive
		if _, err := lost.CreateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		del := &births{}
		w, err := writer.New(writer.Config{FlushSize: 256, FlushInterval: time.Hour, StatsInterval: time.Hour, Store: lost,
			Metrics: metrics.New(), Now: clock.Now, Delivery: del})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
		lost.lose.Store(true)
		if _, err := w.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "e-1")}}); err == nil {
			t.Fatal("the batch's lost answer was not an error to its partition")
		}
		// The partition tries again: the record is a duplicate of the one the
		// lost answer's batch committed.
		res, err := w.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "e-1")}})
		if err != nil || len(res.Outcomes) != 1 || res.Outcomes[0].Reason != hub.ReasonDuplicate {
			t.Fatalf("outcomes %+v, %v; want the record found already stored", res.Outcomes, err)
		}
		del.mu.Lock()
		born := del.born
		del.mu.Unlock()
		if len(born) != 1 || born[0].Event.ID != "e-1" || born[0].LeaseToken != "lease_offer_1" {
			t.Fatalf("born %+v; want the job the lost batch leased, handed over with its token", born)
		}
	})
}
