// Package metrics holds every Prometheus collector of the hub, on a registry
// of its own, so the full list of what is measured lives in one file.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	hub "github.com/lerianstudio/streaming-hub"
)

// Metrics is the hub's set of collectors. The zero value is not usable; call
// New.
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
	}
	r.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.IngestRecords, m.InboxWrites, m.InboxEvents, m.InboxWriteDuration, m.OffsetCommits,
		m.ConsumerLag, m.PartitionsAssigned,
	)
	// Series that exist from the start read 0 rather than missing.
	m.IngestRecords.WithLabelValues(string(hub.Accept), hub.ReasonAccepted)
	for _, r := range []string{hub.ReasonDuplicate, hub.ReasonUnknownTenant, hub.ReasonInactiveTenant} {
		m.IngestRecords.WithLabelValues(string(hub.Discard), r)
	}
	for _, r := range []string{"ok", "error"} {
		m.InboxWrites.WithLabelValues(r)
		m.OffsetCommits.WithLabelValues(r)
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
