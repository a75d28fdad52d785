// Command receiver is a webhook destination for the hub, built on the
// consumer package: it verifies every delivery's Standard Webhooks
// signature, answers verification probes, acknowledges redeliveries of an
// event it already processed without processing them again, and prints each
// event once.
//
//	WEBHOOK_SECRET=whsec_... go run ./examples/receiver -addr 127.0.0.1:9000
//
// WEBHOOK_SECRET is the subscription's signing_secret; during a rotation,
// give both, comma-separated. With -redis (or REDIS_URL) several receivers
// share what was processed; without it, memory (forgotten on restart).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/consumer/redisdedupe"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	redisURL := flag.String("redis", os.Getenv("REDIS_URL"), "Redis URL for a deduper shared by several receivers (default: in memory)")
	flag.Parse()

	var secrets []string
	for s := range strings.SplitSeq(os.Getenv("WEBHOOK_SECRET"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		log.Fatal("WEBHOOK_SECRET: required: the subscription's signing_secret (whsec_...), comma-separated during a rotation")
	}
	dedupe, err := deduper(*redisURL)
	if err != nil {
		log.Fatal(err)
	}
	h, err := newHandler(secrets, dedupe, os.Stdout)
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /", h)
	log.Printf("receiver listening on http://%s", *addr)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func deduper(url string) (consumer.Deduper, error) {
	if url == "" {
		return consumer.NewMemoryDeduper(consumer.MemoryOptions{}), nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	return redisdedupe.New(rdb, redisdedupe.Options{})
}
