package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

var eventLine = regexp.MustCompile(`(?m)^event default/(\S+) #(\d+) transaction\.posted \(attempt att_\S+\)$`)

// The README's walk-through, end to end against a real dev hub: the
// receiver verifies the probe and every delivery, prints each event once in
// sequence order, acknowledges a replayed duplicate without processing it,
// and refuses a forged request; the pull API reads the same events in the
// same order.
func TestReceiver_AgainstTheDevHub(t *testing.T) {
	h := devhub.Start(t, devhub.Options{Env: map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20"}})

	// The destination must exist before the subscription, and the
	// receiver needs the subscription's secret: serve through a pointer.
	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	var sub struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	if st := h.Do("POST", "/v1/subscriptions", "default", `{"name":"receiver","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+srv.URL+`/hook"}}`, &sub); st != 201 {
		t.Fatalf("create subscription: %d", st)
	}
	out := &testkit.Buffer{}
	hd, err := newHandler([]string{sub.SigningSecret}, consumer.NewMemoryDeduper(consumer.MemoryOptions{}), out)
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(&hd)
	var verified struct {
		VerificationState string `json:"verification_state"`
	}
	if st := h.Do("POST", "/v1/subscriptions/"+sub.ID+"/verify", "default", "", &verified); st != 200 || verified.VerificationState != "active" {
		t.Fatalf("verify: %d %+v; receiver printed:\n%s", st, verified, out)
	}

	prod := testkit.Producer(t, h.Broker)
	want := []string{"evt-a", "evt-b", "evt-c"}
	for _, id := range want {
		testkit.Produce(t, prod, testkit.CERecord(app.DevTopic, 0, "default", id))
	}
	testkit.WaitFor(t, "three events printed", func() bool {
		return len(eventLine.FindAllString(out.String(), -1)) == 3
	})
	var printed []string
	var lastSeq int64
	for _, m := range eventLine.FindAllStringSubmatch(out.String(), -1) {
		seq, _ := strconv.ParseInt(m[2], 10, 64)
		if seq <= lastSeq {
			t.Fatalf("sequence went from %d to %d:\n%s", lastSeq, seq, out)
		}
		lastSeq = seq
		printed = append(printed, m[1])
	}
	if !slices.Equal(printed, want) {
		t.Fatalf("printed %v, want %v", printed, want)
	}

	// Replaying a delivered event sends it again under a new attempt id:
	// the receiver acknowledges it (the hub records success) and does not
	// process it twice.
	var jobs struct {
		Data []struct {
			ID      string
			EventID string `json:"event_id"`
		}
	}
	h.Do("GET", "/v1/subscriptions/"+sub.ID+"/deliveries", "default", "", &jobs)
	var evtB string
	for _, j := range jobs.Data {
		if j.EventID == "evt-b" {
			evtB = j.ID
		}
	}
	if st := h.Do("POST", "/v1/deliveries/"+evtB+"/replay", "default", "", nil); st != 202 {
		t.Fatalf("replay: %d", st)
	}
	testkit.WaitFor(t, "the replay acknowledged as a duplicate", func() bool {
		return strings.Contains(out.String(), "duplicate default/evt-b")
	})
	testkit.WaitFor(t, "the hub to record the replay's success", func() bool {
		h.Do("GET", "/v1/subscriptions/"+sub.ID+"/deliveries?status=succeeded", "default", "", &jobs)
		return len(jobs.Data) == 4
	})
	if n := len(eventLine.FindAllString(out.String(), -1)); n != 3 {
		t.Fatalf("the receiver processed %d events, want 3 (the replay is a duplicate):\n%s", n, out)
	}

	// A request not signed with the subscription's secret never reaches
	// the handler.
	const forged = `{"amount":"1000000.00"}`
	ts := time.Now().Unix()
	sig, _ := consumer.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "evt-forged", ts, []byte(forged))
	req, _ := http.NewRequest("POST", srv.URL+"/hook", strings.NewReader(forged))
	req.Header.Set("webhook-id", "evt-forged")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || strings.Contains(out.String(), "evt-forged #") || !strings.Contains(out.String(), "refused POST /hook") {
		t.Fatalf("forged request: %d; receiver printed:\n%s", resp.StatusCode, out)
	}

	// Pulling reads the same events, in the same order.
	var page struct{ Data []struct{ ID string } }
	h.Do("GET", "/v1/events", "default", "", &page)
	var pulled []string
	for _, e := range page.Data {
		pulled = append(pulled, e.ID)
	}
	if !slices.Equal(pulled, want) {
		t.Fatalf("pulled %v, want %v", pulled, want)
	}
	t.Logf("the receiver printed:\n%s", out)
}
