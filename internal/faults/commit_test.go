//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// The scenarios of this file break the commit protocol of a process that
// both ingests and delivers (docs/architecture.md, "The writer")
// at each of its steps, on PostgreSQL with real processes: kill -9 right
// after an ingest commit whose born jobs are still in memory, during
// attempts, with answered results not yet written, with a merged batch of
// records and results not yet written, right after a batch of results was
// written, of one of three replicas, and PostgreSQL backends
// terminated while results are written behind. Each checks the protocol's
// invariants:
//
//  1. nothing lost: every event produced is delivered (2xx) at least once
//     to its tenant's subscription, and every job ends succeeded;
//  2. no event, and no ordered subscription, is attempted twice at once
//     (the sink counts overlaps);
//  3. each tenant's events are first received in arrival order (checkOrder:
//     a re-send of an event already received is allowed, a later event
//     received first is not);
//  4. a killed process's subscriptions resume within the lease plus 5 s;
//  5. the jobs really were born leased (streaming_hub_jobs_born_total > 0
//     on every process that ran: none born, the scenario proves nothing),
//     and the jobs a killed process held are counted in
//     streaming_hub_redeliveries_total{reason="unwritten_result"} by the
//     process that recovers them, once each.
//
// The crash points (STREAMING_HUB_CRASH_AT, internal/crashpoint) are live in
// the suite's binary (TestMain builds it with -tags faults).

// The series the scenarios read.
const (
	bornSeries      = `streaming_hub_jobs_born_total`
	unwrittenSeries = `streaming_hub_redeliveries_total{reason="unwritten_result"}`
	fencedSeries    = `streaming_hub_redeliveries_total{reason="fenced"}`
)

// commitTenants is how many tenants each scenario has, each with one
// ordered subscription (max_in_flight 1) to the world's sink.
const commitTenants = 8

// newCommitWorld is a world of commitTenants ordered tenants whose sink
// answers in delay, with its weekly partitions made beforehand, and a pool
// of the test's own on its database. A hub's first partition pass makes
// the weeks ahead (ATTACH PARTITION, waiting for the tables' locks) while
// holding a slot of the dispatch budget, the only one in a pool of
// testkit.PoolMaxConns connections: under load it held back result
// writes, renewals and lease recovery for seconds after the start
// (TestCommitLeasesKeptWhileTheFirstPartitionPassRuns). These scenarios are
// about the crash points, so the pass finds nothing left to make.
func newCommitWorld(t *testing.T, delay time.Duration) (*world, *pgxpool.Pool) {
	w := newWorld(t, commitTenants, 4, 0)
	w.sink.delay = delay
	weeks := config.Defaults(config.Serve).Housekeeping.PartitionFutureWeeks // as many as the hub makes
	if _, err := w.db.EnsurePartitions(context.Background(), time.Now(), weeks); err != nil {
		t.Fatal(err)
	}
	return w, w.admin()
}

// scrape reads series from p's /metrics every 100 ms until p exits, and
// returns the last value read: a process killed with -9 (or by its own
// crash point) can no longer be asked.
func scrape(p *proc, series string) func() float64 {
	var mu sync.Mutex
	var last float64
	go func() {
		for {
			if v, err := readMetric(p, series); err == nil {
				mu.Lock()
				last = v
				mu.Unlock()
			}
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// produceOrder is receipts with each event's place in the produce order
// for its sequence: world.produce numbers its events as it sends them
// (evt-000123), so checkOrder on it compares first receipts with the
// order produced rather than the sequences the hub gave.
func produceOrder(receipts []receipt) []receipt {
	out := make([]receipt, len(receipts))
	for i, r := range receipts {
		n, _ := strconv.ParseInt(strings.TrimPrefix(r.event, "evt-"), 10, 64)
		r.seq = n + 1
		out[i] = r
	}
	return out
}

// commitCheck waits until every produced event was delivered and every
// job settled, prints the figures, and fails on a broken invariant: an
// event lost or a job not succeeded (1), an event or an ordered
// subscription attempted twice at once (2), an event first received after
// a later one of its tenant, by the sequences the hub gave and by the
// order produced (3).
func (w *world) commitCheck(name string, ids []string, db *pgxpool.Pool) tally {
	w.t.Helper()
	got := w.waitDelivered(ids)
	w.report(name, got) // fails on a loss
	// The jobs of results re-sent after a crash may still be on their way
	// when every event has arrived once: give them a lease, a recovery and
	// the time to be sent again, then look.
	settle := 3*lease + 10*time.Second
	deadline := time.Now().Add(settle)
	var jobs jobFigures
	for {
		jobs = w.jobFigures(db)
		if jobs.settled(len(ids)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("   jobs: %d in all for %d events, %d succeeded, %d dead-lettered, %d pending, %d in flight\n",
		jobs.total, len(ids), jobs.succeeded, jobs.dead, jobs.pending, jobs.inFlight)
	if jobs.total != len(ids) || jobs.succeeded != len(ids) {
		w.t.Errorf("%d jobs for %d events (one subscription each), %d succeeded (%d dead-lettered, %d pending, %d in flight %v after delivery)",
			jobs.total, len(ids), jobs.succeeded, jobs.dead, jobs.pending, jobs.inFlight, settle)
	}
	if got.overlaps > 0 {
		w.t.Errorf("%d concurrent attempts of one event or of one ordered subscription", got.overlaps)
	}
	receipts := w.sink.snapshot()
	attempts := w.jobAttempts(db)
	bySeq, byProduce := checkOrder(receipts, attempts), checkOrder(produceOrder(receipts), attempts)
	fmt.Printf("   order by sequence: %s\n   order as produced: %s\n", bySeq, byProduce)
	if bySeq.late > 0 {
		w.t.Errorf("%d events first received after a higher sequence of their tenant; first: %s", bySeq.late, bySeq.first)
	}
	if byProduce.late > 0 {
		w.t.Errorf("%d events first received after one of their tenant produced later; first: %s", byProduce.late, byProduce.first)
	}
	return got
}

// commitPause checks that the subscriptions of affected (every one when
// nil) resumed within the lease plus 5 s of the kill at killed. A pause is
// the gap across the kill between a subscription's last attempt before it
// and its first after (sink.pauses): never shorter than the wait from the
// kill to that first attempt. It returns the longest.
func (w *world) commitPause(killed time.Time, affected []string) time.Duration {
	w.t.Helper()
	pauses := w.sink.pauses(killed)
	if affected != nil {
		keep := make(map[string]time.Duration)
		for _, tenant := range affected {
			if d, ok := pauses[tenant]; ok {
				keep[tenant] = d
			}
		}
		pauses = keep
	}
	worst, each := longestPause(pauses)
	if worst == "" {
		w.t.Error("no subscription of the killed process was attempted both before and after the kill: none could pause")
		return 0
	}
	bound := lease + 5*time.Second
	fmt.Printf("   pause across the kill: longest %v (%s), median %v, shortest %v over %d subscriptions (bound: lease %v + 5s = %v)\n",
		pauses[worst].Round(time.Millisecond), worst, each[len(each)/2].Round(time.Millisecond), each[0].Round(time.Millisecond),
		len(each), lease, bound)
	if pauses[worst] > bound {
		w.t.Errorf("the subscription of %s paused %v across the kill, more than the lease plus 5 s (%v)", worst, pauses[worst], bound)
	}
	return pauses[worst]
}

// crashCase is one kill -9 of a lone replica under load, and its restart
// in place (world.restart, without the crash point).
type crashCase struct {
	name string
	// crashAt is the first run's STREAMING_HUB_CRASH_AT (NAME:N); when it
	// is empty the test kills the process itself once kill returns.
	crashAt string
	kill    func(w *world)
	delay   time.Duration // how long the sink takes to answer
	events  int
	rate    int // events a second
	// unwritten: the killed process certainly held answered results not
	// yet written, so some events must have been received twice.
	unwritten bool
}

// crashAndRestart runs c and checks every invariant.
func crashAndRestart(t *testing.T, c crashCase) {
	w, db := newCommitWorld(t, c.delay)
	p := w.start("STREAMING_HUB_CRASH_AT=" + c.crashAt)
	bornBefore := scrape(p, bornSeries)
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(c.events, c.rate); close(produced) }()

	if c.crashAt == "" {
		c.kill(w)
		p.kill()
	} else {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the crash point %s was not reached in 30 s", c.crashAt)
		}
	}
	killed := time.Now()
	heldAtKill := w.jobFigures(db).inFlight // the killed process's leases: no other process runs
	receivedBefore, inFlightBefore := 0, w.sink.inFlight()
	for _, r := range w.sink.snapshot() {
		if r.ok {
			receivedBefore++
		}
	}
	if c.crashAt != "" {
		name, n, _ := strings.Cut(c.crashAt, ":")
		line := fmt.Sprintf("crashpoint %s reached (%s): SIGKILL", name, n)
		if !strings.Contains(p.logs.String(), line) {
			t.Fatalf("the process died, but not at its crash point (no %q):\n%s", line, p.logs)
		}
	}
	if receivedBefore == 0 {
		t.Errorf("nothing was delivered before the kill: the scenario proves little")
	}
	born := bornBefore()
	p = w.restartWith(p, "STREAMING_HUB_CRASH_AT=")
	ready := time.Since(killed)
	<-produced
	got := w.commitCheck(c.name, ids, db)
	fmt.Printf("   killed after %d receipts (%d requests at the sink then), %d jobs in flight in the database; ready again %v after the kill\n",
		receivedBefore, inFlightBefore, heldAtKill, ready.Round(time.Millisecond))
	w.commitPause(killed, nil)

	bornAfter, redelivered, fenced := metric(t, p, bornSeries), metric(t, p, unwrittenSeries), metric(t, p, fencedSeries)
	fmt.Printf("   jobs born: %v before the kill, %v after the restart; redeliveries counted by the restarted process: unwritten_result %v (jobs in flight at the kill: %d), fenced %v; duplicates %d\n",
		born, bornAfter, redelivered, heldAtKill, fenced, got.duplicated)
	if born == 0 {
		t.Error("no job was born leased before the kill: the scenario proved nothing")
	}
	if bornAfter == 0 {
		t.Error("no job was born leased after the restart")
	}
	// Every job the killed process held is recovered by the restarted
	// one, and counted once.
	if heldAtKill == 0 {
		t.Error("the killed process held no job: nothing to recover, the scenario proved little")
	}
	if int(redelivered) != heldAtKill {
		t.Errorf("the restarted process counted %v redeliveries (unwritten_result) for %d jobs the killed one held", redelivered, heldAtKill)
	}
	if c.unwritten && got.duplicated == 0 {
		t.Error("the killed process held answered results not yet written, yet no event was received twice")
	}
}

// kill -9 right after an ingest commit, its born jobs not yet handed to
// the dispatcher (step 3): the 150th transaction that leased jobs at birth
// kills the process, after many deliveries. Its born jobs are leased to a
// dead process; once the lease ends the restarted process recovers them
// and sends them, in order.
func TestCommitKillAfterIngestCommitWithBornJobs(t *testing.T) {
	crashAndRestart(t, crashCase{name: "kill -9 after an ingest commit, born jobs in memory (crash point born:150); restart",
		crashAt: "born:150", delay: 100 * time.Millisecond, events: 480, rate: 60})
}

// kill -9 during attempts (step 4): receivers take 200 ms, and the process
// is killed once several requests are in flight at the sink.
func TestCommitKillDuringAttempts(t *testing.T) {
	crashAndRestart(t, crashCase{name: "kill -9 during attempts (200 ms receivers); restart",
		delay: 200 * time.Millisecond, events: 400, rate: 25,
		kill: func(w *world) {
			w.waitFor("100 requests, then 3 at the sink at once", func() bool {
				return w.sink.tally(nil).requests >= 100 && w.sink.inFlight() >= 3
			})
		}})
}

// kill -9 with answered results not yet written (step 5): the 120th batch
// of results about to be written kills the process. Those jobs are still
// leased in the database; the restarted process recovers them, sends them
// again and counts them in redeliveries{reason="unwritten_result"}.
func TestCommitKillWithUnwrittenResults(t *testing.T) {
	crashAndRestart(t, crashCase{name: "kill -9 with answered results unwritten (crash point unwritten:120); restart",
		crashAt: "unwritten:120", delay: 100 * time.Millisecond, events: 480, rate: 60, unwritten: true})
}

// kill -9 with a merged batch in hand (steps 1 and 5 at once): the 40th
// batch that carries both records (their ingest and born jobs) and
// answered results kills the process before its transaction. Neither is
// written: the records are consumed again from the last committed
// offsets, and the answered jobs, still leased, are recovered and sent
// again.
func TestCommitKillWithAMergedBatchInFlight(t *testing.T) {
	crashAndRestart(t, crashCase{name: "kill -9 with a merged batch of records and results unwritten (crash point merged:40); restart",
		crashAt: "merged:40", delay: 100 * time.Millisecond, events: 480, rate: 60, unwritten: true})
}

// kill -9 right after a batch of results was written (step 6), before the
// jobs the same transaction claimed were queued: the 120th batch written
// kills the process.
func TestCommitKillAfterResultsWritten(t *testing.T) {
	crashAndRestart(t, crashCase{name: "kill -9 right after a batch of results was written (crash point written:120); restart",
		crashAt: "written:120", delay: 100 * time.Millisecond, events: 480, rate: 60})
}

// orphaned reads, right after a kill, the tenants whose in-flight jobs
// were held by the killed process, and how many jobs: those whose lease
// is not renewed in the next second (a live process renews its leases
// every sixth of one), while none has expired yet.
func orphaned(t *testing.T, db *pgxpool.Pool) (tenants []string, jobs int) {
	t.Helper()
	read := func() map[string]string {
		rows, err := db.Query(context.Background(), `SELECT id, tenant_id, lease_token, lease_expires_at::text
			FROM delivery_jobs WHERE status = 'in_flight'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := make(map[string]string)
		for rows.Next() {
			var id, tenant, token, expires string
			if err := rows.Scan(&id, &tenant, &token, &expires); err != nil {
				t.Fatal(err)
			}
			out[id] = tenant + " " + token + " " + expires
		}
		return out
	}
	before := read()
	time.Sleep(lease / 3)
	seen := make(map[string]bool)
	for id, held := range read() {
		if before[id] == held {
			jobs++
			seen[strings.Fields(held)[0]] = true
		}
	}
	for tenant := range seen {
		tenants = append(tenants, tenant)
	}
	sort.Strings(tenants)
	return tenants, jobs
}

// Three replicas on one database and consumer group, each leasing jobs at
// birth; one is killed with -9 mid-load and not restarted: the two others
// take over its Kafka partitions and, once its leases end, its jobs,
// within the lease plus 5 s.
func TestCommitKillOneOfThreeReplicas(t *testing.T) {
	w, db := newCommitWorld(t, 100*time.Millisecond)
	procs := []*proc{w.start(), w.start(), w.start()}
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(600, 40); close(produced) }()
	w.waitFor("150 requests before the kill", func() bool { return w.sink.tally(nil).requests >= 150 })
	// The victim: the replica with the most partitions (the most births).
	victim := 0
	var born [3]float64
	for i, p := range procs {
		born[i] = metric(t, p, bornSeries)
		if metric(t, p, `streaming_hub_partitions_assigned`) > metric(t, procs[victim], `streaming_hub_partitions_assigned`) {
			victim = i
		}
	}
	procs[victim].kill()
	killed := time.Now()
	affected, held := orphaned(t, db)
	<-produced
	w.commitCheck("three replicas leasing jobs at birth, one killed with -9 mid-load, not restarted", ids, db)
	fmt.Printf("   replica %d killed; it held %d jobs of %d subscriptions %v\n", victim+1, held, len(affected), affected)
	if held == 0 {
		t.Error("the killed replica held no job: the scenario proves little")
	}
	if len(affected) > 0 {
		w.commitPause(killed, affected)
	}
	var redelivered float64
	for i, p := range procs {
		if i != victim {
			born[i] = metric(t, p, bornSeries)
			redelivered += metric(t, p, unwrittenSeries)
		}
	}
	fmt.Printf("   jobs born per replica %v (replica %d's read before its kill); redeliveries (unwritten_result) counted by the two others: %v for %d jobs held\n",
		born, victim+1, redelivered, held)
	for i, n := range born {
		if n == 0 {
			t.Errorf("no job was born leased on replica %d", i+1)
		}
	}
	if int(redelivered) != held {
		t.Errorf("the surviving replicas counted %v redeliveries (unwritten_result) for the %d jobs the killed one held", redelivered, held)
	}
}

// PostgreSQL backends of the hub terminated while results are written
// behind: a result batch whose write fails is retried, its leases held, and
// nothing is lost, attempted twice at once or overtaken, and every job ends
// succeeded. (The suite shares one PostgreSQL server, which it cannot
// restart: terminating the hub's backends, every connection of its pool at
// once, is the stand-in for a database that goes away and comes back.)
func TestCommitDatabaseBackendsTerminatedDuringWriteBehind(t *testing.T) {
	w, db := newCommitWorld(t, 5*time.Millisecond)
	app := fmt.Sprintf("hub-commit-%d", time.Now().UnixNano())
	u, _ := url.Parse(w.dbURL)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	p := w.start("STREAMING_HUB_DATABASE_URL=" + u.String())
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(600, 50); close(produced) }()
	w.waitFor("50 requests before the first cut", func() bool { return w.sink.tally(nil).requests >= 50 })
	cuts, rounds := 0, 0
	for range 8 {
		time.Sleep(time.Second)
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
			app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		cuts += n
		rounds++
	}
	<-produced
	name := fmt.Sprintf("%d PostgreSQL backends of the hub terminated in %d rounds, once a second, during write-behind", cuts, rounds)
	got := w.commitCheck(name, ids, db)
	writes := failedWrites(p.logs)
	born, redelivered, fenced := metric(t, p, bornSeries), metric(t, p, unwrittenSeries), metric(t, p, fencedSeries)
	fmt.Printf("   %s\n   jobs born %v; redeliveries unwritten_result %v, fenced %v; duplicates %d\n",
		writes, born, redelivered, fenced, got.duplicated)
	if cuts == 0 {
		t.Error("no backend was terminated: the scenario proved nothing")
	}
	if writes.lines == 0 {
		t.Error("no result write failed: no cut came while results were written, the scenario proved little")
	}
	if writes.duplicates > 0 {
		t.Errorf("%d lines with a duplicate key (SQLSTATE 23505), e.g. %s", writes.duplicates, writes.duplicateLine)
	}
	if born == 0 {
		t.Error("no job was born leased: the scenario proved nothing")
	}
}

// Three replicas on a new schema, under load and with nothing broken, while
// the first replica's partition pass makes the weeks ahead (newCommitWorld
// makes them beforehand; this one does not): no lease may lapse under a
// live process, so no job is recovered, fenced or sent twice
// (docs/architecture.md, "The writer": a job is sent again only
// after its process died or lost the database for most of a lease).
func TestCommitLeasesKeptWhileTheFirstPartitionPassRuns(t *testing.T) {
	w := newWorld(t, commitTenants, 4, 0)
	w.sink.delay = 50 * time.Millisecond
	db := w.admin()
	// The load begins as soon as the first replica is ready, its partition
	// pass under way; the two others join it.
	procs := []*proc{w.start()}
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(600, 60); close(produced) }()
	procs = append(procs, w.start(), w.start())
	<-produced
	got := w.commitCheck("three replicas on a new schema while the first partition pass runs under load, nothing broken", ids, db)
	var redelivered, fenced float64
	for i, p := range procs {
		r, f := metric(t, p, unwrittenSeries), metric(t, p, fencedSeries)
		fmt.Printf("   replica %d: jobs born %v; redeliveries unwritten_result %v, fenced %v\n", i+1, metric(t, p, bornSeries), r, f)
		redelivered, fenced = redelivered+r, fenced+f
	}
	if got.duplicated > 0 || redelivered > 0 || fenced > 0 {
		t.Errorf("with no process killed and the database up, %d events were received twice, %v jobs recovered from a live process's lapsed lease (unwritten_result) and %v results fenced",
			got.duplicated, redelivered, fenced)
	}
}

// The answer of a merged batch's COMMIT lost (records, their births and
// answered results committed; the connection gone before the writer
// heard): the 40th merged batch committed loses its answer
// (STREAMING_HUB_CRASH_AT=lostcommit:40), the process lives on. The writer
// finds what the batch leased by its tokens, asks which results were
// written after all, and writes its records again, deduplicated: nothing
// is lost, sent twice, refused as a duplicate or overtaken.
func TestCommitAnswerOfAMergedBatchLost(t *testing.T) {
	w, db := newCommitWorld(t, 100*time.Millisecond)
	p := w.start("STREAMING_HUB_CRASH_AT=lostcommit:40")
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(480, 60); close(produced) }()
	const line = "crashpoint lostcommit reached (40): answer lost"
	w.waitFor("the 40th merged batch's answer lost", func() bool { return strings.Contains(p.logs.String(), line) })
	<-produced
	got := w.commitCheck("the answer of a merged batch's COMMIT lost (crash point lostcommit:40), the process lives on", ids, db)
	writes := failedWrites(p.logs)
	redelivered, fenced := metric(t, p, unwrittenSeries), metric(t, p, fencedSeries)
	fmt.Printf("   %s\n   redeliveries unwritten_result %v, fenced %v; duplicates %d\n", writes, redelivered, fenced, got.duplicated)
	if got.duplicated > 0 || redelivered > 0 || fenced > 0 {
		t.Errorf("a lost answer made %d events received twice (%v, %v redeliveries counted): what it committed is found, not sent again",
			got.duplicated, redelivered, fenced)
	}
	if writes.duplicates > 0 {
		t.Errorf("%d lines with a duplicate key (SQLSTATE 23505), e.g. %s", writes.duplicates, writes.duplicateLine)
	}
}
