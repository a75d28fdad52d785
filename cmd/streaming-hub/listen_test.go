package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// listen forwards an event produced through the hub to a real local
// receiver, signed like a delivery; a non-2xx answer is retried, and the
// event counts as forwarded only after the 2xx.
func TestListen_ForwardsSignedAndRetriesUntil2xx(t *testing.T) {
	testkit.Long(t)
	h := startHub(t)
	brokers := strings.Join(h.KafkaAddrs(), ",")
	c := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "default", "STREAMING_HUB_KAFKA_BROKERS", brokers)
	c.ok("produce", "--id", "evt-listen-1", "--subject", "acct-1", "--data", `{"amount":42}`, "--timeout", "2m")

	type hit struct {
		header http.Header
		body   []byte
	}
	var (
		mu   sync.Mutex
		hits []hit
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		hits = append(hits, hit{r.Header.Clone(), b})
		if len(hits) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first try fails
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	secret := destination.NewSecret()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCmd(c.vars, "listen", "--forward-to", recv.URL+"/hook", "--from-start", "--event-type", "transaction.posted",
			"--secret", secret, "--count", "1")
		done <- result{code, out, errOut}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("listen never forwarded the event")
	}
	if r.code != exitOK {
		t.Fatalf("listen: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.errOut, "signing secret: "+secret) {
		t.Fatalf("the secret is not printed at start:\n%s", r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "evt-listen-1  -> 503") || !strings.Contains(lines[1], "evt-listen-1  -> 204") {
		t.Fatalf("one line per attempt with its status:\n%s", r.out)
	}
	// Each attempt's time is written as the console writes it ("0.4 ms",
	// "12 ms", "1.2 s"), never Go's "1ms" or "0s".
	took := regexp.MustCompile(`\((\d+(\.\d)? (ms|s)|\d+ min( \d+ s)?)\)$`)
	for _, l := range lines {
		if !took.MatchString(l) {
			t.Fatalf("an attempt's time is not written as the console writes it: %q", l)
		}
	}
	if !strings.Contains(r.errOut, "retrying evt-listen-1 in 1 s") {
		t.Fatalf("the retry's pause is not written as the console writes it:\n%s", r.errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 2 {
		t.Fatalf("%d requests, want 2 (a retry after the 503)", len(hits))
	}
	got := hits[1]
	if string(got.body) != `{"amount":42}` || got.header.Get("X-Lerian-Event-Type") != "transaction.posted" || got.header.Get("ce-id") != "evt-listen-1" {
		t.Fatalf("forwarded %s with %v", got.body, got.header)
	}
	// The receiver verifies it as a delivery: HMAC of id.timestamp.body.
	id, ts := got.header.Get("webhook-id"), got.header.Get("webhook-timestamp")
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id != "evt-listen-1" {
		t.Fatalf("webhook-id %q, webhook-timestamp %q", id, ts)
	}
	key, _ := destination.SecretKey(secret)
	if want := destination.Signature(key, id, n, got.body); got.header.Get("webhook-signature") != want {
		t.Fatalf("webhook-signature %q, want %q", got.header.Get("webhook-signature"), want)
	}

	// Mistakes are usage errors.
	if errOut := c.fail(exitUsage, "listen"); !strings.Contains(errOut, "--forward-to: required") {
		t.Fatalf("no --forward-to: %q", errOut)
	}
	if errOut := c.fail(exitUsage, "listen", "--forward-to", "ftp://x/"); !strings.Contains(errOut, "not an http(s) URL") {
		t.Fatalf("bad --forward-to: %q", errOut)
	}
}
