package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// budgetRig is a store on a pool of 8 (shares: API 1, ingest 4, dispatch 2)
// with tenant acme, an active subscription and one pending job, and an
// outside connection that can hold rows locked.
type budgetRig struct {
	ctx    context.Context
	db     *postgres.DB
	url    string
	waited chan store.Budget
}

func newBudgetRig(t *testing.T) *budgetRig {
	t.Helper()
	raw := testkit.PostgresURL(t)
	u, _ := url.Parse(raw)
	q := u.Query()
	q.Set("pool_max_conns", "8")
	u.RawQuery = q.Encode()
	r := &budgetRig{ctx: context.Background(), url: raw, waited: make(chan store.Budget, 100)}
	db, err := postgres.Open(r.ctx, u.String(), store.Options{Pool: store.PoolOptions{OnWait: func(b store.Budget, d time.Duration) {
		if d > 0 {
			select {
			case r.waited <- b:
			default:
			}
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.db = db
	if _, err := db.CreateTenant(r.ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	s := storetest.NewSubscription("acme", "sub_1")
	s.VerificationState = hub.VerificationActive
	if _, err := db.CreateSubscription(r.ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(r.ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "evt-0")}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// hold locks rows with an outside transaction until the test releases it.
func (r *budgetRig) hold(t *testing.T, sql string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(r.ctx, r.url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(r.ctx, sql); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			tx.Rollback(r.ctx)
			conn.Close(r.ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// The pool is divided: ten ingest transactions stuck behind a locked tenant
// row hold at most ingest's share (the others wait for it, and say so in
// the wait metric), while a claim, a completion and an API read go through.
func TestBudgets_AStuckIngestDoesNotStarveDispatchOrTheAPI(t *testing.T) {
	testkit.Long(t)
	r := newBudgetRig(t)
	release := r.hold(t, `SELECT * FROM tenants WHERE id = 'acme' FOR UPDATE`)
	var stuck sync.WaitGroup
	for i := range 10 {
		stuck.Add(1)
		go func() {
			defer stuck.Done()
			ev := storetest.NewEvent("acme", fmt.Sprintf("evt-%d", i+1))
			if _, err := r.db.Ingest(r.ctx, store.IngestParams{Events: []hub.Event{ev}}); err != nil {
				t.Errorf("ingest: %v", err)
			}
		}()
	}
	testkit.WaitFor(t, "ingest to fill its share of the pool", func() bool {
		s := r.db.PoolStats().Budgets[store.BudgetIngest]
		return s.InUse == s.Share && s.Share == 4
	})
	ctx, cancel := context.WithTimeout(r.ctx, testkit.Patience)
	defer cancel()
	claimed, err := r.db.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim while ingest is stuck: %d claimed, %v", len(claimed), err)
	}
	c := claimed[0]
	if _, err := r.db.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
		JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, SubscriptionID: c.Job.SubscriptionID,
		Status: hub.JobSucceeded, Attempt: &hub.Attempt{ID: "att_1", StartedAt: time.Now(), StatusCode: 200},
	}}}); err != nil {
		t.Fatalf("complete while ingest is stuck: %v", err)
	}
	if _, err := r.db.ListSubscriptions(ctx, store.ListSubscriptionsParams{TenantID: "acme", Limit: 10}); err != nil {
		t.Fatalf("API read while ingest is stuck: %v", err)
	}

	release()
	stuck.Wait()
	if n, err := r.db.CountRows(r.ctx, "events"); err != nil || n != 11 {
		t.Fatalf("%d events stored, %v; want all 11", n, err)
	}
	// The six ingests over the share waited, and only they did.
	close(r.waited)
	waits := map[store.Budget]int{}
	for b := range r.waited {
		waits[b]++
	}
	if waits[store.BudgetIngest] < 6 || len(waits) != 1 {
		t.Fatalf("calls that waited for their budget: %v; want the 6 ingests over the share", waits)
	}
}

// And the reverse: dispatch calls stuck behind a locked subscription row
// hold only dispatch's share; ingest and the API go on.
func TestBudgets_StuckDispatchDoesNotStarveIngestOrTheAPI(t *testing.T) {
	testkit.Long(t)
	r := newBudgetRig(t)
	jobs, err := r.db.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v", jobs, err)
	}
	// Giving back a lease locks the job's subscription first.
	release := r.hold(t, `SELECT * FROM subscriptions FOR NO KEY UPDATE`)
	var stuck sync.WaitGroup
	for range 10 {
		stuck.Add(1)
		go func() {
			defer stuck.Done()
			if err := r.db.ReleaseJobs(r.ctx, []store.JobLease{{JobID: jobs[0].ID, LeaseToken: "none"}}); err != nil {
				t.Errorf("release: %v", err)
			}
		}()
	}
	testkit.WaitFor(t, "dispatch to fill its share of the pool", func() bool {
		s := r.db.PoolStats().Budgets[store.BudgetDispatch]
		return s.InUse == s.Share && s.Share == 2
	})
	ctx, cancel := context.WithTimeout(r.ctx, testkit.Patience)
	defer cancel()
	if _, err := r.db.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "evt-new")}}); err != nil {
		t.Fatalf("ingest while dispatch is stuck: %v", err)
	}
	if _, err := r.db.GetTenant(ctx, "acme"); err != nil {
		t.Fatalf("API read while dispatch is stuck: %v", err)
	}
	release()
	stuck.Wait()
}

func TestOpen_APoolOfOneIsRefused(t *testing.T) {
	u, _ := url.Parse(testkit.PostgresURL(t))
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	if db, err := postgres.Open(context.Background(), u.String(), store.Options{}); err == nil {
		db.Close()
		t.Fatal("a pool of one connection was accepted")
	}
}
