package api

import (
	"context"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// verifySubscription re-probes the destination. A pass makes it active and
// enabled in place with its failure span cleared; a failure marks a pending
// subscription failed, and disables an active one (which stays active).
func (s *Server) verifySubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	id := r.PathValue("id")
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, id)
	if err != nil {
		return err
	}
	sec, err := s.openSecrets(sub)
	if err != nil {
		return err
	}
	res := s.probe(r.Context(), sub, sec)
	if !res.Passed {
		// The tenant reads what failed; the log, where (addresses too).
		s.deps.Logger.Info("verification probe failed", "subscription", sub.ID, "error", res.Detail)
	}

	sub, err = s.modifySubscription(r.Context(), tenantID, id, func(sub *hub.Subscription, _ *hub.SubscriptionSecrets) error {
		now := s.now()
		switch {
		case res.Passed:
			sub.VerificationState, sub.Enabled = hub.VerificationActive, true
			sub.DisabledReason, sub.DisabledAt, sub.FailureSpan = "", nil, nil
		case sub.VerificationState == hub.VerificationActive:
			if sub.Enabled {
				sub.Enabled = false
				sub.DisabledReason, sub.DisabledAt = "verification probe failed: "+res.Error, &now
			}
		default:
			sub.VerificationState = hub.VerificationFailed
		}
		return nil
	})
	if err != nil {
		return err
	}
	if res.Passed {
		if s.deps.OnVerified != nil {
			if err := s.deps.OnVerified(r.Context(), sub); err != nil {
				s.deps.Logger.Warn("verification passed but the waiting deliveries could not be made due now", "subscription", sub.ID, "err", err)
			}
		}
		out := []subscriptionJSON{s.toSubscriptionJSON(sub)}
		if err := s.withBackfills(r.Context(), sub.TenantID, out); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out[0])
		return nil
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": map[string]any{
		"code":    "probe_failed",
		"message": "verification probe failed: " + res.Error,
		"probe": map[string]any{
			"status_code": res.StatusCode,
			"error":       res.Error,
			"duration_ms": res.Duration.Milliseconds(),
		},
		"subscription": s.toSubscriptionJSON(sub),
	}})
	return nil
}

// probe sends sub's verification probe through the send path: a webhook
// POST, or a broker publish that passes on the broker's confirm.
func (s *Server) probe(ctx context.Context, sub hub.Subscription, sec hub.SubscriptionSecrets) destination.ProbeResult {
	now := s.now()
	return s.deps.Destinations.Probe(ctx, destination.TargetOf(sub, sec, now), sub.TenantID, sub.ID, now)
}

// Rotation overlap bounds.
const (
	defaultOverlap = 24 * time.Hour
	maxOverlap     = 7 * 24 * time.Hour
)

// rotateSecret makes a new current signing secret (a v1a subscription: a
// new key pair, its public key shown); the old one keeps signing until the
// overlap ends, and secrets already expired are dropped.
func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	var req struct {
		Overlap *string `json:"overlap"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	overlap := defaultOverlap
	if req.Overlap != nil {
		d, err := time.ParseDuration(*req.Overlap)
		if err != nil || d < 0 || d > maxOverlap {
			return hub.Errorf(hub.EINVALID, "overlap: a Go duration from 0s to 168h")
		}
		overlap = d
	}
	now := s.now()
	expires := now.Add(overlap)
	var secret, private, public string
	_, err = s.modifySubscription(r.Context(), tenantID, r.PathValue("id"), func(sub *hub.Subscription, sec *hub.SubscriptionSecrets) error {
		signing := ""
		if sub.SignatureScheme == hub.SignatureV1a {
			if private == "" { // once, should the write be tried again
				private, public = destination.NewKeyPair()
			}
			signing, sub.SigningPublicKey = private, public
		} else {
			if secret == "" {
				secret = destination.NewSecret()
			}
			signing = secret
		}
		kept := []hub.SigningSecret{{Secret: signing}}
		for _, old := range sec.Signing {
			if old.ExpiresAt == nil {
				old.ExpiresAt = &expires
			}
			if now.Before(*old.ExpiresAt) {
				kept = append(kept, old)
			}
		}
		sec.Signing = kept
		return nil
	})
	if err != nil {
		return err
	}
	if public != "" {
		writeJSON(w, http.StatusOK, map[string]any{"signing_public_key": public, "previous_secret_expires_at": expires})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"signing_secret": secret, "previous_secret_expires_at": expires})
	return nil
}
