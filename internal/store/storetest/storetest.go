// Package storetest is the conformance suite of store.Store: one behaviour,
// written once, that every driver runs unchanged. A driver passes it or is
// wrong.
package storetest

import (
	"context"
	"fmt"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Opener returns a fresh, migrated store for one test (a new schema or
// file), closed when the test ends.
type Opener func(t testing.TB, opts store.Options) store.Store

// Run exercises every behaviour of the store contract against open. The
// areas run in parallel with each other (each opens stores of its own),
// as many at once as go test's -parallel allows.
func Run(t *testing.T, open Opener) {
	t.Run("Migrations", func(t *testing.T) { t.Parallel(); testMigrations(t, open) })
	t.Run("Tenants", func(t *testing.T) { t.Parallel(); testTenants(t, open) })
	t.Run("Ingest", func(t *testing.T) { t.Parallel(); testIngest(t, open) })
	t.Run("Rejections", func(t *testing.T) { t.Parallel(); testRejections(t, open) })
	t.Run("Events", func(t *testing.T) { t.Parallel(); testEvents(t, open) })
	t.Run("ControlPlane", func(t *testing.T) { t.Parallel(); testControlPlane(t, open) })
	t.Run("Dispatch", func(t *testing.T) { t.Parallel(); testDispatch(t, open) })
	t.Run("Results", func(t *testing.T) { t.Parallel(); testResults(t, open) })
	t.Run("Listen", func(t *testing.T) { t.Parallel(); testListen(t, open) })
	t.Run("Births", func(t *testing.T) { t.Parallel(); testBirths(t, open) })
	t.Run("Writer", func(t *testing.T) { t.Parallel(); testWriter(t, open) })
	t.Run("Heartbeats", func(t *testing.T) { t.Parallel(); testHeartbeats(t, open) })
	t.Run("Retention", func(t *testing.T) { t.Parallel(); testRetention(t, open) })
	t.Run("Secrets", func(t *testing.T) { t.Parallel(); testSecrets(t, open) })
	t.Run("TraceContext", func(t *testing.T) { t.Parallel(); testTraceContext(t, open) })
	t.Run("ProducerKey", func(t *testing.T) { t.Parallel(); testProducerKey(t, open) })
	t.Run("Operational", func(t *testing.T) { t.Parallel(); testOperational(t, open) })
	t.Run("Health", func(t *testing.T) { t.Parallel(); testHealth(t, open) })
	t.Run("Lookups", func(t *testing.T) { t.Parallel(); testLookups(t, open) })
	t.Run("Console", func(t *testing.T) { t.Parallel(); testConsole(t, open) })
	t.Run("Filters", func(t *testing.T) { t.Parallel(); testFilters(t, open) })
	t.Run("Reach", func(t *testing.T) { t.Parallel(); testReach(t, open) })
	t.Run("Transform", func(t *testing.T) { t.Parallel(); testTransform(t, open) })
	t.Run("Idempotency", func(t *testing.T) { t.Parallel(); testIdempotency(t, open) })
	t.Run("DLQ", func(t *testing.T) { t.Parallel(); testDLQ(t, open) })
	t.Run("Backfill", func(t *testing.T) { t.Parallel(); testBackfill(t, open) })
	t.Run("Disabled", func(t *testing.T) { t.Parallel(); testDisabled(t, open) })
	t.Run("DisabledPages", func(t *testing.T) { t.Parallel(); testDisabledPages(t, open) })
	t.Run("Attempts", func(t *testing.T) { t.Parallel(); testAttempts(t, open) })
	t.Run("TopicDrift", func(t *testing.T) { t.Parallel(); testDrift(t, open) })
	t.Run("Certificates", func(t *testing.T) { t.Parallel(); testCertificates(t, open) })
}

// Rows is what the suite needs of a driver beyond store.Store: how many
// rows a table holds, for what no method shows (the rows a delete took
// with it). Every driver implements it.
type Rows interface {
	CountRows(ctx context.Context, table string) (int64, error)
}

// env is one test's store with a fake clock.
type env struct {
	ctx   context.Context
	store store.Store
	clock *testkit.Clock
	// dispatcher, once set (births), offers room for jobs born leased to
	// every ingest, as a process's writer does.
	dispatcher *struct{ n *nursery }
}

func setup(t testing.TB, open Opener, opts store.Options) env {
	clock := testkit.NewClock()
	opts.Now = clock.Now
	return env{ctx: context.Background(), store: open(t, opts), clock: clock, dispatcher: &struct{ n *nursery }{}}
}

func (e env) tenant(t testing.TB, id string, status hub.TenantStatus) {
	t.Helper()
	if _, err := e.store.CreateTenant(e.ctx, store.CreateTenantParams{ID: id, Name: id, Status: status}); err != nil {
		t.Fatalf("CreateTenant(%s): %v", id, err)
	}
}

func (e env) rows(t testing.TB, table string) int64 {
	t.Helper()
	r, ok := e.store.(Rows)
	if !ok {
		t.Fatalf("%T does not implement storetest.Rows", e.store)
	}
	n, err := r.CountRows(e.ctx, table)
	if err != nil {
		t.Fatalf("CountRows(%s): %v", table, err)
	}
	return n
}

func (e env) ingest(t testing.TB, p store.IngestParams) store.IngestResult {
	t.Helper()
	var res store.IngestResult
	var err error
	if n := e.dispatcher.n; n != nil {
		// As a process's writer: the offer goes with the batch, and the
		// born jobs are handed over after the commit.
		o := n.Offer()
		var w store.WriteResult
		w, err = e.store.Write(e.ctx, store.WriteParams{Ingest: p, Offer: o})
		if o != nil {
			n.Born(o, w.Born)
		}
		res = w.Ingest
	} else {
		res, err = e.store.Ingest(e.ctx, p)
	}
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if len(res.Outcomes) != len(p.Events) {
		t.Fatalf("Ingest: %d outcomes for %d events", len(res.Outcomes), len(p.Events))
	}
	return res
}

func (e env) events(t testing.TB, tenant string) []hub.Event {
	t.Helper()
	evs, err := e.store.ListEvents(e.ctx, store.ListEventsParams{TenantID: tenant, Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	return evs
}

// NewEvent returns a valid event of tenant with ce-id id, as the parser
// would produce it from a Kafka record.
func NewEvent(tenant, id string) hub.Event {
	return hub.Event{
		TenantID:        tenant,
		ID:              id,
		SpecVersion:     "1.0",
		Type:            "studio.lerian.transaction.posted",
		EventType:       "transaction.posted",
		Source:          "//midaz/ledger",
		Subject:         "tx-" + id,
		Time:            "2026-11-30T12:00:00.123456789Z",
		SchemaVersion:   "1.2.3",
		SchemaMajor:     1,
		DataContentType: "application/json",
		Data:            []byte(fmt.Sprintf(`{"id":%q}`, id)),
		Topic:           "lerian.streaming.ledger_transaction.posted",
		Partition:       0,
		Offset:          0,
	}
}

func codeOf(err error) string { return hub.ErrorCode(err) }

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := codeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}
