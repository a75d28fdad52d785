// Command payments-api serves the example's payments API on its own, over a
// Redis keyspace that outlives it, so the receivers (or curl) can be pointed
// at a long-running source:
//
//	go run ./examples/event-notification/cmd/payments-api -addr 127.0.0.1:8081 -keyspace payments
//
// Notifications accumulate in the stream {<keyspace>}:payments:events.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
)

type config struct {
	addr     string
	redisURL string
	keys     keyspace.Layout
	source   string
}

func parseConfig(args []string, getenv func(string) string) (config, error) {
	def := getenv("STREAMING_HUB_TEST_REDIS_URL")
	if def == "" {
		def = "redis://127.0.0.1:6379/0"
	}
	var c config
	var name string
	fs := flag.NewFlagSet("payments-api", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8081", "listen address")
	fs.StringVar(&c.redisURL, "redis", def, "Redis URL")
	fs.StringVar(&name, "keyspace", "payments", "keyspace name (keys are {name}:...)")
	fs.StringVar(&c.source, "source", "", "ce-source of the notifications (default //lerian.studio/payments)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %v", fs.Args()))
	}
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		errs = append(errs, fmt.Errorf("-addr %q: %w", c.addr, err))
	}
	if _, err := redis.ParseURL(c.redisURL); err != nil {
		errs = append(errs, fmt.Errorf("-redis %q: %w", c.redisURL, err))
	}
	keys, err := keyspace.New(name)
	if err != nil {
		errs = append(errs, fmt.Errorf("-keyspace: %w", err))
	}
	c.keys = keys
	return c, errors.Join(errs...)
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-api: invalid configuration:\n"+err.Error())
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("payments-api stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return fmt.Errorf("redis URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.redisURL, err)
	}
	store, err := payments.NewStore(rdb, cfg.keys, cfg.source)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: cfg.addr, Handler: payments.NewHandler(store, log), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("payments API listening", "addr", cfg.addr, "stream", cfg.keys.Stream())
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", cfg.addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
