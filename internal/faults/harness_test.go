//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const topic = "lerian.streaming.ledger_transaction.posted"

// binary is the streaming-hub built once for the suite.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "streaming-hub-faults-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "streaming-hub")
	// With the tag faults, STREAMING_HUB_CRASH_AT makes a process kill
	// itself at a named step of the commit protocol (internal/crashpoint).
	build := exec.Command("go", "build", "-tags", "faults", "-o", binary, "../../cmd/streaming-hub")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var kek = bytes.Repeat([]byte{42}, 32)

// world is one scenario's infrastructure: a PostgreSQL schema with tenants
// and verified subscriptions to a local sink, and a Kafka broker.
type world struct {
	t       *testing.T
	dbURL   string
	db      *postgres.DB
	kafka   *kfake.Cluster
	prod    *kgo.Client
	sink    *sink
	tenants []string
	group   string
	// replicas counts the hub replicas started: each has an instance id of
	// its own (STREAMING_HUB_KAFKA_INSTANCE_ID), kept across its restarts.
	replicas int
}

// lease is the dispatch lease the harness gives every hub process; a
// killed process's jobs wait for it to expire.
const lease = 3 * time.Second

func newWorld(t *testing.T, tenants, partitions int, failRate float64) *world {
	w := &world{t: t, dbURL: testkit.PostgresPoolURL(t), group: "faults-" + strings.ReplaceAll(t.Name(), "/", "-")}
	ctx := context.Background()
	var err error
	if w.db, err = postgres.Open(ctx, w.dbURL, store.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.db.Close() })
	if err := w.db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w.kafka = testkit.Kafka(t, int32(partitions), topic)
	w.prod = testkit.Producer(t, w.kafka)
	w.sink = newSink(t, failRate)
	for i := range tenants {
		id := fmt.Sprintf("tenant-%02d", i)
		w.tenants = append(w.tenants, id)
		w.addTenant(id, w.sink.URL)
	}
	return w
}

// addTenant stores a tenant with one verified subscription (max_in_flight
// 1) to url.
func (w *world) addTenant(id, url string) {
	t, ctx := w.t, context.Background()
	keyring, err := envelope.NewKeyring(kek)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.CreateTenant(ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil {
		t.Fatal(err)
	}
	s := hub.Subscription{
		ID: hub.NewID("sub", time.Now()), TenantID: id, Name: "faults",
		EventTypes:  []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
		Destination: hub.Destination{Type: "webhook", URL: url},
		// Short, many steps: a flaky destination gets through.
		RetrySchedule: []string{"1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"},
		MaxInFlight:   1, Enabled: true, VerificationState: hub.VerificationActive,
	}
	if err := destination.SealSecrets(keyring, &s, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: destination.NewSecret()}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.CreateSubscription(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// produce sends n events round-robin over the tenants (key = tenant) at
// about rate per second, and returns their ids.
func (w *world) produce(n, rate int) []string {
	ids := make([]string, 0, n)
	every, perTick := 10*time.Millisecond, max(rate/100, 1)
	if rate > 0 && rate < 100 { // one event a tick, the ticks further apart
		every = time.Second / time.Duration(rate)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; i < n; {
		<-tick.C
		var recs []*kgo.Record
		for j := 0; j < perTick && i < n; j, i = j+1, i+1 {
			tenant := w.tenants[i%len(w.tenants)]
			id := fmt.Sprintf("evt-%06d", i)
			ids = append(ids, id)
			r := testkit.CERecord(topic, 0, tenant, id)
			r.Partition = int32(i % len(w.tenants) % w.partitions())
			recs = append(recs, r)
		}
		testkit.Produce(w.t, w.prod, recs...)
	}
	return ids
}

func (w *world) partitions() int {
	return len(w.kafka.PartitionInfos(topic))
}

// proc is one streaming-hub serve process.
type proc struct {
	cmd     *exec.Cmd
	addr    string
	logs    *bytes.Buffer
	done    chan struct{}
	replica string   // its STREAMING_HUB_KAFKA_INSTANCE_ID
	extra   []string // the variables it was started with, for a restart
}

// start runs `streaming-hub serve` as a new replica (with an instance id of
// its own) against the world and waits until it is ready.
func (w *world) start(extra ...string) *proc {
	w.t.Helper()
	w.replicas++
	return w.run(fmt.Sprintf("hub-%d", w.replicas), extra)
}

// restart runs p's replica again, as a supervisor restarts a process in
// place (the same pod): the same instance id and variables.
func (w *world) restart(p *proc) *proc {
	w.t.Helper()
	return w.run(p.replica, p.extra)
}

// restartWith is restart with more variables, which win over p's: a
// process that killed itself at a crash point comes back without it
// (STREAMING_HUB_CRASH_AT=).
func (w *world) restartWith(p *proc, extra ...string) *proc {
	w.t.Helper()
	return w.run(p.replica, append(slices.Clone(p.extra), extra...))
}

// run starts the replica and waits until it is ready; extra variables win
// over the harness's.
func (w *world) run(replica string, extra []string) *proc {
	w.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := append(os.Environ(),
		"STREAMING_HUB_DATABASE_URL="+w.dbURL,
		"STREAMING_HUB_KAFKA_BROKERS="+strings.Join(w.kafka.ListenAddrs(), ","),
		"STREAMING_HUB_KAFKA_GROUP="+w.group,
		"STREAMING_HUB_KAFKA_SESSION_TIMEOUT=1500ms",
		"STREAMING_HUB_KAFKA_INSTANCE_ID="+replica,
		"STREAMING_HUB_KEK="+base64.StdEncoding.EncodeToString(kek),
		"STREAMING_HUB_ADMIN_TOKEN=faults-admin-token-0123456789",
		"STREAMING_HUB_ALLOW_PRIVATE_SINKS=true",
		"STREAMING_HUB_HTTP_ADDR="+addr,
		"STREAMING_HUB_DISPATCH_LEASE="+lease.String(),
		"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS=50",
		"STREAMING_HUB_DISPATCH_WORKERS=16",
		"STREAMING_HUB_SHUTDOWN_TIMEOUT=5s",
		"STREAMING_HUB_LOG_LEVEL=warn",
	)
	env = append(env, extra...)
	p := &proc{addr: addr, logs: &bytes.Buffer{}, done: make(chan struct{}), replica: replica, extra: extra}
	p.cmd = exec.Command(binary, "serve")
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() { p.kill() })
	testkit.WaitFor(w.t, "the hub to be ready", func() bool {
		select {
		case <-p.done:
			w.t.Fatalf("hub exited:\n%s", p.logs)
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// kill is kill -9: no shutdown, no commits, no goodbyes.
func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// stop is a graceful stop (SIGTERM).
func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// sink is the destination: it counts deliveries per event, fails a share of
// requests at random, and watches for an event (or a subscription) being
// attempted twice at the same time.
type sink struct {
	*httptest.Server
	failRate float64

	mu          sync.Mutex
	counts      map[string]int // event id -> successful deliveries
	requests    int
	failed      int
	activeEvent map[string]int
	activeSub   map[string]int
	overlaps    int                    // an event, or a max_in_flight 1 subscription, attempted concurrently
	arrivals    map[string][]time.Time // tenant (one subscription each) -> when each attempt arrived
	receipts    []receipt              // every request in the order it arrived, ok once answered 2xx (checkOrder)
	rnd         func() float64
	delay       time.Duration // how long each answer takes (1ms when zero)
}

func newSink(t *testing.T, failRate float64) *sink {
	s := &sink{failRate: failRate, counts: make(map[string]int), activeEvent: make(map[string]int), activeSub: make(map[string]int),
		arrivals: make(map[string][]time.Time)}
	var rmu sync.Mutex
	seed := uint64(12345)
	s.rnd = func() float64 { // a small, seeded, lock-protected generator
		rmu.Lock()
		defer rmu.Unlock()
		seed = seed*6364136223846793005 + 1442695040888963407
		return float64(seed>>11) / (1 << 53)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	ev, tenant := r.Header.Get("X-Lerian-Event-Id"), r.Header.Get("X-Lerian-Tenant-Id")
	seq, _ := strconv.ParseInt(r.Header.Get("X-Lerian-Sequence"), 10, 64)
	s.mu.Lock()
	s.requests++
	at := len(s.receipts)
	s.receipts = append(s.receipts, receipt{tenant: tenant, event: ev, seq: seq})
	s.arrivals[tenant] = append(s.arrivals[tenant], time.Now())
	s.activeEvent[ev]++
	s.activeSub[tenant]++ // one subscription per tenant in these worlds
	if s.activeEvent[ev] > 1 || s.activeSub[tenant] > 1 {
		s.overlaps++
	}
	s.mu.Unlock()
	time.Sleep(max(s.delay, time.Millisecond)) // a destination takes a moment: overlaps would show
	fail := s.failRate > 0 && s.rnd() < s.failRate
	s.mu.Lock()
	s.activeEvent[ev]--
	s.activeSub[tenant]--
	if fail {
		s.failed++
	} else {
		s.counts[ev]++
		s.receipts[at].ok = true
	}
	s.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// inFlight is how many requests the sink is answering right now.
func (s *sink) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.activeSub {
		n += k
	}
	return n
}

// snapshot is every request so far, in the order it arrived (ok: answered
// 2xx), for checkOrder.
func (s *sink) snapshot() []receipt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.receipts)
}

// pauses is, for each subscription (tenant) with an attempt on both sides
// of the instant at, how long it went without one across at: the gap
// between its last attempt before at and its first after.
func (s *sink) pauses(at time.Time) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Duration)
	for tenant, times := range s.arrivals {
		i := sort.Search(len(times), func(i int) bool { return times[i].After(at) })
		if i > 0 && i < len(times) {
			out[tenant] = times[i].Sub(times[i-1])
		}
	}
	return out
}

// longestPause is the subscription (tenant) of the longest of pauses ("" when
// there is none), and every pause, shortest first.
func longestPause(pauses map[string]time.Duration) (worst string, each []time.Duration) {
	for tenant, d := range pauses {
		each = append(each, d)
		if worst == "" || d > pauses[worst] {
			worst = tenant
		}
	}
	slices.Sort(each)
	return worst, each
}

// tally compares what was produced with what arrived.
type tally struct {
	produced, delivered, lost, duplicated, requests, failed, overlaps int
	missing                                                           []string
}

func (s *sink) tally(produced []string) tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := tally{produced: len(produced), requests: s.requests, failed: s.failed, overlaps: s.overlaps}
	for _, id := range produced {
		n := s.counts[id]
		if n == 0 {
			t.missing = append(t.missing, id)
			continue
		}
		t.delivered++
		t.duplicated += n - 1
	}
	t.lost = len(t.missing)
	sort.Strings(t.missing)
	return t
}

func (t tally) String() string {
	return fmt.Sprintf("produced %d, delivered %d, lost %d, duplicated %d (requests %d, of which failed on purpose %d; concurrent attempts of one event or subscription: %d)",
		t.produced, t.delivered, t.lost, t.duplicated, t.requests, t.failed, t.overlaps)
}

// patience bounds a scenario's wait for its outcome: a safety net against a
// hang on a loaded machine, never a measure of speed (the suite runs real
// processes, so a wait only returns as soon as its condition holds).
const patience = 5 * time.Minute

// waitDelivered waits until every produced event arrived, or patience runs
// out; the tally says what was missing then.
func (w *world) waitDelivered(ids []string) tally {
	deadline := time.Now().Add(patience)
	for {
		t := w.sink.tally(ids)
		if t.lost == 0 || time.Now().After(deadline) {
			return t
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitQuiet waits until no job is waiting or in flight: everything was
// delivered or dead-lettered.
func (w *world) waitQuiet() {
	w.t.Helper()
	w.waitFor("no job waiting or in flight", func() bool {
		counts, err := w.db.CountJobs(context.Background())
		return err == nil && counts["pending"] == 0 && counts["in_flight"] == 0 && w.sink.tally(nil).requests > 0
	})
}

// waitFor polls cond until it holds, failing the test after patience.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("still waiting for %s after %v", what, patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// report prints a scenario's figures and fails on any loss.
func (w *world) report(name string, t tally) {
	w.t.Helper()
	fmt.Printf("\n== %s\n   %s\n", name, t)
	if t.lost > 0 {
		w.t.Errorf("%s: %d events lost, e.g. %v", name, t.lost, t.missing[:min(5, len(t.missing))])
	}
}
