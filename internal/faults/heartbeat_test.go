//go:build faults

package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// The scenarios of this file break delivering processes at the DEFAULT
// heartbeat lease (docs/delivery.md, "Leases and crashes";
// docs/operations.md, "What a crash, a freeze and an outage cost"): the
// harness gives its processes a shorter lease, these run on the one a
// deployment gets. Each checks commitCheck's invariants (nothing lost, no
// overlapping attempts of one event or one ordered subscription, each
// tenant first received in order) and compares the events received again
// at the sink with the redeliveries the processes counted.

// defaultLease is the lease a deployment gets (5 s): renewed every second,
// a process stops attempting 3 s after its last renewal, and another takes
// its jobs over once its heartbeat is 4 s old on the database's clock.
var defaultLease = config.Defaults(config.Serve).Dispatch.Lease

// atDefaultLease undoes the harness's shorter lease (blank: the default).
const atDefaultLease = "STREAMING_HUB_DISPATCH_LEASE="

// resumeBound is how soon after a kill -9 every subscription must be
// attempted again (the issue: "every subscription resumes within 5 s").
const resumeBound = 5 * time.Second

// The series these scenarios read besides commit_test.go's.
const (
	recoveredSeries   = `streaming_hub_leases_recovered_total{result="recovered"}`
	fencesSeries      = `streaming_hub_heartbeat_fences_total`
	lostSeries        = `streaming_hub_heartbeats_total{outcome="lost"}`
	completionsSeries = `streaming_hub_completions_fenced_total`
)

// resumes is, for each subscription (tenant) attempted after the instant
// at, how long after at its first attempt came: a subscription that
// waited on the killed process's jobs waited that long from the kill.
func (s *sink) resumes(at time.Time) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Duration)
	for tenant, times := range s.arrivals {
		i := sort.Search(len(times), func(i int) bool { return times[i].After(at) })
		if i < len(times) {
			out[tenant] = times[i].Sub(at)
		}
	}
	return out
}

// counter sums a series over processes, each read by scrape (the last
// value read from a killed one).
type counter []func() float64

func (c counter) sum() float64 {
	var n float64
	for _, f := range c {
		n += f()
	}
	return n
}

// heartbeatKill is one kill -9 of one of procs serve processes at the
// default lease.
type heartbeatKill struct {
	procs        int
	delay        time.Duration // how long the receivers take to answer
	events, rate int           // rate above what 8 ordered subscriptions at delay take: a backlog
	killAfter    int           // requests at the sink before the kill
}

func TestHeartbeatKill9(t *testing.T) {
	for _, c := range []heartbeatKill{
		{procs: 1, delay: 0, events: 360, rate: 40, killAfter: 100},
		{procs: 1, delay: 200 * time.Millisecond, events: 360, rate: 120, killAfter: 100},
		{procs: 2, delay: 0, events: 360, rate: 40, killAfter: 100},
		{procs: 2, delay: 200 * time.Millisecond, events: 360, rate: 120, killAfter: 100},
		{procs: 3, delay: 0, events: 360, rate: 40, killAfter: 100},
		{procs: 3, delay: 200 * time.Millisecond, events: 360, rate: 120, killAfter: 100},
	} {
		receivers := "answering at once"
		if c.delay > 0 {
			receivers = fmt.Sprintf("%v receivers, a backlog", c.delay)
		}
		name := fmt.Sprintf("%d_of_%d_%s", 1, c.procs, strings.ReplaceAll(receivers, " ", "_"))
		t.Run(name, func(t *testing.T) { heartbeatKill9(t, c, receivers) })
	}
}

func heartbeatKill9(t *testing.T, c heartbeatKill, receivers string) {
	w, db := newCommitWorld(t, c.delay)
	var procs []*proc
	var unwritten counter
	for range c.procs {
		p := w.start(atDefaultLease)
		procs = append(procs, p)
		unwritten = append(unwritten, scrape(p, unwrittenSeries), scrape(p, fencedSeries))
	}
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(c.events, c.rate); close(produced) }()
	w.waitFor(fmt.Sprintf("%d requests before the kill", c.killAfter), func() bool { return w.sink.tally(nil).requests >= c.killAfter })
	// The victim: a process holding jobs in flight right now (the one
	// holding the most), so that its kill leaves work behind.
	names := w.dispatchers(db, len(procs))
	victim := -1
	w.waitFor("a process holding jobs in flight", func() bool {
		victim = w.holder(db, names)
		return victim >= 0
	})
	procs[victim].kill()
	killed := time.Now()
	heldAtKill := w.jobFigures(db).inFlight
	heldByVictim := w.heldBy(db, names[victim])
	var ready time.Duration
	if c.procs == 1 { // restarted in place, as a supervisor does
		procs[victim] = w.restart(procs[victim])
		ready = time.Since(killed)
		unwritten = append(unwritten, scrape(procs[victim], unwrittenSeries), scrape(procs[victim], fencedSeries))
	}
	<-produced
	name := fmt.Sprintf("kill -9 of 1 of %d serve processes (default lease %v), receivers %s", c.procs, defaultLease, receivers)
	got := w.commitCheck(name, ids, db)

	resumes := w.sink.resumes(killed)
	worst, each := longestPause(resumes)
	gaps := w.sink.pauses(killed)
	gapWorst, _ := longestPause(gaps)
	var recovered float64
	for i, p := range procs {
		if c.procs > 1 && i == victim {
			continue
		}
		recovered += metric(t, p, recoveredSeries)
	}
	counted := unwritten.sum()
	fmt.Printf("   killed process %d of %d after %d requests; %d jobs in flight in the database then, %d of them its", victim+1, c.procs, c.killAfter, heldAtKill, heldByVictim)
	if c.procs == 1 {
		fmt.Printf("; restarted, ready again %v after the kill", ready.Round(time.Millisecond))
	}
	fmt.Println()
	if worst == "" {
		t.Fatal("no subscription was attempted after the kill: the scenario proved nothing")
	}
	fmt.Printf("   resumed after the kill: worst %v (%s), median %v, over %d subscriptions (bound %v); longest gap across the kill %v (%s)\n",
		resumes[worst].Round(time.Millisecond), worst, each[len(each)/2].Round(time.Millisecond), len(each), resumeBound,
		gaps[gapWorst].Round(time.Millisecond), gapWorst)
	fmt.Printf("   re-sends seen at the sink %d; redeliveries counted (unwritten_result and fenced, every process) %v; leases recovered by the others %v\n",
		got.duplicated, counted, recovered)
	if len(each) < commitTenants {
		t.Errorf("only %d of %d subscriptions were attempted after the kill: the load ended too soon to show them resume", len(each), commitTenants)
	}
	if resumes[worst] > resumeBound {
		t.Errorf("the subscription of %s resumed %v after the kill, more than %v", worst, resumes[worst], resumeBound)
	}
	if heldByVictim == 0 {
		t.Error("the killed process held no job in flight: nothing to take over, the scenario proved little")
	}
	if recovered == 0 {
		t.Error("no job of the killed process was taken over")
	}
	w.checkResends(db, got, counted)
}

// A process frozen (SIGSTOP) well past its heartbeat's lapse, then
// continued: its jobs are taken over by the other while it sleeps, it
// stops attempting when it wakes (fence) and finds its row gone, and its
// late results are not recorded; no event or ordered subscription is
// attempted twice at once at the receiver.
func TestHeartbeatFrozenProcess(t *testing.T) {
	w, db := newCommitWorld(t, 100*time.Millisecond)
	procs := []*proc{w.start(atDefaultLease), w.start(atDefaultLease)}
	var unwritten counter
	for _, p := range procs {
		unwritten = append(unwritten, scrape(p, unwrittenSeries), scrape(p, fencedSeries))
	}
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(600, 40); close(produced) }()
	w.waitFor("100 requests before the freeze", func() bool { return w.sink.tally(nil).requests >= 100 })
	names := w.dispatchers(db, len(procs))
	frozen := -1
	w.waitFor("a process holding jobs in flight", func() bool {
		frozen = w.holder(db, names)
		return frozen >= 0
	})
	other := 1 - frozen
	const freeze = 8 * time.Second
	if err := procs[frozen].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	heldByFrozen := w.heldBy(db, names[frozen]) // nothing of it changes while it is stopped, before its lapse
	time.Sleep(freeze)
	if err := procs[frozen].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued := time.Now()
	<-produced
	got := w.commitCheck(fmt.Sprintf("one of two serve processes frozen (SIGSTOP) for %v at the default lease %v, then continued", freeze, defaultLease), ids, db)
	resumes := w.sink.resumes(stopped)
	worst, _ := longestPause(resumes)
	p, o := procs[frozen], procs[other]
	fences, lost, late := metric(t, p, fencesSeries), metric(t, p, lostSeries), metric(t, p, completionsSeries)
	recovered, counted := metric(t, o, recoveredSeries), unwritten.sum()
	fmt.Printf("   frozen process held %d jobs in flight; frozen %v; worst resume after the freeze %v (%s); the other took over %v jobs\n",
		heldByFrozen, continued.Sub(stopped).Round(time.Millisecond), resumes[worst].Round(time.Millisecond), worst, recovered)
	fmt.Printf("   the frozen process on waking: fences %v, renewals that found its row gone %v, late results not recorded %v\n", fences, lost, late)
	fmt.Printf("   re-sends seen at the sink %d; redeliveries counted %v\n", got.duplicated, counted)
	if recovered == 0 {
		t.Error("the other process took no job of the frozen one over")
	}
	if lost == 0 {
		t.Error("the frozen process never found its heartbeat taken over")
	}
	if fences == 0 && late == 0 {
		t.Error("the frozen process neither fenced its attempts nor had a late result refused")
	}
	if !strings.Contains(p.logs.String(), "its jobs were taken over by another process") {
		t.Errorf("the frozen process did not log its take-over:\n%s", p.logs)
	}
	if worst != "" && resumes[worst] > resumeBound {
		t.Errorf("the subscription of %s resumed %v after the freeze, more than %v", worst, resumes[worst], resumeBound)
	}
	w.checkResends(db, got, counted)
}

// pgProxy stands between the hub and PostgreSQL: down severs every
// connection and refuses new ones, as a PostgreSQL restart does (its
// backends end, connections are refused until it is back). The suite
// shares one PostgreSQL server with others and cannot restart it.
type pgProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func newPGProxy(t *testing.T, target string) *pgProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, target: target, conns: make(map[net.Conn]bool)}
	t.Cleanup(func() { ln.Close(); p.sever() })
	go p.serve()
	return p
}

func (p *pgProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *pgProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[up] = true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// sever closes every connection.
func (p *pgProxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// outage takes the database away for d.
func (p *pgProxy) outage(d time.Duration) {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.sever()
	time.Sleep(d)
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// through is url with its host replaced by the proxy's.
func (p *pgProxy) through(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// The database goes away (every connection of two serve processes severed,
// new ones refused) for 1 s and 3 s, less than the default lease, and for
// 8 s, more: below the lease no answered job is sent again; above it, what
// is re-sent is what docs/operations.md says (the attempts canceled at the
// fence), and the redeliveries counted are compared with the re-sends.
func TestHeartbeatDatabaseOutage(t *testing.T) {
	for _, outage := range []time.Duration{time.Second, 3 * time.Second, 8 * time.Second} {
		t.Run(outage.String(), func(t *testing.T) { databaseOutage(t, outage) })
	}
}

func databaseOutage(t *testing.T, outage time.Duration) {
	// 200 ms receivers and a backlog: runs are attempting when the
	// database goes, and go on without it until the fence.
	w, db := newCommitWorld(t, 200*time.Millisecond)
	u, err := url.Parse(w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newPGProxy(t, u.Host)
	through := "STREAMING_HUB_DATABASE_URL=" + proxy.through(t, w.dbURL)
	procs := []*proc{w.start(atDefaultLease, through), w.start(atDefaultLease, through)}
	var unwritten counter
	for _, p := range procs {
		unwritten = append(unwritten, scrape(p, unwrittenSeries), scrape(p, fencedSeries))
	}
	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produce(480, 120); close(produced) }()
	w.waitFor("100 requests before the outage", func() bool { return w.sink.tally(nil).requests >= 100 })
	began := time.Now()
	proxy.outage(outage)
	back := time.Now()
	<-produced
	got := w.commitCheck(fmt.Sprintf("the database away for %v (every connection of two serve processes severed, new ones refused; default lease %v)",
		outage, defaultLease), ids, db)
	resumes := w.sink.resumes(back)
	worst, _ := longestPause(resumes)
	var fences, recovered float64
	for _, p := range procs {
		fences += metric(t, p, fencesSeries)
		recovered += metric(t, p, recoveredSeries)
	}
	counted := unwritten.sum()
	fmt.Printf("   away %v (200 ms receivers, a backlog); worst resume after it was back %v (%s); fences %v; leases recovered %v\n",
		back.Sub(began).Round(time.Millisecond), resumes[worst].Round(time.Millisecond), worst, fences, recovered)
	fmt.Printf("   re-sends seen at the sink %d; redeliveries counted %v\n", got.duplicated, counted)
	// Nothing answered is sent again: what is re-sent are only the
	// attempts in flight when a process stopped attempting (its fence, 3 s
	// after its last renewal that went through, so an outage of 2 s or
	// more may reach it), each counted once by that process. A shorter
	// outage re-sends nothing.
	if outage < defaultLease-3*defaultLease/5 && (fences > 0 || got.duplicated > 0) {
		t.Errorf("the database was away %v, less than the fence less a renewal period: %v fences, %d events received again", outage, fences, got.duplicated)
	}
	if fences == 0 && got.duplicated > 0 {
		t.Errorf("the database was away %v and no process fenced its attempts, yet %d events were received again", outage, got.duplicated)
	}
	if recovered > 0 {
		t.Errorf("both processes lived through the outage, yet %v of their jobs were taken over", recovered)
	}
	if n := w.checkResends(db, got, counted); n > 0 {
		t.Errorf("%d answered events were received again after the outage (no job was taken over, only canceled attempts may be re-sent)", n)
	}
	if outage > defaultLease && fences == 0 {
		t.Errorf("the database was away %v, longer than the lease, and no process fenced its attempts", outage)
	}
}

// dispatchers are the names of the n processes' heartbeats, in the order
// the processes started (world.start waits for each to be ready, its
// heartbeat registered, before the next).
func (w *world) dispatchers(db *pgxpool.Pool, n int) []string {
	w.t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id FROM dispatchers ORDER BY started_at, id`)
	if err != nil {
		w.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		w.t.Fatal(err)
	}
	if len(names) != n {
		w.t.Fatalf("%d heartbeats for %d processes: %v", len(names), n, names)
	}
	return names
}

// holder is the process (its index in names) holding the most jobs in
// flight now, -1 when none holds any.
func (w *world) holder(db *pgxpool.Pool, names []string) int {
	var name string
	err := db.QueryRow(context.Background(), `SELECT leased_by FROM delivery_jobs WHERE status = 'in_flight' AND leased_by = ANY($1)
		GROUP BY leased_by ORDER BY count(*) DESC LIMIT 1`, names).Scan(&name)
	if err != nil {
		return -1
	}
	return slices.Index(names, name)
}

// heldBy counts the jobs in flight under a process's heartbeat.
func (w *world) heldBy(db *pgxpool.Pool, name string) int {
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM delivery_jobs WHERE status = 'in_flight' AND leased_by = $1`,
		name).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// checkResends compares the events received again at the sink with the
// redeliveries counted (streaming_hub_redeliveries_total, both reasons,
// summed over the processes). A process that takes a dead one's jobs over
// counts, per ordered subscription, the first job it held (the one that may
// have been under way; its job's recoveries go up by one) and every
// unordered job; a process that canceled attempts at its heartbeat's fence
// counts each when it writes it back (its attempt log holds the canceled
// attempt). The figures may differ by design in two ways, both printed:
//
//   - uncounted run re-sends: a run's later jobs answered before the
//     kill whose results were not yet written (results are written behind)
//     are sent again but not counted: the database cannot tell them from
//     the run's jobs never started;
//   - counted, not re-sent: a counted job whose attempt never reached the
//     receiver.
//
// What must hold: every event received again belongs to a subscription
// with a counted redelivery at or before it (a re-send nobody counted is
// an error), and the metric equals what the database recorded.
func (w *world) checkResends(db *pgxpool.Pool, got tally, counted float64) (uncountedRun int) {
	w.t.Helper()
	// A job's redeliveries in the database: its recoveries, or its attempts
	// canceled at a fence, whichever is more. An attempt is logged even
	// when its result is fenced (the request was sent): the attempt a
	// frozen process canceled on waking is logged beside the recovery of
	// the process that took its job over, one redelivery counted once.
	rows, err := db.Query(context.Background(), `SELECT j.tenant_id, j.event_id, j.event_sequence, greatest(j.recoveries, (SELECT count(*)
		FROM delivery_attempts a WHERE a.job_id = j.id AND a.error LIKE 'canceled: this process could not renew its heartbeat%'))
		FROM delivery_jobs j`)
	if err != nil {
		w.t.Fatal(err)
	}
	type job struct {
		tenant string
		seq    int64
		n      int // redeliveries counted for it
	}
	jobs := make(map[string]job)
	firstCounted := make(map[string]int64) // tenant -> lowest sequence of a counted job
	recorded := 0
	for rows.Next() {
		var j job
		var event string
		if err := rows.Scan(&j.tenant, &event, &j.seq, &j.n); err != nil {
			w.t.Fatal(err)
		}
		jobs[j.tenant+"/"+event] = j
		if j.n > 0 {
			recorded += j.n
			if s, ok := firstCounted[j.tenant]; !ok || j.seq < s {
				firstCounted[j.tenant] = j.seq
			}
		}
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	oks := make(map[string]int)
	for _, r := range w.sink.snapshot() {
		if r.ok {
			oks[r.tenant+"/"+r.event]++
		}
	}
	resent, ofCounted, uncountedRun, stray := 0, 0, 0, []string{}
	for k, n := range oks {
		if n < 2 {
			continue
		}
		resent += n - 1
		j := jobs[k]
		first, ok := firstCounted[j.tenant]
		switch {
		case j.n > 0:
			ofCounted += n - 1
		case ok && j.seq > first:
			uncountedRun += n - 1
		default:
			stray = append(stray, k)
		}
	}
	sort.Strings(stray)
	countedNotResent := 0
	for k, j := range jobs {
		if j.n > 0 && oks[k] < 2 {
			countedNotResent++
		}
	}
	fmt.Printf("   re-sends %d = %d of counted jobs + %d later jobs of their runs answered but unwritten (uncounted by design) + %d with no counted redelivery; counted %v (recorded in the database %d), of which not re-sent %d\n",
		resent, ofCounted, uncountedRun, len(stray), counted, recorded, countedNotResent)
	if resent != got.duplicated {
		w.t.Errorf("the receipts count %d re-sends, the tally %d", resent, got.duplicated)
	}
	if len(stray) > 0 {
		w.t.Errorf("%d events were received again with no redelivery counted for their subscription at or before them, e.g. %v",
			len(stray), stray[:min(5, len(stray))])
	}
	if int(counted) != recorded {
		w.t.Errorf("%v redeliveries counted, %d recorded in the database (recoveries, attempts canceled at the fence)", counted, recorded)
	}
	return uncountedRun
}
