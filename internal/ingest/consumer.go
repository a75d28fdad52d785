package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/trace"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Persister is the part of the store ingest needs.
type Persister interface {
	Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error)
}

// Config configures a Consumer; config.Defaults fills the settings.
type Config struct {
	config.Ingest
	// Kafka is TLS and SASL to the brokers (docs/security.md).
	Kafka config.Kafka
	// ServedTenant, when set, is the one tenant a single-tenant hub serves
	// (config.Tenancy.Served): records of any other ce-tenantid are
	// rejected with the reason tenant_not_served.
	ServedTenant string

	Store   Persister
	Metrics *metrics.Metrics
	Logger  *slog.Logger // nil discards

	// OnEvents, when set, runs after a transaction that accepted events,
	// with the tenants they belong to: the wake-up of long-polling pulls.
	OnEvents func(tenants []string)
	// AfterPersist, when set, runs after a partition's transaction commits
	// and before its offset is committed: the crash window, for tests.
	AfterPersist func(topic string, partition int32)
	// Tracer records a span per persisted batch; nil records none.
	Tracer trace.Tracer
	// ClientOpts are appended to the franz-go options (tests, TLS, SASL).
	ClientOpts []kgo.Opt
	// Now is the clock of the stall check and of the signatures' skew;
	// nil means time.Now.
	Now func() time.Time
}

func (c Config) check() error {
	ch := config.Check{Of: "ingest.Config"}
	ch.Require("Brokers", len(c.Brokers) > 0)
	ch.Require("Group", c.Group != "")
	ch.Require("TopicsRegex", c.TopicsRegex != "")
	ch.Require("Store", c.Store != nil)
	ch.Require("Metrics", c.Metrics != nil)
	config.Positive(&ch, "SessionTimeout", c.SessionTimeout)
	config.Positive(&ch, "MaxRecordBytes", c.MaxRecordBytes)
	config.Positive(&ch, "MaxBatch", c.MaxBatch)
	config.Positive(&ch, "MaxBacklog", c.MaxBacklog)
	config.Positive(&ch, "FetchMaxWait", c.FetchMaxWait)
	config.Positive(&ch, "RetryMin", c.RetryMin)
	config.Positive(&ch, "RetryMax", c.RetryMax)
	config.Positive(&ch, "WriteTimeout", c.WriteTimeout)
	config.Positive(&ch, "StallAfter", c.StallAfter)
	return ch.Err()
}

type topicPartition struct {
	topic     string
	partition int32
}

// Consumer reads the hub's topics as one member of a consumer group. Each
// assigned partition has a worker that persists its records in one
// transaction per batch and then commits that partition's offset: a failing
// partition retries alone and is never committed past what is persisted.
type Consumer struct {
	cfg Config
	cl  *kgo.Client
	sec *kafkasec.Security
	// verifier checks producers' signatures; nil when no key is set.
	verifier *Verifier
	// quarantine produces refused records to the hub's own DLQ topic;
	// nil when STREAMING_HUB_QUARANTINE_TOPIC is empty.
	quarantine *quarantiner

	mu    sync.Mutex
	parts map[topicPartition]*partition
}

func (c *Consumer) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// Stalled is the readiness check named ingest: an error while any partition
// has failed to persist its batch for longer than StallAfter (the database
// refuses it: disk full, a constraint), so an operator sees that no offset
// moves although the database answers.
func (c *Consumer) Stalled(context.Context) error {
	c.mu.Lock()
	parts := make([]*partition, 0, len(c.parts))
	for _, p := range c.parts {
		parts = append(parts, p)
	}
	c.mu.Unlock()
	now := c.now()
	var first error
	for _, p := range parts {
		if d, err := p.stalled(now); d > c.cfg.StallAfter && first == nil {
			first = fmt.Errorf("partition %s/%d has failed to persist for %s: %v", p.topic, p.partition, d.Round(time.Second), err)
		}
		p.gaugeStall(now)
	}
	return first
}

// New creates a consumer; it connects lazily, when Run starts polling.
func New(cfg Config) (*Consumer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sec, err := kafkasec.New(cfg.Kafka, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	c := &Consumer{cfg: cfg, sec: sec, parts: make(map[topicPartition]*partition), verifier: NewVerifier(cfg.Signatures, cfg.Now)}
	if n := len(cfg.Signatures.Keys); n > 0 {
		cfg.Logger.Info("verifying producers' signatures", "keys", n, "required", cfg.Signatures.Require, "max_skew", cfg.Signatures.MaxSkew)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(cfg.TopicsRegex),
		// Facts only, and never the hub's own quarantine, whatever its
		// name and whatever the pattern says.
		kgo.ConsumeExcludeTopics(excluded(cfg.QuarantineTopic)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
		kgo.WithLogger(kgoLogger{cfg.Logger, sec}),
		kgo.SessionTimeout(cfg.SessionTimeout),
		// A partition paused for its backlog (partition.push) is fetched
		// again only after the fetch in flight to its broker returns, and
		// a fetch of idle partitions returns after FetchMaxWait: at
		// franz-go's 5s, one tenant's busy partition among idle ones
		// waited that long after each resume (docs/performance.md).
		kgo.FetchMaxWait(cfg.FetchMaxWait),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.SessionTimeout/3)),
	}
	if cfg.InstanceID != "" {
		// Static membership (docs/performance.md): a crashed process
		// restarted with the same id takes its partitions back at once
		// instead of the group waiting out the session timeout of the dead
		// member.
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.MetadataMaxAge > 0 {
		opts = append(opts, kgo.MetadataMaxAge(cfg.MetadataMaxAge), kgo.MetadataMinAge(min(cfg.MetadataMaxAge, time.Second)))
	}
	opts = append(opts, sec.Opts()...)
	opts = append(opts, cfg.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	c.cl = cl
	if c.quarantine, err = newQuarantiner(cfg.QuarantineTopic, cfg.Group, connectionOpts(cl), cfg.WriteTimeout, cfg.Metrics, c.now); err != nil {
		cl.Close()
		return nil, err
	}
	return c, nil
}

// excluded are the topics no consumer of the hub reads: commands, dead
// letters, and its own quarantine topic (quarantine may be "").
func excluded(quarantine string) []string {
	out := []string{`.*\.commands$`, `.*\.dlq$`}
	if quarantine != "" {
		out = append(out, "^"+regexp.QuoteMeta(quarantine)+"$")
	}
	return out
}

// connectionOpts are cl's options of the connection (brokers, TLS, SASL,
// tests' dialers), without those of a consumer or a group: what a
// short-lived or producing client of the same cluster starts from.
func connectionOpts(cl *kgo.Client) []kgo.Opt {
	var opts []kgo.Opt
	for _, o := range cl.Opts() {
		_, group := o.(kgo.GroupOpt)
		_, consume := o.(kgo.ConsumerOpt)
		if !group && !consume {
			opts = append(opts, o)
		}
	}
	return opts
}

// Run polls until ctx is done, then stops every partition worker, commits
// what they persisted, closes the client and leaves the group (a static
// member too: a graceful stop hands its partitions over at once).
func (c *Consumer) Run(ctx context.Context) error {
	defer c.close()
	for {
		fetches := c.cl.PollRecords(ctx, c.cfg.MaxBatch)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			c.cl.AllowRebalance()
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			// franz-go retries retriable errors itself; what reaches us
			// is worth a line, not a crash.
			c.cfg.Logger.Warn("kafka fetch error", "topic", topic, "partition", partition, "err", err)
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			c.mu.Lock()
			w := c.parts[topicPartition{p.Topic, p.Partition}]
			c.mu.Unlock()
			if w == nil {
				return // revoked between fetch and poll; the new owner reads it
			}
			w.push(p.Records, p.HighWatermark)
		})
		c.cl.AllowRebalance()
	}
}

// close stops the workers (each finishes its current transaction), commits
// what was persisted, and closes the client, leaving the group.
func (c *Consumer) close() {
	c.mu.Lock()
	var all []*partition
	for tp, w := range c.parts {
		all = append(all, w)
		delete(c.parts, tp)
	}
	c.mu.Unlock()
	c.stop(all, true)
	c.quarantine.close()
	member, _ := c.cl.GroupMetadata()
	// A dynamic member leaves in Close; a static one does not, so that a
	// restart under the same id finds its partitions waiting.
	c.cl.Close()
	if c.cfg.InstanceID != "" && member != "" {
		c.leaveStatic(member)
	}
}

// leaveStatic takes the static member out of the group once its client is
// closed: a graceful stop is a rollout or a scale-down (a new pod has a new
// name), and the group would otherwise keep the partitions for the session
// timeout. Only a crash leaves them waiting for the same id. It is sent
// from a short-lived client, since the closed one cannot, and an open one
// would rejoin as soon as the group dropped it. The request names the
// member as well as the id, so it can never remove a successor that took
// the id already.
func (c *Consumer) leaveStatic(member string) {
	opts := connectionOpts(c.cl) // the connection's options (brokers, TLS, SASL), not the group's
	err := func() error {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = c.cfg.Group
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID = member, &c.cfg.InstanceID
		m.Reason = kmsg.StringPtr("streaming-hub stopping")
		req.Members = append(req.Members, m)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, m := range resp.Members {
			// Unknown: franz-go left already (it does after revoking
			// partitions in a rebalance it could not finish). Fenced: a
			// successor holds the id now, and keeps it.
			if err := kerr.ErrorForCode(m.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) && !errors.Is(err, kerr.FencedInstanceID) {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		c.cfg.Logger.Warn("leaving the group as a static member failed; its partitions move when the session times out",
			"instance_id", c.cfg.InstanceID, "session_timeout", c.cfg.SessionTimeout, "err", err)
		return
	}
	c.cfg.Logger.Info("left the group", "instance_id", c.cfg.InstanceID, "member_id", member)
}

// Ready reports whether the consumer has joined its group and Kafka answers.
// A broker that refuses the hub's certificate or credentials is named as
// the cause (kafka: SASL authentication failed, kafka: certificate signed
// by unknown authority, ...).
func (c *Consumer) Ready(ctx context.Context) error {
	if err := c.sec.Cause(); err != nil {
		return err
	}
	if member, gen := c.cl.GroupMetadata(); member == "" || gen < 0 {
		return errors.New("kafka consumer has not joined its group yet")
	}
	if err := c.cl.Ping(ctx); err != nil {
		return fmt.Errorf("kafka unreachable: %w", err)
	}
	return nil
}

// Client exposes the franz-go client (lag, admin, tests).
func (c *Consumer) Client() *kgo.Client { return c.cl }

func (c *Consumer) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, partitions := range assigned {
		for _, p := range partitions {
			w := newPartition(c, topic, p)
			c.parts[topicPartition{topic, p}] = w
			go w.run()
		}
	}
	c.gaugePartitions()
	c.cfg.Logger.Info("kafka partitions assigned", "partitions", assigned)
}

// revoked: we still own the partitions until we return, so the last
// persisted offsets are committed here, the one place it is safe.
func (c *Consumer) revoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	c.stop(c.take(revoked), true)
	c.cfg.Logger.Info("kafka partitions revoked", "partitions", revoked)
}

// lost: someone else may own the partitions already; committing could rewind
// their progress, so nothing is committed.
func (c *Consumer) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.stop(c.take(lost), false)
	c.cfg.Logger.Warn("kafka partitions lost", "partitions", lost)
}

func (c *Consumer) take(tps map[string][]int32) []*partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ws []*partition
	for topic, partitions := range tps {
		for _, p := range partitions {
			tp := topicPartition{topic, p}
			if w := c.parts[tp]; w != nil {
				ws = append(ws, w)
				delete(c.parts, tp)
			}
		}
	}
	c.gaugePartitions()
	return ws
}

// stop tells workers to quit, waits for them, and optionally commits what
// each persisted but had not committed yet.
func (c *Consumer) stop(ws []*partition, commit bool) {
	for _, w := range ws {
		w.quit()
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	for _, w := range ws {
		<-w.done
		c.cfg.Metrics.ConsumerLag.DeleteLabelValues(w.topic, fmt.Sprint(w.partition))
		c.cfg.Metrics.PartitionStalled.DeleteLabelValues(w.topic, fmt.Sprint(w.partition))
		if r := w.uncommitted(); r != nil && commit {
			if offsets[r.Topic] == nil {
				offsets[r.Topic] = make(map[int32]kgo.EpochOffset)
			}
			offsets[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		}
	}
	if len(offsets) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var commitErr error
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = firstCommitError(resp, err)
	})
	c.countCommit(commitErr)
	if commitErr != nil {
		c.cfg.Logger.Warn("final offset commit failed; those records will be read again and discarded as duplicates", "err", commitErr)
	}
}

func (c *Consumer) gaugePartitions() {
	c.cfg.Metrics.PartitionsAssigned.Set(float64(len(c.parts)))
}

func (c *Consumer) countCommit(err error) {
	if err != nil {
		c.cfg.Metrics.OffsetCommits.WithLabelValues("error").Inc()
	} else {
		c.cfg.Metrics.OffsetCommits.WithLabelValues("ok").Inc()
	}
}

// firstCommitError returns the request error or the first per-partition one.
func firstCommitError(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
