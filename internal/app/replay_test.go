package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Through a whole hub: a record refused at ingest is on the quarantine
// topic; POST /v1/admin/rejections/{id}/replay reads it again at its source
// and refuses it again (a new rejection, a second quarantine record naming
// the same coordinates); once the log's start moved past it, the replay
// answers 410 record_not_retained.
func TestEndToEnd_ReplayARejectedRecordFromItsSource(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())
		bad := testkit.CERecord(app.DevTopic, 0, "default", "bad-1", kgo.RecordHeader{Key: "ce-specversion", Value: []byte("0.3")})
		testkit.Produce(t, l.prod, bad)
		type rejection struct {
			ID     int64
			Offset int64
			Reason string
		}
		var list struct{ Data []rejection }
		testkit.WaitFor(t, "the rejection", func() bool {
			l.Do("GET", "/v1/admin/rejections", "", "", &list)
			return len(list.Data) == 1
		})
		first := list.Data[0]

		var out struct {
			RejectionID int64   `json:"rejection_id"`
			Topic       string  `json:"topic"`
			Offset      int64   `json:"offset"`
			Verdict     string  `json:"verdict"`
			Reason      *string `json:"reason"`
			Sequence    *int64  `json:"sequence"`
			Quarantined bool    `json:"quarantined"`
		}
		path := fmt.Sprintf("/v1/admin/rejections/%d/replay", first.ID)
		if st := l.Do("POST", path, "", "", &out); st != 200 {
			t.Fatalf("replay: %d", st)
		}
		if out.RejectionID != first.ID || out.Topic != app.DevTopic || out.Offset != first.Offset || out.Verdict != "reject" ||
			out.Reason == nil || *out.Reason != "duplicate ce-specversion with different values" || out.Sequence != nil || !out.Quarantined {
			t.Fatalf("replay answered %+v", out)
		}
		l.Do("GET", "/v1/admin/rejections", "", "", &list)
		if len(list.Data) != 2 || list.Data[0].ID == first.ID || list.Data[0].Offset != first.Offset {
			t.Fatalf("after the replay, rejections = %+v", list.Data)
		}
		q := readAll(t, l.KafkaAddrs(), config.DefaultQuarantineTopic, 2)
		for i, r := range q {
			for _, h := range r.Headers {
				if h.Key == "x-lerian-dlq-source-offset" && string(h.Value) != fmt.Sprint(first.Offset) {
					t.Errorf("quarantine record %d names source offset %s, want %d", i, h.Value, first.Offset)
				}
			}
		}

		if err := l.Broker.DeleteRecords(app.DevTopic, 0, -1); err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		if st := l.Do("POST", path, "", "", &e); st != 410 || e.Error.Code != "record_not_retained" {
			t.Fatalf("replay of a record no longer retained: %d %+v", st, e)
		}
	})
}

// readAll reads topic from its start until it holds n records.
func readAll(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	deadline := time.Now().Add(testkit.Patience)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got = append(got, cl.PollFetches(ctx).Records()...)
		cancel()
	}
	if len(got) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
	}
	return got
}
