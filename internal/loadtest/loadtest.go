// Package loadtest runs the whole delivery path on one machine and measures
// it: an embedded Kafka broker, the hub (ingest, match, dispatch) on
// PostgreSQL or SQLite, and a local HTTP sink. It backs `streaming-hub bench`.
package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Options shape one run. Zero values take the defaults written in
// Normalize; dispatch settings left zero are the hub's own defaults.
type Options struct {
	Events      int           // events to produce; 0 with Duration: Rate × Duration
	Duration    time.Duration // produce for this long at Rate (instead of Events)
	Tenants     int           // tenants (one subscription each), spread over partitions
	Partitions  int           // partitions of the topic
	Rate        int           // events per second; 0 produces as fast as possible
	PayloadSize int           // bytes of each event body
	DatabaseURL string        // postgres://... (a fresh schema is used) or "" for a temp SQLite file
	Workers     int           // STREAMING_HUB_DISPATCH_WORKERS; 0: the hub's default
	ClaimBatch  int           // STREAMING_HUB_DISPATCH_CLAIM_BATCH; 0: the hub's default
	// Set holds further hub variables (STREAMING_HUB_ prefix optional),
	// e.g. DELIVERY_TIMEOUT; they override Workers and ClaimBatch.
	Set         map[string]string
	MaxInFlight int // each subscription's max_in_flight (default 1, the API's default; 16 in a soak)
	Ordered     int // tenants (the last ones) whose subscription has max_in_flight 1 whatever MaxInFlight says
	// RetrySchedule is each subscription's retry_schedule; nil keeps the
	// hub's default curve (5s, 1m, 5m, ...).
	RetrySchedule []string

	// Soak, when set, produces at Rate (default 200/s) for this long, prints
	// a line every Progress with the database's backlog, then drains and
	// reports against docs/performance.md's bounds (Result.Soak).
	Soak time.Duration

	// Receiver profiles: each tenant has its own receiver (its own HTTP
	// server on a loopback port, so its own destination), or with
	// SharedHost its own path on one server for all of them.
	SinkLatency    time.Duration // median answer time; 0 answers at once
	SinkSpread     float64       // σ of the log-normal spread around SinkLatency; 0 for none
	HungTenants    int           // tenants whose receivers answer after Hang
	FailingTenants int           // tenants whose receivers answer 500
	Hang           time.Duration // how long a hung receiver holds a request (default 30s)
	// FailRate is the share of requests to a healthy receiver answered
	// 500, SlowRate the share answered after SlowLatency (default 1s)
	// instead of the usual latency; each receiver draws from its own
	// seeded generator, so a run's draws repeat.
	FailRate, SlowRate float64
	SlowLatency        time.Duration
	SharedHost         bool // one HTTP server for every receiver, each tenant at /hook/<tenant>

	// Drain bounds the watch after the last produce: the run ends then, or
	// as soon as every event is delivered when every receiver is healthy.
	// 0 watches until every healthy tenant's event is delivered and every
	// hung or failing receiver has had a request.
	Drain   time.Duration
	Timeout time.Duration // give up after this long
	// Idle, when set, watches the hub idle (tenants and subscriptions
	// made, nothing produced) for this long before the load, and reports
	// the CPU of the bench process and of the hub's PostgreSQL backends.
	Idle time.Duration
	// Statements, when set, counts the statements the hub sends to
	// PostgreSQL during the load and reports the N most frequent.
	Statements int
	Progress   time.Duration // progress line interval; 0 for none
	// Limits, when set, first measures the machine's limits for this long
	// each (MeasureLimits), before the hub starts, so the run's figures
	// can be read against them (Result.Limits).
	Limits time.Duration
	// Replicas is how many hubs run the load (default 1): the bench's own
	// and Replicas-1 processes started with ReplicaCommand, all of role
	// all on the one PostgreSQL schema and the embedded broker's consumer
	// group, so the group shares the partitions among them and each
	// claims and delivers (docs/operations.md, "Several replicas").
	// Result.Replicas has each one's part.
	Replicas int
	// ReplicaCommand runs one more replica: a command that runs the hub in
	// serve mode with its configuration from the environment, as
	// `streaming-hub serve` does.
	ReplicaCommand []string
	// Cgroup, when set, runs the hub under test as one process of
	// ReplicaCommand held to these limits (cgroup v1 cpu and memory), as
	// Lerian's chart holds mode all; the bench's own hub then only serves
	// the broker and the API, and ingests and delivers nothing
	// (Result.Cgroup has what the process used).
	Cgroup CgroupLimits
}

// limited reports whether the hub under test runs under Cgroup's limits.
func (o Options) limited() bool { return o.Cgroup.MilliCPU > 0 }

// Normalize fills in the defaults and checks the profile.
func (o Options) Normalize() (Options, error) {
	if o.Duration < 0 || o.Events < 0 || o.Rate < 0 || o.Soak < 0 || o.Idle < 0 || o.Statements < 0 {
		return o, fmt.Errorf("events, duration, soak, rate, idle and statements cannot be negative")
	}
	if o.Soak > 0 {
		if o.Duration > 0 {
			return o, fmt.Errorf("give either soak or duration, not both")
		}
		if o.Rate == 0 {
			o.Rate = 200
		}
		n := max(int(o.Soak.Seconds()*float64(o.Rate)), 1)
		if o.Events > 0 && o.Events != n { // equal: normalized already
			return o, fmt.Errorf("give either events or soak, not both")
		}
		o.Events = n
	}
	if o.Duration > 0 {
		if o.Rate <= 0 {
			return o, fmt.Errorf("duration needs a rate (events per second)")
		}
		n := max(int(o.Duration.Seconds()*float64(o.Rate)), 1)
		if o.Events > 0 && o.Events != n { // equal: normalized already
			return o, fmt.Errorf("give either events or duration, not both")
		}
		o.Events = n
	}
	if o.Events <= 0 {
		o.Events = 100_000
	}
	if o.Tenants <= 0 {
		o.Tenants = 100
	}
	if o.Partitions <= 0 {
		o.Partitions = 8
	}
	if o.PayloadSize <= 0 {
		o.PayloadSize = 512
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 1
		if o.Soak > 0 {
			o.MaxInFlight = 16
		}
	}
	if err := hub.ValidateMaxInFlight(o.MaxInFlight); err != nil {
		return o, err
	}
	if o.Hang <= 0 {
		o.Hang = 30 * time.Second
	}
	if o.SlowLatency == 0 {
		o.SlowLatency = time.Second
	}
	if err := o.checkReplicas(); err != nil {
		return o, err
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.limited() {
		switch {
		case o.Replicas > 2: // 2 once normalized: the bench's own hub and the process
			return o, fmt.Errorf("cgroup: runs one hub process under the limits; give no replicas")
		case o.DatabaseURL == "" || strings.HasPrefix(o.DatabaseURL, "sqlite://"):
			return o, fmt.Errorf("cgroup needs PostgreSQL (-database postgres://...): the process under the limits shares the bench's database")
		case o.Soak > 0 || o.Idle > 0 || o.Statements > 0:
			return o, fmt.Errorf("cgroup: give no soak, idle or statements: they watch the bench's own hub")
		}
		// The bench's own hub and the one process under the limits.
		o.Replicas = 2
	}
	if o.Limits != 0 && o.Limits < MinLimits { // negatives too
		return o, fmt.Errorf("limits %v: want %v or more for each measurement (0: none)", o.Limits, MinLimits)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10*time.Minute + o.Soak + o.limitsTime()
	}
	if o.Soak > 0 && o.Progress <= 0 {
		o.Progress = 10 * time.Second
	}
	switch {
	case o.Ordered < 0 || o.Ordered > o.Tenants:
		return o, fmt.Errorf("ordered tenants %d: want 0 to the %d tenants", o.Ordered, o.Tenants)
	case !(o.FailRate >= 0 && o.FailRate < 1): // NaN fails too
		return o, fmt.Errorf("fail rate %v: want a share from 0 to below 1", o.FailRate)
	case !(o.SlowRate >= 0 && o.SlowRate <= 1):
		return o, fmt.Errorf("slow rate %v: want a share from 0 to 1", o.SlowRate)
	case o.SlowLatency < 0:
		return o, fmt.Errorf("slow latency cannot be negative")
	case o.RetrySchedule != nil && hub.ValidateRetrySchedule(o.RetrySchedule) != nil:
		return o, fmt.Errorf("retry schedule: %w", hub.ValidateRetrySchedule(o.RetrySchedule))
	case o.Soak > 0 && o.Timeout <= o.Soak+o.limitsTime():
		if o.Limits > 0 {
			return o, fmt.Errorf("timeout %v is not longer than the limits' %v and the soak %v", o.Timeout, o.limitsTime(), o.Soak)
		}
		return o, fmt.Errorf("timeout %v is not longer than the soak %v", o.Timeout, o.Soak)
	}
	switch {
	case o.Workers < 0 || o.ClaimBatch < 0:
		return o, fmt.Errorf("workers and claim batch cannot be negative")
	case o.SinkLatency < 0 || o.SinkSpread < 0 || o.Drain < 0:
		return o, fmt.Errorf("sink latency, sink spread and drain cannot be negative")
	case o.HungTenants < 0 || o.FailingTenants < 0:
		return o, fmt.Errorf("hung and failing tenants cannot be negative")
	case o.HungTenants+o.FailingTenants > o.Tenants:
		return o, fmt.Errorf("%d hung and %d failing tenants are more than the %d tenants", o.HungTenants, o.FailingTenants, o.Tenants)
	case o.HungTenants+o.FailingTenants == o.Tenants && o.Drain == 0:
		return o, fmt.Errorf("no tenant is healthy: give a drain, or the run never ends")
	case o.Drain > 0 && o.Drain >= o.Timeout:
		return o, fmt.Errorf("drain %v is not shorter than the timeout %v", o.Drain, o.Timeout)
	}
	set := make(map[string]string, len(o.Set))
	var environ []string
	for k, v := range o.Set {
		if !strings.HasPrefix(k, config.Prefix) {
			k = config.Prefix + k
		}
		set[k] = v
		environ = append(environ, k+"="+v)
	}
	if unknown := config.Unknown(environ); len(unknown) > 0 {
		return o, fmt.Errorf("%s", strings.Join(unknown, "\n"))
	}
	o.Set = set
	return o, nil
}

// checkReplicas: several replicas share one database, which SQLite is not
// (one process's file); and the soak, the idle window and the statement
// count watch the bench's own hub alone, so they would count only one
// replica's part as if it were the whole.
func (o Options) checkReplicas() error {
	switch {
	case o.Replicas < 0:
		return fmt.Errorf("replicas %d: want 1 or more", o.Replicas)
	case o.Replicas <= 1:
		return nil
	case o.DatabaseURL == "" || strings.HasPrefix(o.DatabaseURL, "sqlite://"):
		return fmt.Errorf("replicas %d need PostgreSQL (-database postgres://...): SQLite is one process's database", o.Replicas)
	case o.Soak > 0 || o.Idle > 0 || o.Statements > 0:
		return fmt.Errorf("replicas %d: give no soak, idle or statements: they watch the bench's own hub only", o.Replicas)
	}
	return nil
}

// limitsTime is how long the limits take at most: three measurements on
// PostgreSQL (HTTP, commits from 1 and from 8 connections).
func (o Options) limitsTime() time.Duration { return 3 * o.Limits }

// expected counts the events each class's tenants get: event i goes to
// tenant i mod Tenants.
func (o Options) expected() [numClasses]int {
	var n [numClasses]int
	for t := range o.Tenants {
		events := o.Events / o.Tenants
		if t < o.Events%o.Tenants {
			events++
		}
		n[o.classOf(t)] += events
	}
	return n
}

const topic = "lerian.streaming.ledger_transaction.posted"

// Run runs one load and reports progress to out.
func Run(ctx context.Context, o Options, out io.Writer) (Result, error) {
	o, err := o.Normalize()
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	// Before anything of the run starts, so nothing else of it runs
	// beside the measurements.
	var limits *Limits
	if o.Limits > 0 {
		if limits, err = MeasureLimits(ctx, o.Limits, o.DatabaseURL, out); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(out, "bench: limits: %s\n", limits.Summary())
	}

	db, cleanup, err := database(ctx, o.DatabaseURL)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()

	vars := map[string]string{
		"STREAMING_HUB_HTTP_ADDR":      "127.0.0.1:0",
		"STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0",
		"STREAMING_HUB_DATABASE_URL":   db,
		"STREAMING_HUB_LOG_LEVEL":      "error",
		// The hub gets its own secrets, as internal/devhub gives them: dev
		// mode would otherwise keep generated ones on disk.
		"STREAMING_HUB_KEK":         base64.StdEncoding.EncodeToString(randomBytes(32)),
		"STREAMING_HUB_ADMIN_TOKEN": "bench_" + hex.EncodeToString(randomBytes(24)),
	}
	if o.Workers > 0 {
		vars["STREAMING_HUB_DISPATCH_WORKERS"] = strconv.Itoa(o.Workers)
	}
	if o.ClaimBatch > 0 {
		vars["STREAMING_HUB_DISPATCH_CLAIM_BATCH"] = strconv.Itoa(o.ClaimBatch)
	}
	for k, v := range o.Set {
		vars[k] = v
	}
	// The group the hubs under test consume in (the replicas').
	group, err := config.Load(config.Dev, func(k string) string { return vars[k] })
	if err != nil {
		return Result{}, err
	}
	own := vars
	if o.limited() {
		// Under the limits, the bench's own hub serves the broker and the
		// API only: it ingests no topic and delivers nothing.
		own = make(map[string]string, len(vars)+3)
		for k, v := range vars {
			own[k] = v
		}
		own["STREAMING_HUB_ROLE"] = "ingest"
		own["STREAMING_HUB_KAFKA_TOPICS_REGEX"] = "^streaming-hub-bench-none$"
		own["STREAMING_HUB_KAFKA_GROUP"] = "streaming-hub-bench-front"
	}
	cfg, err := config.Load(config.Dev, func(k string) string { return own[k] })
	if err != nil {
		return Result{}, err
	}
	h := &app.Hub{Config: cfg, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	var stmts *statements
	if o.Statements > 0 {
		stmts = newStatements()
		h.OnStatement = stmts.observe
	}
	if err := h.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(sctx)
	}()
	if err := makeTopic(ctx, h.Broker, o.Partitions); err != nil {
		return Result{}, err
	}
	// Deferred before the receivers' stop, so it runs after it: a hung
	// request is released before a replica's shutdown waits for it.
	var cg *cgroupV1
	if o.limited() {
		if cg, err = newCgroup(o.Cgroup); err != nil {
			return Result{}, err
		}
		defer cg.remove() // after the process stopped (deferred below)
	}
	reps := newReplicas(h, db)
	reps.limits = cg
	defer reps.stop()

	// The receivers stop before the hub does (deferred after it): a hung
	// request is released at once, so the hub's shutdown does not wait
	// for it.
	rec := newRecorder(o.Events)
	stopReceivers := make(chan struct{})
	receivers := make([]*receiver, o.Tenants)
	for t := range receivers {
		receivers[t] = newReceiver(o, t, rec, stopReceivers)
	}
	servers, err := startReceivers(receivers, o.SharedHost)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		close(stopReceivers)
		for _, s := range servers {
			s.Close()
		}
	}()
	urls := make([]string, o.Tenants)
	for t, r := range receivers {
		urls[t] = r.url
	}
	tenants, err := setup(ctx, h, urls, o)
	if err != nil {
		return Result{}, err
	}
	settings := describeSettings(cfg, o.Set)
	soak := ""
	if o.Soak > 0 {
		soak = fmt.Sprintf(" for %v (soak)", o.Soak)
	}
	fmt.Fprintf(out, "bench: %d events over %d tenants and %d partitions, %s, rate %s%s, %s\n",
		o.Events, o.Tenants, o.Partitions, describeDB(db), rate(o.Rate), soak, settings)
	fmt.Fprintf(out, "bench: receivers %s; %d healthy%s, %d hung (answer after %v), %d failing (answer 500); %s; %s\n",
		describeLatency(o), o.Tenants-o.HungTenants-o.FailingTenants, describeMishaps(o), o.HungTenants, o.Hang, o.FailingTenants,
		describeHosts(o, len(servers)), describeMaxInFlight(o))

	if err := reps.start(ctx, o.Replicas, o.ReplicaCommand, vars, db, h.KafkaAddrs()); err != nil {
		return Result{}, err
	}
	members := o.Replicas
	if o.limited() {
		members = 1
	}
	if err := waitForGroup(ctx, h.Broker, group.Ingest.Group, members, o.Partitions); err != nil {
		return Result{}, err
	}
	if o.Replicas > 1 {
		fmt.Fprintf(out, "bench: %s\n", reps.describe(ctx))
	}
	if o.limited() {
		fmt.Fprintf(out, "bench: the hub under test is replica 2, a serve process held to %s (cgroup v1); the bench's own hub ingests and delivers nothing\n", o.Cgroup)
	}

	var pg *pgCPU
	if app := appName(db); app != "" {
		if pg, err = newPGCPU(ctx, o.DatabaseURL, reps.apps()...); err != nil {
			return Result{}, fmt.Errorf("bench: watch PostgreSQL: %w", err)
		}
		defer pg.close()
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		go pg.run(sctx)
	}
	var idle *IdleResult
	if o.Idle > 0 {
		idle = watchIdle(ctx, o.Idle, pg, out)
	}
	if stmts != nil {
		stmts.take() // setup's and the idle window's are not the load's
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.MaxBufferedRecords(50_000))
	if err != nil {
		return Result{}, err
	}
	defer prod.Close()

	r := &run{o: o, h: h, db: db, rec: rec, settings: settings, expected: o.expected(), cpu0: cpuTime(), load0: loadAverage(),
		pg: pg, stmts: stmts, idle: idle, limits: limits, cg: cg}
	if o.Replicas > 1 {
		r.reps = reps
		reps.begin()
	}
	if pg != nil {
		r.pgWin = pg.begin(ctx)
	}
	r.start = time.Now()
	go func() {
		if err := produce(ctx, prod, o, tenants, &r.produced, &r.lastSent); err != nil {
			r.produceErr.Store(err)
		}
	}()
	if o.Soak > 0 {
		return r.soak(ctx, out)
	}

	var lastIngest, lastPrint time.Time
	tick := time.NewTicker(100 * time.Millisecond) // measurement; printing follows o.Progress
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d, _ := rec.totals()
			return Result{}, fmt.Errorf("bench: %w after %v: %d of %d healthy events delivered (%d in all)",
				ctx.Err(), time.Since(r.start).Round(time.Second), rec.delivered(Healthy), r.expected[Healthy], d)
		case <-tick.C:
		}
		if v := r.produceErr.Load(); v != nil {
			return Result{}, v.(error)
		}
		if lastIngest.IsZero() && r.ingested(ctx) >= int64(o.Events) {
			lastIngest = time.Now()
		}
		el := time.Since(r.start)
		if o.Progress > 0 && time.Since(lastPrint) >= o.Progress {
			lastPrint = time.Now()
			d, bad := rec.totals()
			line := fmt.Sprintf("  %6.1fs  produced %7d  ingested %7d  delivered %7d  (%6.0f/s)", el.Seconds(), r.produced.Load(), r.ingested(ctx), d, float64(d)/el.Seconds())
			if r.unhealthy() {
				line += fmt.Sprintf("  attempts at hung/failing %6d", bad)
			}
			fmt.Fprintf(out, "%s  rss %4d MB\n", line, peakRSS()>>20)
		}
		if r.drained() {
			break
		}
	}
	if lastIngest.IsZero() {
		lastIngest = time.Now()
	}
	return r.result(lastIngest), nil
}

// run is one load under way.
type run struct {
	o          Options
	h          *app.Hub
	db         string // the hub's database URL
	rec        *recorder
	settings   string
	expected   [numClasses]int
	start      time.Time
	cpu0       time.Duration
	load0      string
	pg         *pgCPU // nil on SQLite
	pgWin      pgWindow
	stmts      *statements // nil unless Options.Statements
	idle       *IdleResult
	limits     *Limits      // nil without Options.Limits
	reps       *replicas    // nil with one replica
	cg         *cgroupV1    // nil without Options.Cgroup
	produced   atomic.Int64 // events the broker acknowledged
	lastSent   atomic.Int64 // unix ns of the latest send
	produceErr atomic.Value
}

// ingested counts the events in the inbox: the bench's hub's, or every
// replica's.
func (r *run) ingested(ctx context.Context) int64 {
	if r.reps != nil {
		return r.reps.ingested(ctx)
	}
	return int64(counterValue(r.h.Metrics.InboxEvents))
}

func (r *run) unhealthy() bool { return r.o.HungTenants+r.o.FailingTenants > 0 }

// drained says whether the watch after the last produce is over: the drain
// has passed, or every healthy event is delivered (and, without a drain,
// every hung or failing receiver has had a request, so each class has been
// exercised).
func (r *run) drained() bool {
	if r.produced.Load() < int64(r.o.Events) {
		return false
	}
	if r.o.Drain > 0 && time.Since(time.Unix(0, r.lastSent.Load())) >= r.o.Drain {
		return true
	}
	var unhealthyTenants []int
	for t := range r.o.HungTenants + r.o.FailingTenants {
		unhealthyTenants = append(unhealthyTenants, t)
	}
	return r.rec.delivered(Healthy) >= r.expected[Healthy] &&
		(!r.unhealthy() || (r.o.Drain == 0 && r.rec.reachedAll(unhealthyTenants)))
}

// result sums up the run by class.
func (r *run) result(lastIngest time.Time) Result {
	o, rec := r.o, r.rec
	res := Result{Events: o.Events, Database: describeDB(r.db), Settings: r.settings, Drain: o.Drain, SharedHost: o.SharedHost,
		IngestRate: float64(o.Events) / lastIngest.Sub(r.start).Seconds(), Elapsed: time.Since(r.start),
		PeakRSS: peakRSS(), CPU: cpuTime() - r.cpu0, Sink: sinkProfile(o), LoadAverage: [2]string{r.load0, loadAverage()}, Limits: r.limits}
	lastProduce := time.Unix(0, r.lastSent.Load())
	var first, last time.Time
	for c := range numClasses {
		tenants := 0
		for t := range o.Tenants {
			if o.classOf(t) == c {
				tenants++
			}
		}
		if tenants == 0 {
			continue
		}
		cr := rec.class(c, tenants, r.expected[c], lastProduce)
		res.Classes = append(res.Classes, cr)
		res.Delivered += cr.Delivered
		res.Duplicates += cr.Duplicates
		if c == Healthy {
			res.P50, res.P95, res.P99, res.Max = cr.P50, cr.P95, cr.P99, cr.Max
		}
		f, l := rec.span(c)
		if !f.IsZero() && (first.IsZero() || f.Before(first)) {
			first = f
		}
		if l.After(last) {
			last = l
		}
	}
	if span := last.Sub(first).Seconds(); span > 0 {
		res.DeliveryRate = float64(res.Delivered) / span
	}
	if res.Delivered > 0 {
		res.CPUPerDelivery = res.CPU / time.Duration(res.Delivered)
	}
	if r.reps == nil {
		r.measureDB(&res)
		return res
	}
	got, errs := r.reps.settle(res.Delivered + res.Duplicates)
	res.Replicas = r.reps.results(got, errs, r.measureDB(&res))
	if r.cg != nil {
		u := r.cg.usage(r.o.Cgroup)
		res.Cgroup = &u
	}
	return res
}

// measureDB adds the PostgreSQL figures of the load (and the idle window
// before it) to res, and returns the backends' CPU by application_name.
func (r *run) measureDB(res *Result) map[string]pgUse {
	res.Idle = r.idle
	var byApp map[string]pgUse
	if r.pg != nil {
		byApp = r.pgWin.endByApp(context.Background())
		for _, u := range byApp {
			res.PGCPU += u.cpu
			res.PGBackends += u.backends
		}
		if r.o.Events > 0 {
			res.PGCPUPerEvent = res.PGCPU / time.Duration(r.o.Events)
		}
	}
	if r.stmts != nil {
		all := r.stmts.take()
		for _, s := range all {
			res.StatementsRun += s.Count
		}
		res.Statements = all[:min(len(all), r.o.Statements)]
	}
	return byApp
}

// IdleResult is what the hub cost while idle.
type IdleResult struct {
	Duration   time.Duration
	CPU        time.Duration // the bench process (broker, hub, receivers)
	PGCPU      time.Duration // the hub's PostgreSQL backends; 0 on SQLite
	PGBackends int
}

// watchIdle lets the hub settle, then measures it idle for d.
func watchIdle(ctx context.Context, d time.Duration, pg *pgCPU, out io.Writer) *IdleResult {
	select { // the start's one-off work (first housekeeping pass, claims) settles
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	fmt.Fprintf(out, "bench: watching the hub idle for %v\n", d)
	var w pgWindow
	if pg != nil {
		w = pg.begin(ctx)
	}
	cpu0, t0 := cpuTime(), time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	res := &IdleResult{Duration: time.Since(t0), CPU: cpuTime() - cpu0}
	if pg != nil {
		res.PGCPU, res.PGBackends = w.end(ctx)
	}
	return res
}

// appName is the application_name the hub's PostgreSQL URL carries ("" for
// SQLite): its backends are the ones pg_stat_activity lists under it.
func appName(db string) string {
	if strings.HasPrefix(db, "sqlite://") {
		return ""
	}
	u, err := url.Parse(db)
	if err != nil {
		return ""
	}
	return u.Query().Get("application_name")
}

// sinkProfile describes the receivers' latency, with its own quantiles.
func sinkProfile(o Options) SinkProfile {
	p := SinkProfile{Median: o.SinkLatency, Spread: o.SinkSpread, Hang: o.Hang, P50: o.SinkLatency}
	const z99 = 2.3263 // the standard normal's 99th percentile
	p.P99 = min(time.Duration(float64(o.SinkLatency)*math.Exp(o.SinkSpread*z99)), maxLatencyFactor*o.SinkLatency)
	return p
}

func describeLatency(o Options) string {
	if o.SinkLatency <= 0 {
		return "answer at once"
	}
	if o.SinkSpread == 0 {
		return fmt.Sprintf("answer in %v", o.SinkLatency)
	}
	p := sinkProfile(o)
	return fmt.Sprintf("answer in a median %v (log-normal, spread %.2f: p99 %v)", o.SinkLatency, o.SinkSpread, round(p.P99))
}

// describeSettings names the dispatch settings the hub runs with, and any
// variable set for the run.
func describeSettings(cfg config.Config, set map[string]string) string {
	// %+v names every dispatch setting, whichever the hub has.
	s := fmt.Sprintf("dispatch %+v, delivery timeout %v", cfg.Dispatch, cfg.DeliveryTimeout)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += ", " + k + "=" + set[k]
	}
	return s
}

// describeMishaps names a healthy receiver's random failures and slow
// answers.
func describeMishaps(o Options) string {
	var s []string
	if o.FailRate > 0 {
		s = append(s, fmt.Sprintf("%s of requests answered 500", share(o.FailRate)))
	}
	if o.SlowRate > 0 {
		s = append(s, fmt.Sprintf("%s answered after %v", share(o.SlowRate), o.SlowLatency))
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

func share(f float64) string {
	return strconv.FormatFloat(100*f, 'f', -1, 64) + "%"
}

func describeHosts(o Options, servers int) string {
	if o.SharedHost {
		return "all on one shared host (each tenant at /hook/<tenant>)"
	}
	return fmt.Sprintf("%d hosts (one per tenant)", servers)
}

func describeMaxInFlight(o Options) string {
	switch o.Ordered {
	case 0:
		return fmt.Sprintf("max_in_flight %d", o.MaxInFlight)
	case o.Tenants:
		return "max_in_flight 1 (ordered)"
	}
	return fmt.Sprintf("max_in_flight %d, %d ordered tenants at 1", o.MaxInFlight, o.Ordered)
}

func rate(r int) string {
	if r <= 0 {
		return "unbounded"
	}
	return fmt.Sprintf("%d/s", r)
}

// database returns the URL to run on: a temp SQLite file, or a fresh schema
// of the given PostgreSQL database, removed afterwards.
func database(ctx context.Context, raw string) (string, func(), error) {
	if raw == "" || strings.HasPrefix(raw, "sqlite://") {
		if raw != "" {
			return raw, func() {}, nil
		}
		dir, err := os.MkdirTemp("", "streaming-hub-bench-")
		if err != nil {
			return "", nil, err
		}
		return "sqlite://" + filepath.Join(dir, "bench.db"), func() { os.RemoveAll(dir) }, nil
	}
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return "", nil, fmt.Errorf("bench database: %w", err)
	}
	defer conn.Close(ctx)
	schema := "bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("bench database: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", "streaming-hub-"+schema) // how the bench finds the hub's backends
	u.RawQuery = q.Encode()
	return u.String(), func() {
		c, err := pgx.Connect(context.Background(), raw)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	}, nil
}

func describeDB(u string) string {
	if strings.HasPrefix(u, "sqlite://") {
		return "SQLite"
	}
	return "PostgreSQL"
}

// setup creates the tenants, each with one verified subscription to its
// own receiver.
func setup(ctx context.Context, h *app.Hub, urls []string, o Options) ([]string, error) {
	tenants := make([]string, len(urls))
	secret := destination.NewSecret()
	for i := range tenants {
		tenants[i] = tenantName(i)
		if _, err := h.Store.CreateTenant(ctx, storeTenant(tenants[i])); err != nil {
			return nil, err
		}
		sub := hub.Subscription{
			ID: hub.NewID("sub", time.Now()), TenantID: tenants[i], Name: "bench",
			EventTypes:  []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
			Destination: hub.Destination{Type: "webhook", URL: urls[i]},
			MaxInFlight: o.maxInFlightOf(i), RetrySchedule: o.RetrySchedule, Enabled: true, VerificationState: hub.VerificationActive,
		}
		if err := destination.SealSecrets(h.Keyring, &sub, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: secret}}}); err != nil {
			return nil, err
		}
		if _, err := h.Store.CreateSubscription(ctx, sub); err != nil {
			return nil, err
		}
	}
	return tenants, nil
}

// produce sends the events, round-robin over tenants (key = tenant), paced
// at o.Rate when set: every 10 ms it catches up with rate × elapsed, so
// any rate is kept, not only multiples of 100. Each body carries its send
// time for latency; lastSent keeps the latest.
func produce(ctx context.Context, cl *kgo.Client, o Options, tenants []string, produced, lastSent *atomic.Int64) error {
	pad := strings.Repeat("x", max(o.PayloadSize-48, 0))
	var firstErr atomic.Value
	var tick *time.Ticker
	if o.Rate > 0 {
		tick = time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	}
	start := time.Now()
	for i := 0; i < o.Events; {
		due := o.Events
		if tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			due = min(o.Events, int(time.Since(start).Seconds()*float64(o.Rate))+1)
		}
		for ; i < due; i++ {
			tenant := tenants[i%len(tenants)]
			id := eventID(i)
			now := time.Now()
			body := fmt.Sprintf(`{"sent_ns":%d,"pad":"%s"}`, now.UnixNano(), pad)
			r := &kgo.Record{Topic: topic, Key: []byte(tenant), Value: []byte(body), Headers: []kgo.RecordHeader{
				{Key: "ce-specversion", Value: []byte("1.0")}, {Key: "ce-id", Value: []byte(id)},
				{Key: "ce-source", Value: []byte("//bench")}, {Key: "ce-type", Value: []byte("studio.lerian.transaction.posted")},
				{Key: "ce-time", Value: []byte(now.UTC().Format(time.RFC3339Nano))}, {Key: "ce-tenantid", Value: []byte(tenant)},
				{Key: "ce-schemaversion", Value: []byte("1.0.0")}, {Key: "content-type", Value: []byte("application/json")},
			}}
			lastSent.Store(now.UnixNano())
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				produced.Add(1)
			})
			if v := firstErr.Load(); v != nil {
				return fmt.Errorf("produce: %w", v.(error))
			}
		}
	}
	return cl.Flush(ctx)
}

// eventID is the ce-id of event i, which goes to tenant i mod Tenants.
func eventID(i int) string { return fmt.Sprintf("bench-%08d", i) }

// gaugeValue reads a gauge's current value.
func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func storeTenant(id string) store.CreateTenantParams {
	return store.CreateTenantParams{ID: id, Name: id}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return b
}
