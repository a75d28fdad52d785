package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// ReplayOutcome is what a replay made of a record read again at its source.
type ReplayOutcome struct {
	Verdict hub.Verdict
	// Reason is why it was refused or discarded ("" when accepted).
	Reason   string
	TenantID string // the accepted event's tenant
	Sequence int64  // the accepted event's arrival sequence
	// Quarantined: refused again, and on the quarantine topic a second
	// time, under the same source coordinates.
	Quarantined bool
}

// replayTimeout bounds reading the record again.
const replayTimeout = 30 * time.Second

// Replay reads the record rej names again from Kafka, at its topic,
// partition and offset (a short-lived client assigned that one partition,
// outside the consumer group, so no offset moves), and ingests it as if
// it were new: after an operator fixed what refused it (a key, a tenant, a
// manifest) it is accepted; still refused, it is refused again (a new row
// in the rejection log, a second quarantine record naming the same
// coordinates, its retry count 1 and its first failure the first
// rejection's time). A record the log no longer holds is ENOTRETAINED; a
// cluster that does not answer, or a quarantine the broker refuses,
// EUNAVAILABLE (docs/operations.md, "Replaying a rejected record").
func (c *Consumer) Replay(ctx context.Context, rej hub.Rejection) (ReplayOutcome, error) {
	rec, err := c.fetch(ctx, rej.Topic, rej.Partition, rej.Offset)
	if err != nil {
		return ReplayOutcome{}, err
	}
	p := split([]*kgo.Record{rec}, c.cfg.MaxRecordBytes, c.verifier, c.cfg.ServedTenant)
	var out ReplayOutcome
	if q := c.quarantine; q != nil && len(p.refused) > 0 {
		for i := range p.refused {
			p.refused[i].retries, p.refused[i].firstFailure = 1, rej.RejectedAt
		}
		qctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
		err := q.send(qctx, p.refused, make([]bool, len(p.refused)))
		cancel()
		if err != nil {
			return ReplayOutcome{}, hub.Errorf(hub.EUNAVAILABLE, "the record is refused again, but %s", store.CleanText(err.Error(), 300))
		}
		out.Quarantined = true
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.WriteTimeout)
	res, err := c.cfg.Store.Ingest(wctx, p.IngestParams)
	cancel()
	if err != nil {
		return ReplayOutcome{}, err
	}
	c.count(p, res)
	if c.cfg.OnEvents != nil && len(res.Tenants) > 0 {
		c.cfg.OnEvents(res.Tenants)
	}
	switch {
	case len(p.Rejected) > 0:
		out.Verdict, out.Reason = hub.Reject, p.Rejected[0].Reason
	case p.systemEvents > 0:
		out.Verdict, out.Reason = hub.Discard, hub.ReasonSystemEvent
	case len(res.Outcomes) > 0:
		o := res.Outcomes[0]
		out.Verdict, out.Reason, out.Sequence, out.TenantID = o.Verdict, o.Reason, o.Sequence, p.Events[0].TenantID
	}
	c.cfg.Logger.Info("rejected record replayed", "rejection_id", rej.ID, "topic", rej.Topic, "partition", rej.Partition,
		"offset", rej.Offset, "verdict", out.Verdict, "reason", out.Reason)
	return out, nil
}

// fetch reads the one record at topic/partition/offset.
func (c *Consumer) fetch(ctx context.Context, topic string, partition int32, offset int64) (*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	where := fmt.Sprintf("%s/%d at offset %d", topic, partition, offset)
	notRetained := func(why string) error {
		return hub.Errorf(hub.ENOTRETAINED, "the record of %s is no longer retained: %s", where, why)
	}
	unavailable := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) {
			return hub.Errorf(hub.EUNAVAILABLE, "kafka did not answer within %s while reading %s again", replayTimeout, where)
		}
		return hub.Errorf(hub.EUNAVAILABLE, "kafka: reading %s again: %s", where, store.CleanText(err.Error(), 300))
	}
	conn := connectionOpts(c.cl)

	admCl, err := kgo.NewClient(conn...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, unavailable(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, unavailable(err)
	}
	start, ok := starts.Lookup(topic, partition)
	end, ok2 := ends.Lookup(topic, partition)
	switch {
	case !ok || !ok2 || errors.Is(start.Err, kerr.UnknownTopicOrPartition) || errors.Is(end.Err, kerr.UnknownTopicOrPartition):
		return nil, notRetained("the topic or partition no longer exists")
	case start.Err != nil:
		return nil, unavailable(start.Err)
	case end.Err != nil:
		return nil, unavailable(end.Err)
	case offset < start.Offset:
		return nil, notRetained(fmt.Sprintf("the partition's log now starts at offset %d", start.Offset))
	case offset >= end.Offset:
		return nil, notRetained(fmt.Sprintf("the partition's log now ends at offset %d", end.Offset))
	}

	cl, err := kgo.NewClient(append(conn,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}),
		// Trimmed meanwhile: the first record left is read, and is not it.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			return nil, unavailable(err)
		}
		var fetchErr error
		fetches.EachError(func(_ string, _ int32, err error) { fetchErr = err })
		if recs := fetches.Records(); len(recs) > 0 {
			if r := recs[0]; r.Offset == offset {
				return r, nil
			}
			return nil, notRetained(fmt.Sprintf("the first record left from offset %d on is at %d", offset, recs[0].Offset))
		}
		if fetchErr != nil && !kerr.IsRetriable(fetchErr) {
			return nil, unavailable(fetchErr)
		}
	}
}
