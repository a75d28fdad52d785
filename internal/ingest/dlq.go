package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// The headers lib-streaming stamps on a quarantined record
// (docs/lerian-platform.md).
const (
	HeaderDLQSourceTopic     = "x-lerian-dlq-source-topic"
	HeaderDLQSourcePartition = "x-lerian-dlq-source-partition"
	HeaderDLQSourceOffset    = "x-lerian-dlq-source-offset"
	HeaderDLQPayloadOmitted  = "x-lerian-dlq-payload-omitted"
)

// DLQStore is the part of the store the DLQ consumer needs.
type DLQStore interface {
	SaveDLQRecords(ctx context.Context, recs []store.DLQRecord) error
}

// DLQConfig configures a DLQConsumer: the ingest settings (brokers, the
// DLQ regex and group, session timeout, batch, retry waits) and the same
// TLS and SASL as the delivery consumer.
type DLQConfig struct {
	config.Ingest
	Kafka config.Kafka

	Store   DLQStore
	Metrics *metrics.Metrics
	Logger  *slog.Logger // nil discards
	// ClientOpts are appended to the franz-go options (tests).
	ClientOpts []kgo.Opt
}

func (c DLQConfig) check() error {
	ch := config.Check{Of: "ingest.DLQConfig"}
	ch.Require("Brokers", len(c.Brokers) > 0)
	ch.Require("DLQGroup", c.DLQGroup != "")
	ch.Require("DLQTopicsRegex", c.DLQTopicsRegex != "")
	ch.Require("Store", c.Store != nil)
	ch.Require("Metrics", c.Metrics != nil)
	config.Positive(&ch, "SessionTimeout", c.SessionTimeout)
	config.Positive(&ch, "MaxBatch", c.MaxBatch)
	config.Positive(&ch, "RetryMin", c.RetryMin)
	config.Positive(&ch, "RetryMax", c.RetryMax)
	config.Positive(&ch, "WriteTimeout", c.WriteTimeout)
	return ch.Err()
}

// DLQConsumer reads the producers' dead-letter topics in a consumer group
// of its own and keeps each record for operators (docs/lerian-platform.md).
// It never makes an event of one: nothing it reads is matched or delivered.
// Offsets are committed after the records are stored; storing is idempotent
// on (topic, partition, offset), so a record read twice is kept once.
type DLQConsumer struct {
	cfg DLQConfig
	cl  *kgo.Client
	sec *kafkasec.Security
}

// NewDLQ creates the DLQ consumer; it connects lazily, when Run polls.
func NewDLQ(cfg DLQConfig) (*DLQConsumer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// The delivery consumer beside it, on the same brokers with the same
	// security, logs a refused connection's cause: once is enough
	// (docs/security.md), so this watch keeps the cause for Ready without a
	// line of its own.
	sec, err := kafkasec.New(cfg.Kafka, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("ingest: dlq: %w", err)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.DLQGroup),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(cfg.DLQTopicsRegex),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.WithLogger(kgoLogger{cfg.Logger, sec}),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.SessionTimeout/3)),
	}
	if q := cfg.QuarantineTopic; q != "" {
		// The hub's own quarantine is another application's concern: its
		// records are already in the rejection log.
		opts = append(opts, kgo.ConsumeExcludeTopics("^"+regexp.QuoteMeta(q)+"$"))
	}
	if cfg.MetadataMaxAge > 0 {
		opts = append(opts, kgo.MetadataMaxAge(cfg.MetadataMaxAge), kgo.MetadataMinAge(min(cfg.MetadataMaxAge, time.Second)))
	}
	opts = append(opts, sec.Opts()...)
	opts = append(opts, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: dlq: %w", err)
	}
	return &DLQConsumer{cfg: cfg, cl: cl, sec: sec}, nil
}

// Client exposes the franz-go client (tests).
func (c *DLQConsumer) Client() *kgo.Client { return c.cl }

// Ready reports whether the DLQ consumer has joined its group.
func (c *DLQConsumer) Ready(ctx context.Context) error {
	if err := c.sec.Cause(); err != nil {
		return err
	}
	if member, gen := c.cl.GroupMetadata(); member == "" || gen < 0 {
		return fmt.Errorf("kafka DLQ consumer has not joined its group yet")
	}
	return nil
}

// Run polls until ctx is done, storing each poll's records and then
// committing them, and leaves the group when it stops. A store that fails
// is retried with back-off; nothing is committed past what is stored.
func (c *DLQConsumer) Run(ctx context.Context) error {
	defer c.cl.Close()
	for {
		fetches := c.cl.PollRecords(ctx, c.cfg.MaxBatch)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			c.cfg.Logger.Warn("kafka fetch error", "topic", topic, "partition", partition, "err", err)
		})
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		if !c.persist(ctx, recs) {
			return nil // stopping: the records are read again by whoever goes on
		}
		for _, r := range recs {
			c.cfg.Metrics.DLQRecords.WithLabelValues(r.Topic).Inc()
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := c.cl.CommitRecords(cctx, recs...)
		cancel()
		c.countCommit(err)
		if err != nil {
			// The next commit covers these; a restart reads them again
			// and keeps them once.
			c.cfg.Logger.Warn("DLQ offset commit failed", "err", err)
		}
	}
}

func (c *DLQConsumer) countCommit(err error) {
	if err != nil {
		c.cfg.Metrics.OffsetCommits.WithLabelValues("error").Inc()
	} else {
		c.cfg.Metrics.OffsetCommits.WithLabelValues("ok").Inc()
	}
}

// persist stores the records in one transaction, retrying with capped,
// jittered back-off until it succeeds or ctx ends (false).
func (c *DLQConsumer) persist(ctx context.Context, recs []*kgo.Record) bool {
	rows := make([]store.DLQRecord, len(recs))
	for i, r := range recs {
		rows[i] = DLQRecordOf(r)
	}
	wait := c.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		// Not canceled by ctx: a stop lets the transaction in flight end.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.WriteTimeout)
		err := c.cfg.Store.SaveDLQRecords(wctx, rows)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.cfg.Logger.Error("storing DLQ records failed; retrying", "records", len(rows),
			"attempt", attempt, "retry_in", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, c.cfg.RetryMax)
	}
}

// DLQRecordOf is what is kept of a record of a DLQ topic: the first headers
// (names lower-cased, the first of a repeated name, but the last of a
// repeated x-lerian-dlq-* name), the source coordinates lib-streaming
// stamped (nil when absent or not a number), the ce-id and ce-tenantid, and
// the first 4 KiB of its value. lib-streaming writes the quarantined
// record's own headers verbatim and its x-lerian-dlq-* headers after them,
// so on a record that already carried some (a DLQ copy republished to its
// topic and quarantined again) the last one is the quarantine's, the first
// a stale one naming another record (docs/lerian-platform.md#producer-dlq-topics).
// The store cleans it as it stores it (store.SafeDLQRecord), once: whatever
// bytes it carries, the row is one the database accepts.
func DLQRecordOf(r *kgo.Record) store.DLQRecord {
	d := store.DLQRecord{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Headers:   make(map[string]string, min(len(r.Headers), store.MaxRejectionHeaders)),
	}
	wanted := map[string]string{} // the wanted headers, raw: ce-* the first, x-lerian-dlq-* the last
	for _, h := range r.Headers {
		name := strings.ToLower(h.Key)
		last := strings.HasPrefix(name, "x-lerian-dlq-")
		switch name {
		case "ce-id", "ce-tenantid", HeaderDLQSourceTopic, HeaderDLQSourcePartition, HeaderDLQSourceOffset, HeaderDLQPayloadOmitted:
			if _, dup := wanted[name]; !dup || last {
				wanted[name] = string(h.Value)
			}
		}
		if _, dup := d.Headers[name]; dup {
			if last {
				d.Headers[name] = string(h.Value)
			}
			continue
		}
		if len(d.Headers) < store.MaxRejectionHeaders {
			d.Headers[name] = string(h.Value)
		}
	}
	d.CEID = wanted["ce-id"]
	d.TenantID = wanted["ce-tenantid"]
	d.SourceTopic = wanted[HeaderDLQSourceTopic]
	if v, ok := wanted[HeaderDLQSourcePartition]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil {
			p := int32(n)
			d.SourcePartition = &p
		}
	}
	if v, ok := wanted[HeaderDLQSourceOffset]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			d.SourceOffset = &n
		}
	}
	d.PayloadOmitted = strings.EqualFold(strings.TrimSpace(wanted[HeaderDLQPayloadOmitted]), "true")
	d.ValueExcerpt = string(r.Value[:min(len(r.Value), store.MaxDLQValueBytes)])
	return d // cleaned once, where it is stored (store.SafeDLQRecord)
}
