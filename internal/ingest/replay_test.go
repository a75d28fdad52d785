package ingest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A rejected record is read again at its source and ingested as if new:
// still refused (the producer's key is not configured yet), it is refused
// again, a new rejection row and a second quarantine record naming the same
// coordinates; once the operator added the key, the replay accepts it (and
// a further replay is a duplicate); after the log's start moved past it,
// the replay says it is no longer retained.
func TestReplay_RefusedAgainThenAcceptedAfterTheFixThenNotRetained(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const libTopic = "lerian.streaming.ledger"
		s := d.Open(t, store.Options{})
		tenants(t, s, "tenant-1")
		kafka := testkit.Kafka(t, 1, libTopic)
		prod := testkit.Producer(t, kafka)
		k1 := make([]byte, 32)
		for i := range k1 {
			k1[i] = byte(i)
		}
		other := config.SignatureKey{ID: "k0", Source: "ledger", Secret: bytes.Repeat([]byte{9}, 32)}
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		cfg.Signatures = config.Signatures{Keys: []config.SignatureKey{other}}
		c, stop := startConsumer(t, cfg)

		testkit.Produce(t, prod, signedRecord(libTopic)) // signed by k1, which the hub does not know yet
		testkit.WaitFor(t, "offset 1 committed", func() bool {
			return testkit.CommittedOffsets(t, prod, cfg.Group, libTopic)[0] == 1
		})
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{})
		if err != nil || len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, "signature_unknown_key") {
			t.Fatalf("rejections = %+v, %v", rej, err)
		}
		first := rej[0]

		// Replayed before the fix: refused again.
		out, err := c.Replay(context.Background(), first)
		if err != nil || out.Verdict != hub.Reject || !strings.HasPrefix(out.Reason, "signature_unknown_key") || !out.Quarantined {
			t.Fatalf("replay before the fix = %+v, %v", out, err)
		}
		if rej, _ := s.ListRejections(context.Background(), store.ListRejectionsParams{}); len(rej) != 2 || rej[0].Offset != 0 || rej[0].ID == first.ID {
			t.Fatalf("after a refused replay, rejections = %+v", rej)
		}
		q := readTopic(t, kafka, quarantineTopic, 2)
		for i, r := range q {
			for k, v := range map[string]string{
				"x-lerian-dlq-source-topic": libTopic, "x-lerian-dlq-source-partition": "0",
				"x-lerian-dlq-source-offset": "0", "x-lerian-dlq-cause-kind": "source_mismatch",
				"x-lerian-dlq-retry-count": []string{"0", "1"}[i],
			} {
				if got, _ := header(r, k); got != v {
					t.Errorf("quarantine record %d: %s = %q, want %q", i, k, got, v)
				}
			}
		}
		if at, _ := header(q[1], "x-lerian-dlq-first-failure-at"); at != first.RejectedAt.UTC().Format(time.RFC3339Nano) {
			t.Errorf("the replay's quarantine record: first failure at %q, want the first rejection's %s", at, first.RejectedAt)
		}

		// The operator adds the producer's key; the hub restarts with it.
		stop()
		cfg = consumerConfig(kafka.ListenAddrs(), s)
		cfg.Signatures = config.Signatures{Keys: []config.SignatureKey{other, {ID: "k1", Source: "ledger", Secret: k1}}}
		woken := make(chan []string, 1)
		cfg.OnEvents = func(tenants []string) { woken <- tenants }
		c, _ = startConsumer(t, cfg)
		out, err = c.Replay(context.Background(), first)
		if err != nil || out.Verdict != hub.Accept || out.TenantID != "tenant-1" || out.Sequence != 1 || out.Quarantined {
			t.Fatalf("replay after the fix = %+v, %v", out, err)
		}
		if evs := inbox(t, s, "tenant-1"); len(evs) != 1 || evs[0].ProducerKeyID != "k1" || evs[0].Offset != 0 || evs[0].Topic != libTopic {
			t.Fatalf("inbox after the replay = %+v", evs)
		}
		if got := <-woken; len(got) != 1 || got[0] != "tenant-1" {
			t.Errorf("pulls woken for %v", got)
		}
		if got := testutil.ToFloat64(cfg.Metrics.IngestRecords.WithLabelValues("accept", "accepted")); got != 1 {
			t.Errorf("ingest_records_total{accept} = %v after the replay", got)
		}
		out, err = c.Replay(context.Background(), first)
		if err != nil || out.Verdict != hub.Discard || out.Reason != hub.ReasonDuplicate {
			t.Fatalf("a second replay = %+v, %v; want a duplicate", out, err)
		}
		readTopic(t, kafka, quarantineTopic, 2) // nothing more quarantined

		// Retention moves the log's start past it.
		testkit.Produce(t, prod, testkit.CERecord(libTopic, 0, "tenant-1", "later"))
		if err := kafka.DeleteRecords(libTopic, 0, 1); err != nil {
			t.Fatal(err)
		}
		_, err = c.Replay(context.Background(), first)
		if hub.ErrorCode(err) != hub.ENOTRETAINED || !strings.Contains(err.Error(), "now starts at offset 1") {
			t.Fatalf("replay of a record no longer retained: %v", err)
		}
		gone := first
		gone.Topic = "lerian.streaming.gone"
		if _, err = c.Replay(context.Background(), gone); hub.ErrorCode(err) != hub.ENOTRETAINED {
			t.Fatalf("replay of a topic that no longer exists: %v", err)
		}
	})
}
