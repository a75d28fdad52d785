// Package metrics holds every Prometheus collector of the hub, on a registry
// of its own, so the full list of what is measured lives in one file.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Metrics is the hub's set of collectors. The zero value is not usable; call
// New. Every part of the hub requires one (none checks for nil); a test
// takes its own New, whose registry is private to it.
type Metrics struct {
	Registry *prometheus.Registry

	// Ingest.
	IngestRecords      *prometheus.CounterVec // verdict, reason
	InboxWrites        *prometheus.CounterVec // result: ok | error
	InboxEvents        prometheus.Counter
	InboxWriteDuration prometheus.Histogram
	OffsetCommits      *prometheus.CounterVec // result: ok | error
	ConsumerLag        *prometheus.GaugeVec   // topic, partition
	PartitionsAssigned prometheus.Gauge
	// PartitionStalled is 1 while a partition's next record has failed to
	// persist for longer than STREAMING_HUB_INGEST_STALL_AFTER
	// (docs/lerian-platform.md).
	PartitionStalled *prometheus.GaugeVec // topic, partition
	// DLQRecords counts the records kept from the producers' DLQ topics
	// (docs/lerian-platform.md), by DLQ topic (a name the operator controls).
	DLQRecords *prometheus.CounterVec // topic
	// ConsumerDLQ counts the records the hub quarantined on its own DLQ
	// topic (STREAMING_HUB_QUARANTINE_TOPIC), by cause kind: lib-streaming
	// v3's consumer metric (docs/wire-contract.md#quarantine-on-kafka).
	ConsumerDLQ *prometheus.CounterVec // cause_kind
	// ConsumerDLQFailed counts the quarantine writes the broker refused
	// (the partition holds and retries).
	ConsumerDLQFailed prometheus.Counter

	// Delivery.
	Attempts          *prometheus.CounterVec   // outcome: success | failure
	AttemptDuration   *prometheus.HistogramVec // outcome
	EndToEnd          prometheus.Histogram     // ingest to successful delivery
	JobsCompleted     *prometheus.CounterVec   // status: succeeded | dead_lettered, reason
	Jobs              *prometheus.GaugeVec     // status: pending | in_flight | dead_lettered
	LeasesRecovered   *prometheus.CounterVec   // result: recovered | poisoned
	CompletionsFenced prometheus.Counter
	// JobsBorn counts jobs leased at birth by the ingest transaction;
	// Redeliveries jobs sent again after their result was lost, by reason
	// (docs/architecture.md, "The writer").
	JobsBorn       prometheus.Counter
	Redeliveries   *prometheus.CounterVec
	ResultsGivenUp prometheus.Counter
	// The writer (docs/architecture.md, "The writer"): its batches by
	// outcome, their transaction's duration, result writes retried; the
	// heartbeat (docs/delivery.md, "Crashes"): renewals by outcome, and
	// the times the process stopped its attempts because it could not
	// renew.
	WriterBatches       *prometheus.CounterVec // outcome: ok | error
	WriterBatchDuration prometheus.Histogram
	ResultWriteRetries  prometheus.Counter
	Heartbeats          *prometheus.CounterVec // outcome: ok | error | lost
	HeartbeatFences     prometheus.Counter
	Shed                prometheus.Counter
	Throttled           prometheus.Counter
	BreakerChanges      *prometheus.CounterVec // to: open | half_open | closed
	BreakersOpen        prometheus.Gauge
	AutoDisables        prometheus.Counter

	// Pull.
	PullRequests *prometheus.CounterVec // result: events | empty | rate_limited

	// API.
	AuthFailures *prometheus.CounterVec // reason: missing | invalid | throttled
	// AuthDecisions: outcome allowed | denied | unavailable | cached |
	// invalid_token (docs/lerian-platform.md).
	AuthDecisions *prometheus.CounterVec

	// Secrets.
	SecretsSealed *prometheus.GaugeVec // kek_id: stored secrets per key-encryption key

	// Housekeeping.
	HousekeepingPasses *prometheus.CounterVec // result: ran | skipped | error
	RetentionDeleted   *prometheus.CounterVec // kind: succeeded_jobs | dead_letters | events | dlq_records

	// Producer manifests.
	ManifestRefresh *prometheus.CounterVec // result: ok | error

	// Topic drift (docs/operations.md, "Topic drift"): 1 per difference
	// the last check of this replica found; reset when another replica
	// ran the check.
	TopicDrift *prometheus.GaugeVec // topic, kind: undeclared | missing | unassigned

	// Database pool (docs/performance.md): how long calls waited for a
	// connection of their budget; the connections themselves are gauges read
	// at scrape time (WatchPool).
	PoolWait *prometheus.HistogramVec // budget: api | ingest | dispatch
}

// New creates and registers every collector, plus the Go and process ones.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		IngestRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_ingest_records_total",
			Help: "Kafka records ingested, by verdict (accept, reject, discard) and reason.",
		}, []string{"verdict", "reason"}),
		InboxWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_inbox_writes_total",
			Help: "Inbox transactions (one per partition batch), by result (ok, error).",
		}, []string{"result"}),
		InboxEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_inbox_events_written_total",
			Help: "Events written to the inbox by committed transactions.",
		}),
		InboxWriteDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "streaming_hub_inbox_write_duration_seconds",
			Help:    "Duration of one inbox transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		OffsetCommits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_offset_commits_total",
			Help: "Kafka offset commits after a persisted batch, by result (ok, error).",
		}, []string{"result"}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "streaming_hub_consumer_lag",
			Help: "Records between the partition's high watermark and the next record to persist.",
		}, []string{"topic", "partition"}),
		PartitionsAssigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "streaming_hub_partitions_assigned",
			Help: "Kafka partitions this process consumes.",
		}),
		PartitionStalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "streaming_hub_ingest_partition_stalled",
			Help: "1 while the partition's next record has failed to persist for longer than STREAMING_HUB_INGEST_STALL_AFTER (then /readyz answers 503), else 0.",
		}, []string{"topic", "partition"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_delivery_attempts_total",
			Help: "Delivery attempts, by outcome (success: a 2xx answer; failure: anything else).",
		}, []string{"outcome"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "streaming_hub_delivery_attempt_duration_seconds",
			Help:    "Duration of one delivery attempt (the HTTP request), by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"outcome"}),
		EndToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "streaming_hub_delivery_end_to_end_seconds",
			Help:    "From the event's arrival at the hub (or its replay) to its successful delivery.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 18),
		}),
		JobsCompleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_jobs_completed_total",
			Help: "Delivery jobs that reached a terminal state, by status and dead-letter reason.",
		}, []string{"status", "reason"}),
		Jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "streaming_hub_jobs",
			Help: "Delivery jobs by state, sampled by the replica that ran the last housekeeping pass (others export none).",
		}, []string{"status"}),
		LeasesRecovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_leases_recovered_total",
			Help: "Jobs whose lease expired without a result: recovered to pending, or dead-lettered as poison.",
		}, []string{"result"}),
		JobsBorn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_jobs_born_total",
			Help: "Delivery jobs leased at birth, in the ingest transaction, to this process's dispatcher: no claim was needed.",
		}),
		Redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_redeliveries_total",
			Help: "Jobs sent again although an earlier attempt may have reached the receiver, counted once, by the process that takes them over: unwritten_result (their process stopped, or lost its database past its heartbeat, before their result was written), fenced (an attempt canceled when its process could not renew its heartbeat in time, counted by that process once it writes the job back).",
		}, []string{"reason"}),
		CompletionsFenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_completions_fenced_total",
			Help: "Results not written because the worker's lease had been lost.",
		}),
		ResultsGivenUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_results_given_up_total",
			Help: "Results of attempts the database refused for good (the batch was split to find them): their jobs are given back and delivered again.",
		}),
		WriterBatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_writer_batches_total",
			Help: "Transactions of the process's writer (records of every partition, results, births, hand-offs and statistics together), by outcome.",
		}, []string{"outcome"}),
		WriterBatchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "streaming_hub_writer_batch_duration_seconds",
			Help:    "How long one transaction of the writer took, commit included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		ResultWriteRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_result_write_retries_total",
			Help: "Writes of delivery results that failed and were held for another try (records go on meanwhile).",
		}),
		Heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_heartbeats_total",
			Help: "Renewals of this process's heartbeat, by outcome: ok, error (not renewed: the database did not answer), lost (another process had taken its jobs over).",
		}, []string{"outcome"}),
		HeartbeatFences: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_heartbeat_fences_total",
			Help: "Times this process stopped its attempts (canceling those in flight) because its heartbeat could not be renewed before it would lapse.",
		}),
		Shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_delivery_shed_total",
			Help: "Due jobs rescheduled without an attempt because their destination's breaker was open.",
		}),
		Throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_delivery_throttled_total",
			Help: "Due jobs rescheduled without an attempt because their subscription was at its rate_limit.",
		}),
		BreakerChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_breaker_state_changes_total",
			Help: "Circuit breaker transitions, by the state entered.",
		}, []string{"to"}),
		BreakersOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "streaming_hub_breakers_open",
			Help: "(tenant, destination) breakers currently open or half-open in this process.",
		}),
		AutoDisables: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_hub_autodisables_total",
			Help: "Subscriptions disabled automatically after a sustained and spread failure span.",
		}),
		PullRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_pull_requests_total",
			Help: "GET /v1/events requests, by result (events, empty, rate_limited).",
		}, []string{"result"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_auth_failures_total",
			Help: "API requests refused for their credentials, by reason (missing, invalid, throttled).",
		}, []string{"reason"}),
		AuthDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_auth_decisions_total",
			Help: "JWT bearers decided with Lerian's access manager, by outcome (allowed, denied, unavailable, cached, invalid_token).",
		}, []string{"outcome"}),
		SecretsSealed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "streaming_hub_secrets_sealed",
			Help: "Stored secrets by the id of the key-encryption key that seals them: 0 under an old id means STREAMING_HUB_KEK_PREVIOUS can drop it.",
		}, []string{"kek_id"}),
		HousekeepingPasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_housekeeping_passes_total",
			Help: "Housekeeping passes (retention, job counts): ran here, skipped (another replica held the lock), or failed.",
		}, []string{"result"}),
		ManifestRefresh: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_manifest_refresh_total",
			Help: "Fetches of producer manifests (STREAMING_HUB_MANIFEST_SOURCES): ok (stored), or error (malformed, too large, slow or unreachable: the last good copy stays).",
		}, []string{"result"}),
		TopicDrift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "streaming_hub_topic_drift",
			Help: "1 per difference the topic-drift check found: a topic matching the ingest pattern in no producer's manifest (undeclared), a declared topic not on the cluster (missing), a matching topic the consumer group is not assigned (unassigned). Only the replica that ran the last check reports it.",
		}, []string{"topic", "kind"}),
		DLQRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_dlq_records_total",
			Help: "Records read from the producers' DLQ topics (STREAMING_HUB_DLQ_TOPICS_REGEX) and kept for operators, never delivered, by DLQ topic.",
		}, []string{"topic"}),
		ConsumerDLQ: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_consumer_dlq_total",
			Help: "Records the hub refused and quarantined on its own DLQ topic (STREAMING_HUB_QUARANTINE_TOPIC), acknowledged by the broker, by cause kind (codec, source_mismatch, unhandled_key, handler).",
		}, []string{"cause_kind"}),
		ConsumerDLQFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streaming_consumer_dlq_publish_failed_total",
			Help: "Quarantine writes the broker refused; the partition holds, uncommitted, and retries.",
		}),
		RetentionDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "streaming_hub_retention_deleted_total",
			Help: "Rows deleted by retention, by kind.",
		}, []string{"kind"}),
		PoolWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "streaming_hub_db_pool_wait_seconds",
			Help:    "How long a database call waited for a connection of its budget (api, ingest, dispatch): waits mean the budget is saturated.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"budget"}),
	}
	r.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.IngestRecords, m.InboxWrites, m.InboxEvents, m.InboxWriteDuration, m.OffsetCommits,
		m.ConsumerLag, m.PartitionsAssigned, m.PartitionStalled,
		m.Attempts, m.AttemptDuration, m.EndToEnd, m.JobsCompleted, m.Jobs, m.LeasesRecovered,
		m.CompletionsFenced, m.JobsBorn, m.Redeliveries, m.ResultsGivenUp,
		m.WriterBatches, m.WriterBatchDuration, m.ResultWriteRetries, m.Heartbeats, m.HeartbeatFences, m.Shed, m.Throttled, m.BreakerChanges, m.BreakersOpen, m.AutoDisables, m.PullRequests,
		m.AuthFailures, m.AuthDecisions, m.SecretsSealed, m.HousekeepingPasses, m.RetentionDeleted, m.DLQRecords, m.ManifestRefresh, m.PoolWait,
		m.TopicDrift, m.ConsumerDLQ, m.ConsumerDLQFailed,
	)
	// Series that exist from the start read 0 rather than missing.
	m.IngestRecords.WithLabelValues(string(hub.Accept), hub.ReasonAccepted)
	for _, r := range []string{hub.ReasonDuplicate, hub.ReasonUnknownTenant, hub.ReasonInactiveTenant} {
		m.IngestRecords.WithLabelValues(string(hub.Discard), r)
	}
	for _, k := range hub.CauseKinds {
		m.ConsumerDLQ.WithLabelValues(k)
	}
	for _, o := range []string{"success", "failure"} {
		m.Attempts.WithLabelValues(o)
	}
	for _, r := range []string{"missing", "invalid", "throttled"} {
		m.AuthFailures.WithLabelValues(r)
	}
	for _, o := range []string{"allowed", "denied", "unavailable", "cached", "invalid_token"} {
		m.AuthDecisions.WithLabelValues(o)
	}
	for _, st := range []string{"pending", "in_flight", "dead_lettered"} {
		m.Jobs.WithLabelValues(st)
	}
	for _, r := range []string{"ok", "error"} {
		m.InboxWrites.WithLabelValues(r)
		m.OffsetCommits.WithLabelValues(r)
	}
	return m
}

// ObservePoolWait records one call's wait for its budget.
func (m *Metrics) ObservePoolWait(b store.Budget, waited time.Duration) {
	m.PoolWait.WithLabelValues(b.String()).Observe(waited.Seconds())
}

// WatchPool exports the store's connections at each scrape:
// streaming_hub_db_pool_connections{state} (max, in_use, idle) and
// streaming_hub_db_pool_budget_connections{budget,state} (share, in_use).
func (m *Metrics) WatchPool(p store.PoolReporter) {
	m.Registry.MustRegister(poolCollector{p})
}

var (
	poolConnsDesc = prometheus.NewDesc("streaming_hub_db_pool_connections",
		"Database connections of this process: max (the pool size), in_use, idle.", []string{"state"}, nil)
	poolBudgetDesc = prometheus.NewDesc("streaming_hub_db_pool_budget_connections",
		"Each budget's share of the pool and the connections it holds (state share | in_use).", []string{"budget", "state"}, nil)
)

type poolCollector struct{ p store.PoolReporter }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConnsDesc
	ch <- poolBudgetDesc
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.PoolStats()
	ch <- prometheus.MustNewConstMetric(poolConnsDesc, prometheus.GaugeValue, float64(s.Max), "max")
	ch <- prometheus.MustNewConstMetric(poolConnsDesc, prometheus.GaugeValue, float64(s.InUse), "in_use")
	ch <- prometheus.MustNewConstMetric(poolConnsDesc, prometheus.GaugeValue, float64(s.Idle), "idle")
	for b, st := range s.Budgets {
		ch <- prometheus.MustNewConstMetric(poolBudgetDesc, prometheus.GaugeValue, float64(st.Share), b.String(), "share")
		ch <- prometheus.MustNewConstMetric(poolBudgetDesc, prometheus.GaugeValue, float64(st.InUse), b.String(), "in_use")
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
