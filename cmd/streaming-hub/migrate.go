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
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub migrate [--check]

Applies the schema migrations embedded in this binary to
STREAMING_HUB_DATABASE_URL (postgres://... or sqlite:///path/to/file.db).
Safe to run from several processes at once and to run again.
`)
		printFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
