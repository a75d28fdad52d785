package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Each row of the rejections page has a Replay button (a form with the
// session's CSRF token): it reads the record again from Kafka and shows
// its new verdict; a record Kafka no longer holds says so.
func TestConsole_ReplayARejectionFromItsRow(t *testing.T) {
	testkit.Long(t)
	const topic = "lerian.streaming.ledger_transaction.posted"
	var consumer *ingest.Consumer
	h := newHub(t, testkit.Drivers[0], options{replay: func(ctx context.Context, rej hubpkg.Rejection) (api.ReplayResult, error) {
		out, err := consumer.Replay(ctx, rej)
		return api.ReplayResult(out), err
	}})
	kafka := testkit.Kafka(t, 1, topic)
	cfg := ingest.Config{Ingest: config.Defaults(config.Serve).Ingest, Store: h.store, Metrics: metrics.New()}
	cfg.Brokers, cfg.Group = kafka.ListenAddrs(), "streaming-hub.test"
	var err error
	if consumer, err = ingest.New(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); consumer.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	bad := testkit.CERecord(topic, 0, "acme", "bad-1")
	bad.Headers = bad.Headers[:3] // no ce-type
	testkit.Produce(t, testkit.Producer(t, kafka), bad)
	var rejections []hubpkg.Rejection
	testkit.WaitFor(t, "the rejection", func() bool {
		rejections, _ = h.store.ListRejections(context.Background(), store.ListRejectionsParams{})
		return len(rejections) == 1
	})
	action := fmt.Sprintf("/console/rejections/%d/replay", rejections[0].ID)

	admin := h.signIn(adminToken)
	if p := admin.get("/console/rejections"); !strings.Contains(p.body, `action="`+action+`"`) || !strings.Contains(p.body, ">Replay</button>") {
		t.Fatalf("the rejections page has no Replay button for %d:\n%s", rejections[0].ID, p.body)
	}
	if p := admin.post(action, url.Values{}); p.status != 403 {
		t.Fatalf("replay without the CSRF token: %d", p.status)
	}
	p := admin.submit("/console/rejections", action, nil)
	if p.status != 200 || !strings.Contains(p.body, "state-reject") || !strings.Contains(p.body, "missing ce-type") ||
		!strings.Contains(p.body, "yes, a second time under the same source coordinates") || !strings.Contains(p.body, `href="/console/rejections"`) {
		t.Fatalf("replay: %d\n%s", p.status, p.body)
	}
	if n, _ := h.store.ListRejections(context.Background(), store.ListRejectionsParams{}); len(n) != 2 {
		t.Fatalf("after the replay, %d rejections, want 2", len(n))
	}

	if err := kafka.DeleteRecords(topic, 0, -1); err != nil {
		t.Fatal(err)
	}
	p = admin.submit("/console/rejections", action, nil)
	if p.status != 410 || !strings.Contains(p.body, "no longer retained") {
		t.Fatalf("replay of a record no longer retained: %d\n%s", p.status, p.body)
	}
}
