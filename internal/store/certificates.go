package store

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Certificates serves the check of destinations' client certificates
// (docs/concepts.md, "Operational events"): which subscriptions carry one,
// and the writing of the operational events the check emits.
type Certificates interface {
	// ListClientCertificateSubscriptions lists, across tenants and by id,
	// every enabled, undeleted subscription whose destination has a client
	// certificate.
	ListClientCertificateSubscriptions(ctx context.Context) ([]hub.Subscription, error)
	// EmitOperational writes operational events into their tenants'
	// inboxes in one transaction of its own, admitted and matched like
	// ingested events: dedup on (tenant, ce-id) applies, so an event whose
	// id is already stored writes nothing. It returns how many were
	// written.
	EmitOperational(ctx context.Context, events []hub.Event) (emitted int, err error)
}

// CertificateExpiringEvent is the hub.subscription.certificate_expiring
// event of subscription s, whose client certificate (sha256Hex) expires at
// notAfter, as the check running at now tells it. Its id names the
// subscription and the day (UTC), so the check emits it once a day
// whatever number of times it runs: hub_certexp_<subscription>_<YYYYMMDD>.
func CertificateExpiringEvent(s hub.Subscription, sha256Hex string, notAfter, now time.Time) hub.Event {
	ev := operationalEvent(s.TenantID, hub.EventSubscriptionCertificateExpiring, s.ID, map[string]any{
		"subscription_id":           s.ID,
		"name":                      s.Name,
		"client_certificate_sha256": sha256Hex,
		"expires_at":                notAfter.UTC(),
		"expires_in_days":           ExpiresInDays(notAfter, now),
	}, now)
	ev.ID = "hub_certexp_" + s.ID + "_" + now.UTC().Format("20060102")
	return ev
}

// ExpiresInDays is the whole days from now to notAfter, rounded down:
// 0 within the last day, negative once expired.
func ExpiresInDays(notAfter, now time.Time) int {
	d := notAfter.Sub(now)
	days := int(d / (24 * time.Hour))
	if d < 0 && d%(24*time.Hour) != 0 {
		days--
	}
	return days
}

// CountAccepted is how many outcomes accepted their event.
func CountAccepted(outcomes []Outcome) int {
	n := 0
	for _, o := range outcomes {
		if o.Verdict == hub.Accept {
			n++
		}
	}
	return n
}
