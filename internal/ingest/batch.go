package ingest

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// split applies the wire contract to a partition's records: those that pass
// become events for the store to admit, the rest rejections.
func split(recs []*kgo.Record, maxValueBytes int) store.IngestParams {
	var p store.IngestParams
	for _, r := range recs {
		ev, reason := Parse(r, maxValueBytes)
		if reason != "" {
			p.Rejected = append(p.Rejected, rejection(r, reason))
			continue
		}
		p.Events = append(p.Events, ev)
	}
	return p
}

// reasonLabel bounds the reject reasons used as metric labels: reasons that
// quote a producer's header name are folded into one.
func reasonLabel(reason string) string {
	switch {
	case strings.HasPrefix(reason, "header name "), strings.HasPrefix(reason, "ce- extension "):
		return "invalid ce- extension"
	}
	return reason
}

// count records the verdicts of a committed batch.
func (c *Consumer) count(p store.IngestParams, res store.IngestResult) {
	m := c.cfg.Metrics
	accepted := 0
	for _, o := range res.Outcomes {
		if o.Verdict == hub.Accept {
			accepted++
			continue
		}
		m.IngestRecords.WithLabelValues(string(o.Verdict), o.Reason).Inc()
	}
	if accepted > 0 {
		m.IngestRecords.WithLabelValues(string(hub.Accept), hub.ReasonAccepted).Add(float64(accepted))
		m.InboxEvents.Add(float64(accepted))
	}
	for _, r := range p.Rejected {
		m.IngestRecords.WithLabelValues(string(hub.Reject), reasonLabel(r.Reason)).Inc()
	}
}
