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

// benchFlags parses the bench command line into a checked run.
func benchFlags(args []string, e env) (o loadtest.Options, cpuprofile string, err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	set := setFlag{}
	fs.IntVar(&o.Events, "events", 0, "events to produce (default 100000, or -rate × -duration)")
	fs.DurationVar(&o.Duration, "duration", 0, "produce for this long at -rate, instead of -events")
	fs.IntVar(&o.Tenants, "tenants", 100, "tenants, one subscription and one receiver each")
	fs.IntVar(&o.Partitions, "partitions", 8, "partitions of the topic")
	fs.IntVar(&o.Rate, "rate", 0, "events per second (0: as fast as possible)")
	fs.IntVar(&o.PayloadSize, "payload", 512, "bytes per event body")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", 1, "max_in_flight of each subscription (1 to 64)")
	fs.DurationVar(&o.SinkLatency, "sink-latency", 0, "median time a receiver takes to answer (0: at once)")
	fs.Float64Var(&o.SinkSpread, "sink-spread", 0.25, "log-normal spread (σ) of receiver latency around -sink-latency; 0 for none")
	fs.IntVar(&o.HungTenants, "hung-tenants", 0, "tenants whose receivers answer only after -hang")
	fs.IntVar(&o.FailingTenants, "failing-tenants", 0, "tenants whose receivers answer 500")
	fs.DurationVar(&o.Hang, "hang", 30*time.Second, "how long a hung receiver holds each request")
	fs.DurationVar(&o.Drain, "drain", 0, "watch this long after the last produce, then report (0: until every healthy event is delivered and every hung or failing receiver reached)")
	fs.IntVar(&o.Workers, "workers", 0, "STREAMING_HUB_DISPATCH_WORKERS (0: the hub's default)")
	fs.IntVar(&o.ClaimBatch, "claim-batch", 0, "STREAMING_HUB_DISPATCH_CLAIM_BATCH (0: the hub's default)")
	fs.Var(set, "set", "NAME=VALUE: any other hub variable for the run, e.g. -set DELIVERY_TIMEOUT=5s (repeatable)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.DurationVar(&o.Progress, "progress", time.Second, "progress line interval")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
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
"delivered within N s" is measured.

It reports, for each class of tenant (healthy, hung, failing): delivered /
expected, end-to-end latency (producer send to first receipt) p50/p95/p99,
deliveries per second, whether each tenant's events arrived in order; and
for the process: CPU milliseconds per delivery (utime + stime from
/proc/self/stat) and peak RSS (VmHWM).

Examples:
  streaming-hub bench -tenants 50 -rate 100 -duration 30s -hung-tenants 8 -drain 20s
  streaming-hub bench -tenants 50 -rate 100 -duration 30s -sink-latency 100ms
  streaming-hub bench -tenants 1 -events 20000 -database postgres://...

`)
		printFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	if fs.NArg() > 0 {
		return o, "", badProfile{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	o.DatabaseURL = *db
	if len(set) > 0 {
		o.Set = set
	}
	if o, err = o.Normalize(); err != nil {
		return o, "", badProfile{err}
	}
	return o, cpuprofile, nil
}

// badProfile is a run the flags parse but do not describe; the flag
// package has printed its own errors, this one is printed by runBench.
type badProfile struct{ error }

func runBench(args []string, e env) int {
	o, cpuprofile, err := benchFlags(args, e)
	if err != nil {
		if bad, ok := err.(badProfile); ok {
			printLines(e.stderr, bad.error)
			return exitUsage
		}
		return flagExit(err)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
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
	return bench(ctx, o, e.stdout, e.stderr)
}

func bench(ctx context.Context, o loadtest.Options, stdout, stderr io.Writer) int {
	res, err := loadtest.Run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "streaming-hub:", err)
		return exitError
	}
	loadtest.Report(stdout, res)
	return exitOK
}
