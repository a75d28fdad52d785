package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/loadtest"
)

func runBench(args []string, e env) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var o loadtest.Options
	fs.IntVar(&o.Events, "events", 100_000, "events to produce")
	fs.IntVar(&o.Tenants, "tenants", 100, "tenants, one subscription each")
	fs.IntVar(&o.Partitions, "partitions", 8, "partitions of the topic")
	fs.IntVar(&o.Rate, "rate", 0, "events per second (0: as fast as possible)")
	fs.IntVar(&o.PayloadSize, "payload", 512, "bytes per event body")
	fs.IntVar(&o.Workers, "workers", 64, "dispatch workers (STREAMING_HUB_DISPATCH_WORKERS)")
	fs.IntVar(&o.ClaimBatch, "claim-batch", 64, "jobs per claim (STREAMING_HUB_DISPATCH_CLAIM_BATCH)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.DurationVar(&o.Progress, "progress", time.Second, "progress line interval")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	db := fs.String("database", e.getenv(config.Prefix+"DATABASE_URL"), "postgres://... (a fresh schema is used, then dropped) or empty for a temporary SQLite file")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub bench [flags]

Runs the whole path on this machine and measures it: an embedded Kafka
broker, the hub (ingest, match, dispatch) on PostgreSQL or SQLite, and a
local HTTP sink. It produces N events over T tenants and prints the ingest
rate, successful deliveries per second, end-to-end latency (producer send to
sink receipt) p50/p95/p99 and the process's peak RSS.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	o.DatabaseURL = *db
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
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
	res, err := loadtest.Run(ctx, o, e.stdout)
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub:", err)
		return exitError
	}
	fmt.Fprintf(e.stdout, `
result (%s)
  events          %d delivered (%d duplicate deliveries) in %v
  ingest          %.0f events/s
  deliveries      %.0f/s sustained
  end to end      p50 %v  p95 %v  p99 %v  max %v
  peak RSS        %d MB
`, res.Database, res.Delivered, res.Duplicates, res.Elapsed.Round(time.Millisecond), res.IngestRate, res.DeliveryRate,
		res.P50.Round(time.Millisecond), res.P95.Round(time.Millisecond), res.P99.Round(time.Millisecond), res.Max.Round(time.Millisecond), res.PeakRSS>>20)
	return exitOK
}
