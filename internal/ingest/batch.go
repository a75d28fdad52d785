package ingest

import (
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// parsed is a partition's records after the wire contract: events for the
// store to admit, rejections to keep, and what is counted but not stored.
type parsed struct {
	store.IngestParams
	rules        []string // the metric label of each rejection, in order
	systemEvents int      // discarded: addressed to no tenant
	// refused are the rejected records themselves, in order, for the
	// quarantine topic (quarantine.go).
	refused []refusal
}

// split applies the wire contract and the signature check (v; nil checks
// none) to a partition's records. served, when set, is the one tenant a
// single-tenant hub serves: a record of any other ce-tenantid is rejected
// with the reason tenant_not_served.
func split(recs []*kgo.Record, maxValueBytes int, v *Verifier, served string) parsed {
	var p parsed
	for _, r := range recs {
		ev, out := v.judge(r, maxValueBytes)
		if out.Reason == "" && !out.System && served != "" && ev.TenantID != served {
			out = reject(hub.ReasonTenantNotServed).because(hub.CauseSourceMismatch)
		}
		switch {
		case out.Reason != "":
			p.Rejected = append(p.Rejected, rejection(r, out.Reason))
			p.rules = append(p.rules, out.Rule)
			p.refused = append(p.refused, refusal{rec: r, out: out})
		case out.System:
			p.systemEvents++
		default:
			p.Events = append(p.Events, ev)
		}
	}
	return p
}

// count records the verdicts of a committed batch.
func (c *Consumer) count(p parsed, res store.IngestResult) {
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
	for _, rule := range p.rules {
		m.IngestRecords.WithLabelValues(string(hub.Reject), rule).Inc()
	}
	if p.systemEvents > 0 {
		m.IngestRecords.WithLabelValues(string(hub.Discard), hub.ReasonSystemEvent).Add(float64(p.systemEvents))
	}
}
