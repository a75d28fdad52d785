package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// The headers of a quarantined record, as lib-streaming v3's consumer
// writes them (docs/wire-contract.md#quarantine-on-kafka); the source
// coordinates and the payload marker are in dlq.go.
const (
	HeaderDLQCauseKind      = "x-lerian-dlq-cause-kind"
	HeaderDLQErrorClass     = "x-lerian-dlq-error-class"
	HeaderDLQErrorMessage   = "x-lerian-dlq-error-message"
	HeaderDLQRetryCount     = "x-lerian-dlq-retry-count"
	HeaderDLQFirstFailureAt = "x-lerian-dlq-first-failure-at"
	HeaderDLQProducerID     = "x-lerian-dlq-producer-id"
	HeaderDLQPayloadBytes   = "x-lerian-dlq-payload-bytes"
)

// The error classes of x-lerian-dlq-error-class: lib-streaming's closed set,
// of which a refusal takes three.
const (
	classValidation    = "validation_error"
	classAuth          = "auth_error"
	classSerialization = "serialization_error"
)

// maxErrorMessageBytes bounds x-lerian-dlq-error-message, as lib-streaming
// bounds it (the reasons are at most MaxReasonBytes anyway).
const maxErrorMessageBytes = 4096

// refusal is one record ingest refused, for the quarantine topic.
type refusal struct {
	rec *kgo.Record
	out Outcome
	// retries is x-lerian-dlq-retry-count: 0 from ingest, 1 when a
	// replay refused the record again.
	retries int
	// firstFailure is x-lerian-dlq-first-failure-at: zero means now; a
	// replay gives the first rejection's time.
	firstFailure time.Time
}

// causeKind is the refusal's x-lerian-dlq-cause-kind: every refusal not
// marked otherwise is handler.
func (o Outcome) causeKind() string {
	if o.Cause == "" {
		return hub.CauseHandler
	}
	return o.Cause
}

// errorClass is the refusal's x-lerian-dlq-error-class.
func (o Outcome) errorClass() string {
	switch {
	case strings.HasPrefix(o.Rule, "signature_"):
		return classAuth
	case o.causeKind() == hub.CauseHandler:
		return classSerialization // the value over the limit
	default:
		return classValidation
	}
}

// quarantiner produces the records ingest refuses to the hub's own DLQ
// topic, from a producer client of its own, and waits for the broker's
// acknowledgement: only then may their offsets be committed.
type quarantiner struct {
	topic    string
	producer string // x-lerian-dlq-producer-id: the consumer group
	cl       *kgo.Client
	m        *metrics.Metrics
	now      func() time.Time
	// alone is held exclusively while a record is produced alone, shared
	// while the partitions' quarantines produce their batches: no other
	// record of cl can then share its produce request.
	alone sync.RWMutex
}

// newQuarantiner is nil when topic is empty (no quarantine). conn are the
// connection's options (brokers, TLS, SASL, tests' options), without
// anything of a consumer or a group.
func newQuarantiner(topic, group string, conn []kgo.Opt, writeTimeout time.Duration, m *metrics.Metrics, now func() time.Time) (*quarantiner, error) {
	if topic == "" {
		return nil, nil
	}
	opts := append([]kgo.Opt{}, conn...)
	opts = append(opts,
		// Bounded: a broker that does not take the record within a
		// transaction's time is an outage the partition waits out.
		kgo.RecordDeliveryTimeout(writeTimeout),
		kgo.ProduceRequestTimeout(writeTimeout),
		// Only asks: a cluster that creates no topics on demand answers
		// that the topic does not exist, and the partition holds.
		kgo.AllowAutoTopicCreation(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: quarantine: %w", err)
	}
	return &quarantiner{topic: topic, producer: group, cl: cl, m: m, now: now}, nil
}

func (q *quarantiner) close() {
	if q != nil {
		q.cl.Close()
	}
}

// record is what the quarantine topic gets for r: the original key and
// value, the original headers (the ce-* ones and any other; an earlier
// quarantine's x-lerian-dlq-* headers are left out, so each name appears
// once) and the forensic headers, in lib-streaming's order.
func (q *quarantiner) record(r refusal, now time.Time) *kgo.Record {
	src := r.rec
	hs := make([]kgo.RecordHeader, 0, len(src.Headers)+9)
	for _, h := range src.Headers {
		if !strings.HasPrefix(strings.ToLower(h.Key), "x-lerian-dlq-") {
			hs = append(hs, h)
		}
	}
	first := r.firstFailure
	if first.IsZero() {
		first = now
	}
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	hs = append(hs,
		h(HeaderDLQSourceTopic, src.Topic),
		h(HeaderDLQErrorClass, r.out.errorClass()),
		h(HeaderDLQErrorMessage, store.CleanText(r.out.Reason, maxErrorMessageBytes)),
		h(HeaderDLQRetryCount, strconv.Itoa(r.retries)),
		h(HeaderDLQFirstFailureAt, first.UTC().Format(time.RFC3339Nano)),
		h(HeaderDLQProducerID, q.producer),
		h(HeaderDLQSourcePartition, strconv.FormatInt(int64(src.Partition), 10)),
		h(HeaderDLQSourceOffset, strconv.FormatInt(src.Offset, 10)),
		h(HeaderDLQCauseKind, r.out.causeKind()),
	)
	return &kgo.Record{Topic: q.topic, Key: src.Key, Value: src.Value, Headers: hs}
}

// send produces the refusals not yet done (sent[i] false) and waits for
// every acknowledgement, marking each one taken. The broker's
// max.message.bytes bounds a produce request's batch of records, not a
// record: when it finds a batch too large, each of its records is sent
// again alone, and only a record too large alone is sent without its
// value, marked x-lerian-dlq-payload-omitted: true (a replay reads the
// value at its source), as lib-streaming v3 quarantines one record at a
// time (docs/wire-contract.md#quarantine-on-kafka). It answers the first
// refusal of the broker.
func (q *quarantiner) send(ctx context.Context, rs []refusal, sent []bool) error {
	now := q.now()
	type pending struct {
		i   int
		rec *kgo.Record
	}
	var todo []pending
	for i, r := range rs {
		if !sent[i] {
			todo = append(todo, pending{i, q.record(r, now)})
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var firstErr error
	done := func(p pending, err error) {
		if err == nil {
			sent[p.i] = true
			q.m.ConsumerDLQ.WithLabelValues(rs[p.i].out.causeKind()).Inc()
			return
		}
		q.m.ConsumerDLQFailed.Inc()
		if firstErr == nil {
			firstErr = err
		}
	}
	recs := make([]*kgo.Record, len(todo))
	for i, p := range todo {
		recs[i] = p.rec
	}
	q.alone.RLock()
	results := q.cl.ProduceSync(ctx, recs...)
	q.alone.RUnlock()
	var tooLarge []pending
	for i, res := range results {
		if errors.Is(res.Err, kerr.MessageTooLarge) {
			tooLarge = append(tooLarge, todo[i])
			continue
		}
		done(todo[i], res.Err)
	}
	for _, p := range tooLarge {
		// Fresh records: one a produce failed is not produced again.
		r := p.rec
		err := q.produceAlone(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers})
		if errors.Is(err, kerr.MessageTooLarge) && r.Value != nil {
			err = q.produceAlone(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Headers: append(append([]kgo.RecordHeader{}, r.Headers...),
				kgo.RecordHeader{Key: HeaderDLQPayloadOmitted, Value: []byte("true")},
				kgo.RecordHeader{Key: HeaderDLQPayloadBytes, Value: []byte(strconv.Itoa(len(r.Value)))})})
		}
		done(p, err)
	}
	if firstErr != nil {
		return fmt.Errorf("quarantine topic %s refused a record: %w", q.topic, firstErr)
	}
	return nil
}

// produceAlone produces r in a produce request of its own.
func (q *quarantiner) produceAlone(ctx context.Context, r *kgo.Record) error {
	q.alone.Lock()
	defer q.alone.Unlock()
	return q.cl.ProduceSync(ctx, r).FirstErr()
}

// quarantine produces the batch's refused records to the quarantine topic
// before anything of the batch is persisted or committed, retrying what
// the broker refused with capped, jittered back-off, as persist retries a
// failing database: the partition holds, /readyz names it once it has
// failed for StallAfter, and nothing is lost. It answers false when the
// worker is told to quit first (nothing is committed past the last
// success). A refusal quarantined once is not sent again by a retry.
func (w *partition) quarantine(p *parsed) bool {
	q := w.c.quarantine
	if q == nil || len(p.refused) == 0 {
		return true
	}
	cfg := w.c.cfg
	sent := make([]bool, len(p.refused))
	wait := cfg.RetryMin
	for attempt := 1; ; attempt++ {
		began := w.c.now()
		ctx, cancel := context.WithTimeout(w.ctx, cfg.WriteTimeout)
		err := q.send(ctx, p.refused, sent)
		cancel()
		if err == nil {
			return true
		}
		if w.ctx.Err() != nil {
			return false
		}
		w.setFailing(err, began)
		w.gaugeStall(w.c.now())
		cfg.Logger.Error("quarantine failed; retrying this partition, nothing is committed until the broker takes it",
			"topic", w.topic, "partition", w.partition, "quarantine_topic", q.topic,
			"records", len(p.refused), "attempt", attempt, "retry_in", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-w.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, cfg.RetryMax)
	}
}
