// Command demo tells the Event Notification story on a real Redis: a PIX
// payment is approved and the customer notifier fetches its detail; the
// payments API goes down and the notification waits in the group's pending
// list until it comes back; a refund lands before the approval is read and
// the notifier sees it by version; the approvals counter counts without
// calling anybody, and a redelivery counts once. With -kafka it also forwards
// the notifications to Kafka as the hub expects them.
//
//	go run ./examples/event-notification/cmd/demo [-redis URL] [-kafka fake|host:port,...]
//
// Every run uses its own key prefix and deletes its keys on the way out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

const redisURLEnv = "STREAMING_HUB_TEST_REDIS_URL"

type config struct {
	redisURL     string
	fetchTimeout time.Duration
	claimIdle    time.Duration
	kafka        string // "", "fake" or a comma-separated broker list
	tenant       string
	verbose      bool
}

func parseConfig(args []string, getenv func(string) string) (config, error) {
	def := getenv(redisURLEnv)
	if def == "" {
		def = "redis://127.0.0.1:6379/0"
	}
	var c config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&c.redisURL, "redis", def, "Redis URL (default from $"+redisURLEnv+")")
	fs.DurationVar(&c.fetchTimeout, "fetch-timeout", 2*time.Second, "timeout of the notifier's GET /payments/{id}")
	fs.DurationVar(&c.claimIdle, "claim-idle", 200*time.Millisecond, "idle time before a counter member takes over a dead member's entries")
	fs.StringVar(&c.kafka, "kafka", "", `also forward to Kafka: "fake" (in-process broker) or host:port[,host:port]`)
	fs.StringVar(&c.tenant, "tenant", "default", "ce-tenantid of the Kafka records")
	fs.BoolVar(&c.verbose, "v", false, "log what the consumers log (handler failures, takeovers)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var errs []error
	if _, err := redis.ParseURL(c.redisURL); err != nil {
		errs = append(errs, fmt.Errorf("-redis %q: %w", c.redisURL, err))
	}
	if c.fetchTimeout <= 0 {
		errs = append(errs, fmt.Errorf("-fetch-timeout %s must be > 0", c.fetchTimeout))
	}
	if c.claimIdle <= 0 || c.claimIdle > time.Minute {
		errs = append(errs, fmt.Errorf("-claim-idle %s must be in (0, 1m]: the demo waits for it", c.claimIdle))
	}
	if c.kafka != "" && c.kafka != "fake" {
		for _, b := range strings.Split(c.kafka, ",") {
			if !strings.Contains(b, ":") {
				errs = append(errs, fmt.Errorf("-kafka broker %q: want host:port", b))
			}
		}
	}
	return c, errors.Join(errs...)
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: invalid configuration:\n"+err.Error())
		os.Exit(2)
	}
	level := slog.LevelError + 1 // silent: the story is printed on stdout
	if cfg.verbose {
		level = slog.LevelInfo
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
