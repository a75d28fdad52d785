package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/loadtest"
)

// setFlag collects repeated -set KEY=VALUE flags.
type setFlag map[string]string

func (s setFlag) String() string { return "" }

func (s setFlag) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", kv)
	}
	s[k] = v
	return nil
}

// benchRun is a checked bench command line: the load's options and what
// the command does around them.
type benchRun struct {
	loadtest.Options
	cpuprofile string
	limitsOnly bool // measure the machine's limits and run no load
}

// defaultLimitsOnly is how long -limits-only measures each limit when
// -limits does not say.
const defaultLimitsOnly = 5 * time.Second

// limitsOnlyFlags are the flags -limits-only takes: the others shape a load
// it does not run.
var limitsOnlyFlags = map[string]bool{"limits": true, "limits-only": true, "database": true, "cpuprofile": true}

// benchFlags parses the bench command line into a checked run.
func benchFlags(args []string, e env) (r benchRun, err error) {
	o := &r.Options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	set := setFlag{}
	fs.IntVar(&o.Events, "events", 0, "events to produce (default 100000, or -rate × -duration)")
	fs.DurationVar(&o.Duration, "duration", 0, "produce for this long at -rate, instead of -events")
	fs.DurationVar(&o.Soak, "soak", 0, "soak: produce at -rate (default 200/s) for this long, print a line every -progress (default 10s), drain, judge (see above)")
	fs.IntVar(&o.Tenants, "tenants", 100, "tenants, one subscription and one receiver each")
	fs.IntVar(&o.Partitions, "partitions", 8, "partitions of the topic")
	fs.IntVar(&o.Rate, "rate", 0, "events per second (0: as fast as possible)")
	fs.IntVar(&o.PayloadSize, "payload", 512, "bytes per event body")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", 0, "max_in_flight of each subscription but the -ordered ones (1 to 64; default 1, 16 in a soak)")
	fs.IntVar(&o.Ordered, "ordered", 0, "tenants whose subscription is ordered (max_in_flight 1) whatever -max-in-flight says (default 0, 20 in a soak)")
	fs.DurationVar(&o.SinkLatency, "sink-latency", 0, "median time a receiver takes to answer (0: at once)")
	fs.Float64Var(&o.SinkSpread, "sink-spread", 0.25, "log-normal spread (σ) of receiver latency around -sink-latency; 0 for none")
	fs.IntVar(&o.HungTenants, "hung-tenants", 0, "tenants whose receivers answer only after -hang")
	fs.IntVar(&o.FailingTenants, "failing-tenants", 0, "tenants whose receivers answer 500")
	fs.DurationVar(&o.Hang, "hang", 30*time.Second, "how long a hung receiver holds each request")
	fs.Float64Var(&o.FailRate, "fail-rate", 0, "share of requests to a healthy receiver answered 500, drawn per tenant from a seeded generator (default 0, 0.05 in a soak)")
	fs.Float64Var(&o.SlowRate, "slow-rate", 0, "share of requests to a healthy receiver answered after -slow-latency instead of the usual latency")
	fs.DurationVar(&o.SlowLatency, "slow-latency", time.Second, "how long a slow answer (-slow-rate) takes")
	retry := fs.String("retry-schedule", "", "each subscription's retry_schedule, comma-separated Go durations (default: the hub's curve, 5s, 1m, 5m, ...)")
	fs.BoolVar(&o.SharedHost, "shared-host", false, "serve every tenant's receiver from one host:port, each at /hook/<tenant>: one destination for the hub")
	fs.DurationVar(&o.Drain, "drain", 0, "watch this long after the last produce, then report (0: until every healthy event is delivered and every hung or failing receiver reached)")
	fs.IntVar(&o.Workers, "workers", 0, "STREAMING_HUB_DISPATCH_WORKERS (0: the hub's default)")
	fs.IntVar(&o.ClaimBatch, "claim-batch", 0, "STREAMING_HUB_DISPATCH_CLAIM_BATCH (0: the hub's default)")
	fs.Var(set, "set", "NAME=VALUE: any other hub variable for the run, e.g. -set DELIVERY_TIMEOUT=5s (repeatable)")
	fs.DurationVar(&o.Timeout, "timeout", 0, "give up after this long (default 10m, or the soak + 10m; a soak then reports what it has)")
	fs.DurationVar(&o.Progress, "progress", time.Second, "progress line interval; in a soak, 10s unless given")
	fs.StringVar(&r.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.DurationVar(&o.Idle, "idle", 0, "before the load, watch the hub idle this long and report its CPU and its PostgreSQL backends'")
	fs.IntVar(&o.Statements, "statements", 0, "count the statements the hub sends to PostgreSQL during the load and print the N most frequent")
	fs.DurationVar(&o.Limits, "limits", 0, "before the hub starts, measure this machine's limits for this long each (see above) and report them beside the run")
	fs.BoolVar(&r.limitsOnly, "limits-only", false, "measure the limits (for -limits, default 5s) and exit: no hub, no load")
	fs.IntVar(&o.Replicas, "replicas", 1, "`N` hub replicas on one PostgreSQL schema and consumer group: this process's hub and N-1 streaming-hub serve processes (see above)")
	cgroup := fs.String("cgroup", "", "`cpu=500m,memory=512Mi`: run the hub under test as one streaming-hub serve process held to these limits (cgroup v1; PostgreSQL only; see above)")
	db := fs.String("database", e.getenv(config.Prefix+"DATABASE_URL"), "postgres://... (a fresh schema is used, then dropped) or empty for a temporary SQLite file")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub bench [flags]

Runs the whole path on this machine and measures it: an embedded Kafka
broker, the hub (ingest, match, dispatch) on PostgreSQL or SQLite, and one
receiver per tenant (its own HTTP server on a loopback port). The hub runs
at its default settings unless -workers, -claim-batch or -set say otherwise.

Receiver profiles: -sink-latency is the median answer time, spread
log-normally (-sink-spread); -hung-tenants receivers hold each request for
-hang (beyond the 15 s delivery timeout); -failing-tenants receivers answer
500. With -drain the run ends that long after the last produce, so
"delivered within N s" is measured. -fail-rate and -slow-rate make
healthy receivers fail (500) or answer after -slow-latency at random.
With -shared-host every receiver is one HTTP server, each tenant at
/hook/<tenant>, so all tenants are one destination (scheme, host, port)
for the hub's per-destination share; each keeps its own behaviour.

It reports, for each class of tenant (healthy, hung, failing): delivered /
expected, end-to-end latency (producer send to first receipt) p50/p95/p99,
deliveries per second, whether each tenant's events arrived in order; and
for the process: CPU milliseconds per delivery (utime + stime from
/proc/self/stat) and peak RSS (VmHWM). On PostgreSQL (which must run on
this machine) it also reports the CPU of the hub's backends (found in
pg_stat_activity by the application_name the bench gives the hub; utime +
stime of /proc/<pid>/stat) per event produced. -idle D first watches the
hub idle for D and reports the CPU of both; -statements N counts the
statements the hub sends (a pgx tracer) and prints the N most frequent.

The machine's limits (-limits D), measured before the hub starts so the
run's figures can be read against what this machine does at all, in the
same run and under the same load average: for D, loopback HTTP (a plain
net/http server on 127.0.0.1 that reads the body and answers 200; 64
goroutines POSTing 512 bytes over kept-alive connections): requests per
second and the process's CPU; then, on PostgreSQL, single-row commits
(each an INSERT of one row in its own transaction, synchronous_commit on,
into a table of a scratch schema dropped after) from 1 connection for D,
then from 8 for D: commits per second and their backends' CPU. They are
printed as a "machine" block with the load average before and after.
-limits-only measures them (for 5s each unless -limits says) and exits,
with no hub and no load; it takes only -limits, -database and -cpuprofile.

Under limits (-cgroup cpu=500m,memory=512Mi; PostgreSQL only): the hub
under test runs as one "streaming-hub serve" process in a cgroup (v1) of
its own with that CPU quota and memory limit, as Lerian's chart holds mode
all; the bench's own hub only serves the broker and the API (it ingests and
delivers nothing), and PostgreSQL, the broker, the producer and the
receivers run outside the limits. The result adds the process's peak
memory against the limit, how often its CPU quota ran out, and its CPU and
its backends' per delivery (docs/performance.md, "Under the chart's
resources").

Replicas (-replicas N, default 1; PostgreSQL only): N hubs run the load
on the one schema, the embedded broker and its consumer group, each of
role all, so the group shares the partitions among them and each claims
and delivers jobs (docs/operations.md, "Several replicas"). The first is
the bench's own hub; the others are this binary run again as
"streaming-hub serve" processes with the variables the first has (KEK,
admin token, dispatch settings, -set), each on a free loopback port and
with an application_name of its own, so its PostgreSQL backends' CPU is
counted apart. Each has its own database pool (16 by default; -set
DATABASE_MAX_CONNS=8 for smaller ones): keep N × (pool + 1) within
PostgreSQL's max_connections. The load starts once each answers /readyz
and the group has assigned every partition. The result block then has a
line per replica, read from its metrics
(streaming_hub_delivery_attempts_total): its deliveries (attempts
answered 2xx), their share of all the replicas' and of the deliveries/s,
its attempts, partitions, events ingested, its process's CPU and its
backends'; and the replicas' sum beside the receivers' count of 2xx
answers. The processes get SIGTERM, then SIGKILL after 15 s, however the
run ends (ctrl-C and errors too). -soak, -idle and -statements watch the
bench's own hub only: not with -replicas.

Soak (-soak DURATION, docs/performance.md): produces at -rate (default 200/s) for
DURATION to -tenants, -ordered 20 of them with max_in_flight 1 and the
others at -max-in-flight 16, while healthy receivers fail -fail-rate 0.05
of requests (defaults in a soak; the receiver flags above work too). Every
-progress (10s) a line: elapsed, produced, delivered (unique events
answered 2xx), backlog (pending jobs that are due), retrying (pending jobs
whose next attempt is in the future: back-off or an open breaker), in
flight (the three counted in the database), p50/p99 of the
healthy deliveries in the window, the database pool's wait in the window
(streaming_hub_db_pool_wait_seconds: total, and per call; PostgreSQL
only) and RSS (now and peak). A healthy delivery is an event whose first
attempt was answered 2xx: an event that needed a retry waited for its
back-off by design, so it is reported apart, as "retried". Latency is the
producer's send to the receipt of the request answered 2xx. After the
production the soak drains until every event to a healthy receiver is
delivered (bounded by -drain or -timeout) and sums up: delivered, lost
(no delivery and no live job left), duplicates, the largest backlog and
retrying, healthy p50/p99/max, CPU per delivery, peak RSS, and a verdict
against docs/performance.md: backlog ≤ 5 s of production (1,000 jobs at 200/s) at
every line, healthy p99 ≤ 1 s, nothing lost. It exits 1 when an event was
lost.

Examples:
  streaming-hub bench -tenants 50 -rate 100 -duration 30s -hung-tenants 8 -drain 20s
  streaming-hub bench -tenants 50 -rate 100 -duration 30s -sink-latency 100ms
  streaming-hub bench -tenants 1 -events 20000 -database postgres://...
  streaming-hub bench -soak 10m -database postgres://...
  streaming-hub bench -tenants 50 -rate 100 -duration 30s -max-in-flight 64 -shared-host -hung-tenants 8 -drain 20s
  streaming-hub bench -tenants 200 -rate 50 -duration 30s -idle 20s -statements 12 -database postgres://...
  streaming-hub bench -tenants 100 -events 100000 -limits 5s -database postgres://...
  streaming-hub bench -limits-only -database postgres://...
  streaming-hub bench -replicas 2 -tenants 50 -events 5000 -database postgres://...

`)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return r, err
	}
	if fs.NArg() > 0 {
		return r, badProfile{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	o.DatabaseURL = *db
	if *retry != "" {
		o.RetrySchedule = strings.Split(*retry, ",")
	}
	if len(set) > 0 {
		o.Set = set
	}
	given := map[string]bool{}
	var load []string // flags given that shape the load, in order
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		if !limitsOnlyFlags[f.Name] {
			load = append(load, f.Name)
		}
	})
	if r.limitsOnly {
		if len(load) > 0 {
			return r, badProfile{fmt.Errorf("-limits-only measures the machine and runs no load: give no -%s", load[0])}
		}
		if !given["limits"] {
			o.Limits = defaultLimitsOnly
		}
		if o.Limits < loadtest.MinLimits {
			return r, badProfile{fmt.Errorf("limits %v: want %v or more for each measurement", o.Limits, loadtest.MinLimits)}
		}
		return r, nil
	}
	if o.Soak > 0 {
		for _, name := range []string{"events", "duration"} {
			if given[name] {
				return r, badProfile{fmt.Errorf("-soak produces for its own duration at -rate: give no -%s", name)}
			}
		}
		if !given["ordered"] {
			o.Ordered = min(20, o.Tenants)
		}
		if !given["fail-rate"] {
			o.FailRate = 0.05
		}
		if !given["progress"] {
			o.Progress = 10 * time.Second
		}
	}
	if *cgroup != "" {
		if o.Replicas > 1 {
			return r, badProfile{fmt.Errorf("cgroup: runs one hub process under the limits; give no -replicas")}
		}
		if o.Cgroup, err = loadtest.ParseCgroup(*cgroup); err != nil {
			return r, badProfile{err}
		}
	}
	if err := replicaCommand(o); err != nil {
		return r, badProfile{err}
	}
	if r.Options, err = o.Normalize(); err != nil {
		return r, badProfile{err}
	}
	return r, nil
}

// replicaCommand checks -replicas and, for more than one, names the
// command that runs the others: this very binary as `serve`, so the
// replicas are the hub the bench measures, built the same.
func replicaCommand(o *loadtest.Options) error {
	if o.Replicas < 1 {
		return fmt.Errorf("replicas %d: want 1 or more", o.Replicas)
	}
	if o.Replicas == 1 && o.Cgroup.MilliCPU == 0 {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("replicas %d: cannot find this binary to run them: %w", o.Replicas, err)
	}
	o.ReplicaCommand = []string{exe, "serve"}
	return nil
}

// badProfile is a run the flags parse but do not describe; the flag
// package has printed its own errors, this one is printed by runBench.
type badProfile struct{ error }

func runBench(args []string, e env) int {
	r, err := benchFlags(args, e)
	if err != nil {
		if bad, ok := err.(badProfile); ok {
			printLines(e.stderr, bad.error)
			return exitUsage
		}
		return flagExit(err)
	}
	if r.cpuprofile != "" {
		f, err := os.Create(r.cpuprofile)
		if err != nil {
			fmt.Fprintln(e.stderr, "streaming-hub:", err)
			return exitUsage
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if r.limitsOnly {
		return benchLimits(ctx, r.Options, e.stdout, e.stderr)
	}
	return bench(ctx, r.Options, e.stdout, e.stderr)
}

// benchLimits measures the machine's limits alone (-limits-only).
func benchLimits(ctx context.Context, o loadtest.Options, stdout, stderr io.Writer) int {
	lim, err := loadtest.MeasureLimits(ctx, o.Limits, o.DatabaseURL, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "streaming-hub:", err)
		return exitError
	}
	loadtest.ReportLimits(stdout, lim)
	return exitOK
}

func bench(ctx context.Context, o loadtest.Options, stdout, stderr io.Writer) int {
	res, err := loadtest.Run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "streaming-hub:", err)
		return exitError
	}
	return report(res, stdout, stderr)
}

// report prints the result; a soak that lost an event exits 1, so scripts
// notice.
func report(res loadtest.Result, stdout, stderr io.Writer) int {
	loadtest.Report(stdout, res)
	if res.Soak != nil && res.Soak.Lost > 0 {
		fmt.Fprintf(stderr, "streaming-hub: bench: events lost (never delivered, and no job holds them): %d\n", res.Soak.Lost)
		return exitError
	}
	return exitOK
}
