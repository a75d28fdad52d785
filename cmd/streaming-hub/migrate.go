package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func runMigrate(args []string, e env) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	check := fs.Bool("check", false, "only report whether the schema is current (exit 1 if not)")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long the migrations may take; raise it for 019 on big tables (docs/operations.md)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub migrate [--check] [--timeout 5m]

Applies the schema migrations embedded in this binary to
STREAMING_HUB_DATABASE_URL (postgres://... or sqlite:///path/to/file.db).
Safe to run from several processes at once and to run again.

On PostgreSQL, migration 019 partitions events, delivery_jobs and
delivery_attempts by week, copying every row of the unpartitioned tables
in one transaction: stop the hub and give it a --timeout to match the
tables (docs/performance.md, "Time partitions").
`)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	url, err := config.DatabaseURL(e.getenv)
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub:", err)
		return exitUsage
	}
	if url == "" {
		fmt.Fprintln(e.stderr, "streaming-hub: STREAMING_HUB_DATABASE_URL: required")
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(e.stderr, "streaming-hub: migrate: --timeout must be positive")
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	s, err := app.OpenStore(ctx, url, store.Options{})
	if err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub:", err)
		return exitUsage
	}
	defer s.Close()
	if *check {
		if err := s.CheckSchema(ctx); err != nil {
			fmt.Fprintln(e.stderr, "streaming-hub:", err)
			return exitError
		}
		fmt.Fprintln(e.stdout, "schema is current")
		return exitOK
	}
	if err := s.Migrate(ctx); err != nil {
		fmt.Fprintln(e.stderr, "streaming-hub: migrate:", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, "schema is current")
	return exitOK
}
