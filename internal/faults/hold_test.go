//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The scenarios of this file hold an ordered subscription's destination
// down with a backlog waiting, several replicas sharing the database, then
// heal it: every event gets through, and each tenant's events are first
// received in arrival order (docs/concepts.md, "Order and concurrency" and
// "Circuit breaker": a subscription of max_in_flight 1 is attempted one job
// at a time in arrival order, and the backlog shed by a breaker drains in
// arrival order once it closes). The last one cuts the replicas' database
// connections again and again under load (docs/operations.md).

// holdRetry is the retry schedule of the scenarios' subscriptions: twelve
// steps of 1 s, each shorter than any breaker's open time, so a failed
// job's retry is due before the breaker's probe and the backlog, failed
// jobs included, drains in arrival order once it closes. (A retry further
// away than the probe may still be overtaken: docs/delivery.md#ordering.)
var holdRetry = []string{"1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"}

// holdBreakers are the breaker settings of the scenarios' replicas: a
// breaker opens after STREAMING_HUB_BREAKER_FAILURES (default 5)
// consecutive failures, stays open 2 s, and doubles up to 8 s after each
// failed probe, so each replica probes several times during an outage and
// their breakers close at different moments.
var holdBreakers = []string{"STREAMING_HUB_BREAKER_OPEN=2s", "STREAMING_HUB_BREAKER_MAX_OPEN=8s"}

// holdOutage is how long the destination fails.
const holdOutage = 10 * time.Second

// addOrderedTenant stores a tenant with one verified, ordered subscription
// (storeOrderedTenant) and adds the tenant to the world's.
func (w *world) addOrderedTenant(id string, dest hub.Destination, creds hub.Credentials, retry []string) hub.Subscription {
	sub := w.storeOrderedTenant(id, dest, creds, retry)
	w.tenants = append(w.tenants, id)
	return sub
}

// storeOrderedTenant stores a tenant with one verified, ordered
// subscription (max_in_flight 1) to dest, retried on retry, credentials
// sealed as the API seals them.
func (w *world) storeOrderedTenant(id string, dest hub.Destination, creds hub.Credentials, retry []string) hub.Subscription {
	t, ctx := w.t, context.Background()
	keyring, err := envelope.NewKeyring(kek)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.CreateTenant(ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil {
		t.Fatal(err)
	}
	s := hub.Subscription{
		ID: hub.NewID("sub", time.Now()), TenantID: id, Name: "faults-" + dest.Type,
		EventTypes:    []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
		Destination:   dest,
		RetrySchedule: retry,
		MaxInFlight:   1, Enabled: true, VerificationState: hub.VerificationActive,
	}
	if err := destination.SealSecrets(keyring, &s, hub.SubscriptionSecrets{
		Signing: []hub.SigningSecret{{Secret: destination.NewSecret()}}, Broker: creds,
	}); err != nil {
		t.Fatal(err)
	}
	out, err := w.db.CreateSubscription(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// produceBurst sends perTenant events of every tenant of the world at
// once, tenants interleaved, each tenant's on one partition (so they
// arrive in the order produced), and returns their ids.
func (w *world) produceBurst(perTenant int) []string {
	var recs []*kgo.Record
	var ids []string
	for n := range perTenant {
		for i, tenant := range w.tenants {
			id := fmt.Sprintf("%s-%04d", tenant, n)
			ids = append(ids, id)
			recs = append(recs, testkit.CERecord(topic, int32(i%w.partitions()), tenant, id))
		}
	}
	testkit.Produce(w.t, w.prod, recs...)
	return ids
}

// admin is a pool of the test's own on the world's database, for the
// queries the store interface has no call for.
func (w *world) admin() *pgxpool.Pool {
	w.t.Helper()
	p, err := pgxpool.New(context.Background(), w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(p.Close)
	return p
}

// jobFigures are the delivery jobs' counts by status, and how many jobs
// were attempted (or recovered) at least once.
type jobFigures struct {
	total, succeeded, dead, pending, inFlight, attempted int
	attemptedSubs                                        int // subscriptions with a job attempted at least once
}

func (w *world) jobFigures(db *pgxpool.Pool) (f jobFigures) {
	db.QueryRow(context.Background(), `SELECT count(*),
		count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status = 'dead_lettered'),
		count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'in_flight'),
		count(*) FILTER (WHERE attempts > 0), count(DISTINCT subscription_id) FILTER (WHERE attempts > 0)
		FROM delivery_jobs`).Scan(&f.total, &f.succeeded, &f.dead, &f.pending, &f.inFlight, &f.attempted, &f.attemptedSubs)
	return f
}

// settled: every one of n jobs is succeeded or dead-lettered.
func (f jobFigures) settled(n int) bool { return f.total >= n && f.succeeded+f.dead == f.total }

// jobAttempts is each job's attempts, by tenant/event id.
func (w *world) jobAttempts(db *pgxpool.Pool) map[string]int {
	w.t.Helper()
	rows, err := db.Query(context.Background(), `SELECT tenant_id, event_id, attempts FROM delivery_jobs`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := make(map[string]int)
	for rows.Next() {
		var tenant, event string
		var n int
		if err := rows.Scan(&tenant, &event, &n); err != nil {
			w.t.Fatal(err)
		}
		out[tenant+"/"+event] = n
	}
	return out
}

// receipt is one message as the destination got it.
type receipt struct {
	tenant, event string
	seq           int64 // X-Lerian-Sequence
	ok            bool  // accepted (a 2xx answer; a message in a queue or stream)
}

// orderFigures compare, per tenant, the order of the first accepted
// receipt of each event with the events' sequences.
type orderFigures struct {
	delivered   int      // events with an accepted receipt
	late        int      // events first received after a higher sequence of their tenant was
	neverFailed int      // of those, the ones whose job was attempted once (attempts = 1)
	first       string   // the first offender, "tenant-03: sequence 1 first received after sequence 17"
	tenants     []string // tenants with a late event
}

// checkOrder reads receipts (in the order received) and the jobs' attempts
// (jobAttempts).
func checkOrder(receipts []receipt, attempts map[string]int) orderFigures {
	var f orderFigures
	seen := make(map[string]bool)
	top := make(map[string]int64)       // tenant -> highest sequence first received so far
	topEvent := make(map[string]string) // tenant -> its event
	lateTenants := make(map[string]bool)
	for _, r := range receipts {
		k := r.tenant + "/" + r.event
		if !r.ok || seen[k] {
			continue
		}
		seen[k] = true
		f.delivered++
		if r.seq < top[r.tenant] {
			f.late++
			if attempts[k] == 1 {
				f.neverFailed++
			}
			if f.first == "" {
				f.first = fmt.Sprintf("%s: sequence %d first received after sequence %d (their jobs' attempts: %d and %d)",
					r.tenant, r.seq, top[r.tenant], attempts[k], attempts[r.tenant+"/"+topEvent[r.tenant]])
			}
			lateTenants[r.tenant] = true
			continue
		}
		top[r.tenant], topEvent[r.tenant] = r.seq, r.event
	}
	for tenant := range lateTenants {
		f.tenants = append(f.tenants, tenant)
	}
	sort.Strings(f.tenants)
	return f
}

func (f orderFigures) String() string {
	s := fmt.Sprintf("events first received after a higher sequence of their tenant: %d of %d (attempted once, never failed: %d)",
		f.late, f.delivered, f.neverFailed)
	if f.late > 0 {
		s += fmt.Sprintf("; first: %s; tenants: %v", f.first, f.tenants)
	}
	return s
}

// holdSink is a webhook destination that answers 500 to everything until
// healed, then 204; it records every request in the order received.
type holdSink struct {
	*httptest.Server
	healed atomic.Bool

	mu       sync.Mutex
	receipts []receipt
	failed   map[string]int // tenant -> requests answered 500
}

func newHoldSink(t *testing.T) *holdSink {
	s := &holdSink{failed: make(map[string]int)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seq, _ := strconv.ParseInt(r.Header.Get("X-Lerian-Sequence"), 10, 64)
		ok := s.healed.Load()
		tenant := r.Header.Get("X-Lerian-Tenant-Id")
		s.mu.Lock()
		s.receipts = append(s.receipts, receipt{tenant: tenant, event: r.Header.Get("X-Lerian-Event-Id"), seq: seq, ok: ok})
		if !ok {
			s.failed[tenant]++
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond) // a destination takes a moment
		if !ok {
			rw.WriteHeader(http.StatusInternalServerError)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *holdSink) snapshot() (receipts []receipt, failedTenants int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.receipts), len(s.failed)
}

// outage waits until every subscription had an attempt (failed: the
// destination is down), then until outage has passed since start.
func (w *world) outage(db *pgxpool.Pool, start time.Time, outage time.Duration) {
	w.t.Helper()
	w.waitFor("an attempt of every subscription while the destination is down", func() bool {
		return w.jobFigures(db).attemptedSubs >= len(w.tenants)
	})
	time.Sleep(time.Until(start.Add(outage)))
}

// holdCase is one run of the webhook scenario.
type holdCase struct {
	replicas, tenants, perTenant int
	outage                       time.Duration // how long the sink answers 500
}

// orderedWebhookAfterOutage runs c: an ordered webhook subscription per
// tenant, the sink failing everything for c.outage with the backlog
// produced at once, then healed.
func orderedWebhookAfterOutage(t *testing.T, c holdCase) {
	testkit.Long(t)
	w := newWorld(t, 0, 4, 0)
	db := w.admin()
	sink := newHoldSink(t)
	for i := range c.tenants {
		w.addOrderedTenant(fmt.Sprintf("tenant-%02d", i), hub.Destination{Type: hub.DestinationWebhook, URL: sink.URL}, hub.Credentials{}, holdRetry)
	}
	for range c.replicas {
		w.start(holdBreakers...)
	}
	start := time.Now()
	ids := w.produceBurst(c.perTenant)
	w.outage(db, start, c.outage)
	sink.healed.Store(true)
	healed := time.Now()
	w.waitFor("every job succeeded or dead-lettered", func() bool { return w.jobFigures(db).settled(len(ids)) })
	receipts, _ := sink.snapshot()
	f := checkOrder(receipts, w.jobAttempts(db))
	jobs := w.jobFigures(db)
	fmt.Printf("\n== %d ordered webhook subscriptions, %d events each, %d replicas; the sink answered 500 for %v (breaker open 2s, max 8s), then healed\n",
		c.tenants, c.perTenant, c.replicas, c.outage)
	fmt.Printf("   requests %d; jobs succeeded %d, dead-lettered %d; every job settled %v after the heal\n",
		len(receipts), jobs.succeeded, jobs.dead, time.Since(healed).Round(100*time.Millisecond))
	fmt.Printf("   %s\n", f)
	if f.delivered != len(ids) {
		t.Errorf("%d of %d events delivered (%d dead-lettered: their retry curve %v ran out during the outage)",
			f.delivered, len(ids), jobs.dead, holdRetry)
	}
	if f.late > 0 {
		t.Errorf("%d events first received after a higher sequence of their tenant (%d of them never failed); first: %s",
			f.late, f.neverFailed, f.first)
	}
}

// An ordered webhook subscription per tenant, two replicas on one
// database, the destination failing everything while the backlog waits
// (breakers open and probe on each replica), then healed: every event is
// delivered and each tenant's first successful receipts come in sequence
// order.
func TestOrderedWebhookFIFOAfterOutageTwoReplicas(t *testing.T) {
	orderedWebhookAfterOutage(t, holdCase{replicas: 2, tenants: 10, perTenant: 30, outage: holdOutage})
}

// The same with three replicas.
func TestOrderedWebhookFIFOAfterOutageThreeReplicas(t *testing.T) {
	orderedWebhookAfterOutage(t, holdCase{replicas: 3, tenants: 10, perTenant: 30, outage: holdOutage})
}

// An ordered RabbitMQ subscription per tenant, reached through a proxy that
// refuses every connection for 10 s while the backlog waits, two replicas:
// every event reaches the queue, and each tenant's events first reach it in
// sequence order.
func TestOrderedRabbitMQFIFOAfterOutage(t *testing.T) {
	testkit.Long(t)
	w := newWorld(t, 0, 4, 0)
	mq := testkit.NewRabbit(t, "#")
	u, err := url.Parse(mq.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := testkit.NewProxy(t, u.Host)
	pass, _ := u.User.Password()
	creds := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User, u.Host = nil, px.Addr
	const tenants, perTenant, outage = 16, 40, holdOutage
	for i := range tenants {
		w.addOrderedTenant(fmt.Sprintf("rmq-%02d", i), hub.Destination{Type: hub.DestinationRabbitMQ, URL: u.String(),
			Exchange: mq.Exchange, RoutingKey: "{tenant}.{type}"}, creds, holdRetry)
	}
	db := w.admin()
	env := append([]string{"STREAMING_HUB_DELIVERY_TIMEOUT=2s"}, holdBreakers...)
	w.start(env...)
	w.start(env...)

	px.Down()
	start := time.Now()
	ids := w.produceBurst(perTenant)
	w.outage(db, start, outage)
	px.Up()
	healed := time.Now()

	var receipts []receipt
	take := func() {
		for _, m := range mq.Take(t) {
			tenant, _ := m.Headers["X-Lerian-Tenant-Id"].(string)
			seqText, _ := m.Headers["X-Lerian-Sequence"].(string)
			seq, _ := strconv.ParseInt(seqText, 10, 64)
			receipts = append(receipts, receipt{tenant: tenant, event: m.MessageId, seq: seq, ok: true})
		}
	}
	w.waitFor("every job succeeded or dead-lettered", func() bool { take(); return w.jobFigures(db).settled(len(ids)) })
	take()
	f := checkOrder(receipts, w.jobAttempts(db))
	jobs := w.jobFigures(db)
	fmt.Printf("\n== %d ordered RabbitMQ subscriptions, %d events each, 2 replicas; the broker unreachable for %v, then back\n",
		tenants, perTenant, outage)
	fmt.Printf("   messages in the queue %d; jobs succeeded %d, dead-lettered %d; every job settled %v after the heal\n",
		len(receipts), jobs.succeeded, jobs.dead, time.Since(healed).Round(100*time.Millisecond))
	fmt.Printf("   %s\n", f)
	if f.delivered != len(ids) {
		t.Errorf("%d of %d events reached the queue (%d dead-lettered)", f.delivered, len(ids), jobs.dead)
	}
	if f.late > 0 {
		t.Errorf("%d events first reached the queue after a higher sequence of their tenant (%d of them never failed); first: %s",
			f.late, f.neverFailed, f.first)
	}
}

// An ordered NATS JetStream subscription per tenant, the server stopped for
// 10 s while the backlog waits and started again with its stream intact,
// two replicas: every event reaches the stream, and each tenant's events
// first reach it in sequence order.
func TestOrderedNATSFIFOAfterOutage(t *testing.T) {
	testkit.Long(t)
	w := newWorld(t, 0, 4, 0)
	n := testkit.NewNATS(t)
	n.CreateStream(t, "HOLD", "hold.>")
	const tenants, perTenant, outage = 16, 40, holdOutage
	for i := range tenants {
		id := fmt.Sprintf("nats-%02d", i)
		w.addOrderedTenant(id, hub.Destination{Type: hub.DestinationNATS, URL: n.URL, Subject: "hold." + id, Stream: "HOLD"},
			hub.Credentials{}, holdRetry)
	}
	db := w.admin()
	env := append([]string{"STREAMING_HUB_DELIVERY_TIMEOUT=2s"}, holdBreakers...)
	w.start(env...)
	w.start(env...)

	n.Stop(t)
	start := time.Now()
	ids := w.produceBurst(perTenant)
	w.outage(db, start, outage)
	n.Start(t)
	healed := time.Now()

	w.waitFor("every job succeeded or dead-lettered", func() bool { return w.jobFigures(db).settled(len(ids)) })
	var receipts []receipt
	for _, m := range n.Messages(t, "HOLD") {
		seq, _ := strconv.ParseInt(first(m.Header["X-Lerian-Sequence"]), 10, 64)
		receipts = append(receipts, receipt{tenant: first(m.Header["X-Lerian-Tenant-Id"]), event: first(m.Header["Nats-Msg-Id"]), seq: seq, ok: true})
	}
	f := checkOrder(receipts, w.jobAttempts(db))
	jobs := w.jobFigures(db)
	fmt.Printf("\n== %d ordered NATS JetStream subscriptions, %d events each, 2 replicas; the server stopped for %v, then started again\n",
		tenants, perTenant, outage)
	fmt.Printf("   messages in the stream %d; jobs succeeded %d, dead-lettered %d; every job settled %v after the restart\n",
		len(receipts), jobs.succeeded, jobs.dead, time.Since(healed).Round(100*time.Millisecond))
	fmt.Printf("   %s\n", f)
	if f.delivered != len(ids) {
		t.Errorf("%d of %d events reached the stream (%d dead-lettered)", f.delivered, len(ids), jobs.dead)
	}
	if f.late > 0 {
		t.Errorf("%d events first reached the stream after a higher sequence of their tenant (%d of them never failed); first: %s",
			f.late, f.neverFailed, f.first)
	}
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// Two replicas under load (50 tenants, about 100 events a second), every
// PostgreSQL connection of theirs terminated once a second for 30 s: every
// event is delivered within 90 s of the last one produced, nothing is lost,
// a batch of results whose write failed is written again within a few
// tries (never refused for good as a duplicate of its own earlier, committed
// write), no job is left in flight and no subscription stays paused longer
// than the lease and a maintenance pass after the connections are left
// alone (docs/operations.md).
func TestDatabaseBackendsTerminatedEverySecondTwoReplicas(t *testing.T) {
	testkit.Long(t)
	w := newWorld(t, 50, 4, 0)
	app := fmt.Sprintf("hub-hold-%d", time.Now().UnixNano())
	var procs []*proc
	for i := range 2 {
		u, _ := url.Parse(w.dbURL)
		q := u.Query()
		q.Set("application_name", fmt.Sprintf("%s-%d", app, i))
		u.RawQuery = q.Encode()
		procs = append(procs, w.start("STREAMING_HUB_DATABASE_URL="+u.String()))
	}
	db := w.admin()
	ctx := context.Background()

	var ids []string
	var lastProduce time.Time
	produced := make(chan struct{})
	go func() { ids = w.produce(3_000, 100); lastProduce = time.Now(); close(produced) }()

	const sabotage = 30 * time.Second
	cuts, rounds := 0, 0
	begin := time.Now()
	for time.Since(begin) < sabotage {
		time.Sleep(time.Second)
		var n int
		db.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE $1`, app+"-%").Scan(&n)
		cuts += n
		rounds++
	}
	stopped := time.Now()
	<-produced

	// Delivered within 90 s of the last produce, waited for no longer.
	const within = 90 * time.Second
	var got tally
	for {
		got = w.sink.tally(ids)
		if got.lost == 0 || time.Since(lastProduce) > within {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(lastProduce)
	w.report(fmt.Sprintf("two replicas, %d PostgreSQL backends of theirs terminated in %d rounds, once a second for %v, under load",
		cuts, rounds, sabotage), got)
	fmt.Printf("   the last event was produced %v after the saboteur began; every event delivered %v after it\n",
		lastProduce.Sub(begin).Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	if got.lost > 0 {
		t.Errorf("%d events not delivered %v after the last produce", got.lost, within)
	}
	if cuts == 0 {
		t.Error("no backend was terminated: the scenario proved nothing")
	}

	// No job left in flight: give the completers a lease and a maintenance
	// pass to write what they hold, then look.
	settle := lease + 5*time.Second
	deadline := time.Now().Add(settle)
	var jobs jobFigures
	for {
		jobs = w.jobFigures(db)
		if jobs.inFlight == 0 && jobs.pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("   jobs: %d succeeded, %d pending, %d in flight, %d dead-lettered (%v after delivery was checked)\n",
		jobs.succeeded, jobs.pending, jobs.inFlight, jobs.dead, settle)
	if jobs.inFlight > 0 {
		t.Errorf("%d jobs still in flight %v after the check", jobs.inFlight, settle)
	}

	// Pauses after the saboteur stopped: production had ended, so every
	// arrival afterwards is backlog, and the gap from the stop (or from the
	// previous arrival) to each is time a subscription waited.
	bound := lease + 5*time.Second
	limit := bound + 4*time.Second
	worst, worstTenant := time.Duration(0), ""
	w.sink.mu.Lock()
	for tenant, times := range w.sink.arrivals {
		prev := stopped
		for _, at := range times {
			if at.Before(stopped) {
				continue
			}
			if d := at.Sub(prev); d > worst {
				worst, worstTenant = d, tenant
			}
			prev = at
		}
	}
	w.sink.mu.Unlock()
	if worstTenant == "" {
		fmt.Printf("   no subscription had work left when the saboteur stopped: none could pause after it\n")
	} else {
		fmt.Printf("   longest pause of a subscription after the saboteur stopped: %v (%s; bound: lease %v + 5s = %v)\n",
			worst.Round(time.Millisecond), worstTenant, lease, bound)
	}
	if worst > limit {
		t.Errorf("the subscription of %s paused %v after the saboteur stopped, more than the lease plus 5 s (%v) and the loaded machine's 4 s",
			worstTenant, worst, bound)
	}

	// The replicas' logs: how often a batch of results was written again,
	// and whether any write was refused as a duplicate.
	for i, p := range procs {
		s := failedWrites(p.logs)
		fmt.Printf("   replica %d: %s\n", i, s)
		if s.maxTries > 10 {
			t.Errorf("replica %d retried one batch of results %d times (%s)", i, s.maxTries, s)
		}
		if s.duplicates > 0 {
			t.Errorf("replica %d logged %d lines with a duplicate key (SQLSTATE 23505), e.g. %s", i, s.duplicates, s.duplicateLine)
		}
	}
}

// writeFailures summarize a replica's log lines at error level about
// result writes.
type writeFailures struct {
	lines, maxTries, duplicates int
	errors                      map[string]int // each error (cut to 120 characters) and its count
	duplicateLine               string
}

func (s writeFailures) String() string {
	var errs []string
	for e, n := range s.errors {
		errs = append(errs, fmt.Sprintf("%dx %q", n, e))
	}
	sort.Strings(errs)
	return fmt.Sprintf(`%d "recording delivery results failed" lines, most tries of one batch %d, lines with a duplicate key %d; errors: %s`,
		s.lines, s.maxTries, s.duplicates, strings.Join(errs, ", "))
}

func failedWrites(logs *bytes.Buffer) writeFailures {
	s := writeFailures{errors: make(map[string]int)}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "duplicate key") || strings.Contains(line, "SQLSTATE 23505") {
			s.duplicates++
			if s.duplicateLine == "" {
				s.duplicateLine = line
			}
		}
		if !strings.Contains(line, "recording delivery results failed") {
			continue
		}
		s.lines++
		var rec struct {
			Tries int    `json:"tries"`
			Err   string `json:"err"`
		}
		json.Unmarshal([]byte(line), &rec)
		s.maxTries = max(s.maxTries, rec.Tries)
		e := rec.Err
		if len(e) > 120 {
			e = e[:120]
		}
		s.errors[e]++
	}
	return s
}
