package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestParseConfigReportsEveryProblem(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	_, err := parseConfig([]string{"-redis", "mysql://x", "-fetch-timeout", "0s", "-claim-idle", "2m", "-kafka", "nohost"}, env)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"-redis", "-fetch-timeout", "-claim-idle", "-kafka"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	c, err := parseConfig(nil, func(string) string { return "redis://10.0.0.1:6380/2" })
	if err != nil || c.redisURL != "redis://10.0.0.1:6380/2" {
		t.Fatalf("default from env: %+v, %v", c, err)
	}
}

// The whole story against the real Redis, with the in-process Kafka: every
// step's key line is printed and the run leaves no key behind.
func TestDemoTellsTheStoryAndCleansUp(t *testing.T) {
	url := os.Getenv(redisURLEnv)
	if url == "" {
		t.Skip(redisURLEnv + " not set: skipping Redis test")
	}
	// No step of the story is about the notifier's fetch timing out (the
	// source is down by refusing connections): a generous timeout keeps a
	// loaded machine's slow answer from reading as an outage.
	cfg, err := parseConfig([]string{"-redis", url, "-claim-idle", "50ms", "-fetch-timeout", "1m", "-kafka", "fake"}, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Patience) // a safety net, not a speed
	defer cancel()
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	story := out.String()
	for _, want := range []string{
		`"data":{"paymentId":`,
		"current status approved (v2)",
		"connection refused",
		"pending=1 new=0 acked=1",
		"[superseded",
		"approvals on", "(unchanged: the counter called nobody)",
		"ce-tenantid       default",
		"cleanup: deleted",
	} {
		if !strings.Contains(story, want) {
			t.Errorf("story lacks %q", want)
		}
	}
	prefix := story[strings.Index(story, "keyspace ")+len("keyspace "):]
	prefix = prefix[:strings.Index(prefix, " ")]
	opt, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if keys, err := rdb.Keys(context.Background(), prefix+"*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("keys left under %s: %v %v", prefix, keys, err)
	}
	if t.Failed() {
		t.Log(story)
	}
}
