package dispatch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// partsRig is a real store (SQLite, on a fake clock) with a tenant and a
// verified subscription, for the dispatcher's parts built on their own.
type partsRig struct {
	t       *testing.T
	ctx     context.Context
	clock   *testkit.Clock
	store   store.Store
	sub     hub.Subscription
	cfg     config.Dispatch
	metrics *metrics.Metrics
	log     *slog.Logger
}

// newPartsRig's subscription takes up to maxInFlight attempts at once (1:
// ordered).
func newPartsRig(t *testing.T, maxInFlight int) *partsRig {
	t.Helper()
	r := &partsRig{t: t, ctx: context.Background(), clock: testkit.NewClock(), cfg: config.Defaults(config.Serve).Dispatch,
		metrics: metrics.New(), log: slog.New(slog.DiscardHandler)}
	r.store = testkit.OpenSQLite(t, store.Options{Now: r.clock.Now})
	if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	s := storetest.NewSubscription("acme", "sub_1")
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, maxInFlight
	var err error
	if r.sub, err = r.store.CreateSubscription(r.ctx, s); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *partsRig) now() time.Time { return r.clock.Now().UTC() }

// publish stores events of acme, as ingest does: a job each.
func (r *partsRig) publish(ids ...string) {
	r.t.Helper()
	var evs []hub.Event
	for _, id := range ids {
		evs = append(evs, storetest.NewEvent("acme", id))
	}
	if _, err := r.store.Ingest(r.ctx, store.IngestParams{Events: evs}); err != nil {
		r.t.Fatal(err)
	}
}

// claim claims up to n jobs for owner, each leased for lease.
func (r *partsRig) claim(owner string, n int, lease time.Duration) []store.Claimed {
	r.t.Helper()
	cs, err := r.store.ClaimJobs(r.ctx, store.ClaimParams{Batch: n, Lease: lease, Owner: owner, Token: hub.NewID("lease", r.now())})
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// status is job id's status in the store.
func (r *partsRig) status(id string) hub.JobStatus {
	r.t.Helper()
	j, _, err := r.store.GetJob(r.ctx, "acme", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return j.Status
}

// jobs are the subscription's jobs by status.
func (r *partsRig) jobs() map[hub.JobStatus]int {
	r.t.Helper()
	js, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 100})
	if err != nil {
		r.t.Fatal(err)
	}
	out := make(map[hub.JobStatus]int)
	for _, j := range js {
		out[j.Status]++
	}
	return out
}
