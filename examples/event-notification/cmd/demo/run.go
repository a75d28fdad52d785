package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
)

// demo is everything the story steps share.
type demo struct {
	cfg      config
	out      io.Writer
	rdb      *redis.Client
	keys     keyspace.Layout
	api      *apiServer
	requests *payments.RequestCounter
	http     *http.Client
	notifier *notify.Reader
	counter  *receivers.Counter
}

func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return fmt.Errorf("redis URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.redisURL, err)
	}

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	keys, err := keyspace.New("en-demo-" + hex.EncodeToString(suffix))
	if err != nil {
		return err
	}
	defer func() {
		// A fresh context: clean up even when the run was interrupted.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, derr := keyspace.DeleteAll(cctx, rdb, keys)
		if derr != nil && err == nil {
			err = fmt.Errorf("cleanup: %w", derr)
		}
		fmt.Fprintf(out, "\ncleanup: deleted %d keys under %s\n", n, keys.Prefix())
	}()

	store, err := payments.NewStore(rdb, keys, "")
	if err != nil {
		return err
	}
	requests := &payments.RequestCounter{}
	api := &apiServer{addr: "127.0.0.1:0", handler: requests.Wrap(payments.NewHandler(store, nil))}
	if err := api.start(); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = api.stop(sctx)
	}()

	client, err := receivers.NewPaymentsClient(api.url(), cfg.fetchTimeout, nil)
	if err != nil {
		return err
	}
	n, err := receivers.NewNotifier(client, receivers.WriterSink{W: indent{out, "      -> notify "}}, nil)
	if err != nil {
		return err
	}
	// Show handler failures in the story: they are the point of step (b).
	showFailures := notify.HandlerFunc(func(ctx context.Context, m notify.Message) error {
		err := n.Handle(ctx, m)
		if err != nil {
			fmt.Fprintf(out, "      x %s v%d not notified, no XACK: %v\n", m.Event.Type, m.Data.Version, err)
		}
		return err
	})
	notifier, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: receivers.NotifierGroup, Consumer: "notifier-1",
	}, showFailures)
	if err != nil {
		return err
	}
	counter, err := receivers.NewCounter(rdb, keys, nil, 0)
	if err != nil {
		return err
	}

	d := &demo{
		cfg: cfg, out: out, rdb: rdb, keys: keys, api: api, requests: requests,
		http: &http.Client{Timeout: 5 * time.Second}, notifier: notifier, counter: counter,
	}
	d.say("Event Notification on Redis — PIX payments of a digital bank")
	d.say("  keyspace %s   stream %s   payments API %s", keys.Prefix(), keys.Stream(), api.url())

	steps := []func(context.Context) error{d.approvedAndNotified, d.sourceDown, d.refundBeforeRead, d.counterCallsNobody}
	if cfg.kafka != "" {
		steps = append(steps, d.forwardToKafka)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demo) section(title string) { d.say("\n%s\n%s", title, dashes(len(title))) }

func dashes(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '-'
	}
	return string(b)
}

// indent prefixes each write (one notification line) for the story layout.
type indent struct {
	w      io.Writer
	prefix string
}

func (i indent) Write(p []byte) (int, error) {
	if _, err := io.WriteString(i.w, i.prefix); err != nil {
		return 0, err
	}
	return i.w.Write(p)
}
