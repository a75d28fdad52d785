package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
)

func runDev(args []string, e env) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub dev

Runs the whole hub on this machine with no infrastructure: an embedded Kafka
broker on STREAMING_HUB_DEV_KAFKA_ADDR (default 127.0.0.1:9092) that any Kafka
client can produce to, an SQLite database (default ./streaming-hub.db, or
PostgreSQL via STREAMING_HUB_DATABASE_URL), the API on 127.0.0.1:8080 (or
STREAMING_HUB_HTTP_ADDR), private webhook sinks allowed, a seeded tenant
"default", and a KEK and admin token taken from the environment or else
generated and kept: beside the SQLite file, or on PostgreSQL in
$XDG_CONFIG_HOME/streaming-hub/ (~/.config/streaming-hub/), never in the
working directory. It prints what to do next.
`)
		fmt.Fprintln(fs.Output(), envHelp)
		fmt.Fprintln(fs.Output(), "  STREAMING_HUB_DEV_KAFKA_ADDR    embedded broker address (default 127.0.0.1:9092)")
	}
	if err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	return runHub(config.Dev, false, e)
}

func runServe(args []string, e env) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	noMigrate := fs.Bool("no-migrate", false, "do not apply migrations; refuse to start unless the schema is current")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub serve [--no-migrate]

Runs the hub in production: external Kafka and PostgreSQL, nothing generated,
and it refuses to start without a KEK (STREAMING_HUB_KEK, or where
STREAMING_HUB_KEK_SOURCE and STREAMING_HUB_KEK_REF say) and without
STREAMING_HUB_ADMIN_TOKEN unless PLUGIN_AUTH_ENABLED=true (operators then use
access-manager JWTs). It applies pending migrations first unless --no-migrate.
On SIGTERM it drains for STREAMING_HUB_PRE_STOP_DRAIN_TIMEOUT (/readyz 503,
still serving), then stops within STREAMING_HUB_SHUTDOWN_TIMEOUT.
`)
		printFlags(fs)
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), envHelp)
	}
	if err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	return runHub(config.Serve, *noMigrate, e)
}

// runHub runs until SIGINT or SIGTERM, then shuts down gracefully within
// STREAMING_HUB_SHUTDOWN_TIMEOUT.
func runHub(mode config.Mode, noMigrate bool, e env) int {
	if e.environ != nil {
		for _, w := range config.Unknown(e.environ()) {
			fmt.Fprintln(e.stderr, "streaming-hub: warning:", w)
		}
	}
	cfg, err := config.LoadLookup(mode, e.lookup)
	if err != nil {
		printLines(e.stderr, err)
		return exitUsage
	}
	for _, w := range config.Warnings(mode, e.getenv) {
		fmt.Fprintln(e.stderr, "streaming-hub: warning:", w)
	}
	tel, err := telemetry.FromEnv(e.getenv)
	if err != nil {
		printLines(e.stderr, err)
		return exitUsage
	}
	log := app.NewLogger(cfg, e.stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h := &app.Hub{Config: cfg, Logger: log, Out: e.stdout, NoMigrate: noMigrate, Telemetry: tel}
	if err := h.Start(ctx); err != nil {
		printLines(e.stderr, err)
		var cerr *config.Error
		if errors.As(err, &cerr) {
			return exitUsage
		}
		return exitError
	}
	code := exitOK
	select {
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	case <-h.Failed():
		log.Error("a part of the hub stopped; shutting down", "err", h.Err())
		code = exitError
	}
	stop() // a second signal kills the process at once
	drain := cfg.PreStopDrain
	if code != exitOK {
		drain = 0 // a part failed: nothing to drain for
	}
	if err := h.Stop(drain, cfg.ShutdownTimeout); err != nil {
		log.Error("shutdown", "err", err)
		code = exitError
	}
	log.Info("stopped")
	return code
}

// printLines prints an error one line at a time, each after the program's
// name: a configuration with four bad variables reads as four lines.
func printLines(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "streaming-hub:", line)
	}
}

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
