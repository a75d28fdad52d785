package api

import (
	"context"
	"net/http"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (s *Server) openSecrets(sub hub.Subscription) (hub.SubscriptionSecrets, error) {
	return destination.OpenSecrets(s.deps.Keyring, sub)
}

func (s *Server) sealSecrets(sub *hub.Subscription, sec hub.SubscriptionSecrets) error {
	return destination.SealSecrets(s.deps.Keyring, sub, sec)
}

// reach is where this hub lets destinations point.
func (s *Server) reach() reach {
	return reach{allowPrivate: s.deps.AllowPrivateSinks, sqsEndpoint: s.deps.AWS.SQSEndpoint}
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	var req subscriptionRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Destination == nil {
		return hub.Errorf(hub.EINVALID, "destination: required")
	}
	if req.EventTypes == nil {
		return hub.Errorf(hub.EINVALID, "event_types: at least one is required")
	}
	since, err := s.backfillSince(req.Backfill)
	if err != nil {
		return err
	}
	now := s.now()
	sub := hub.Subscription{
		ID:                hub.NewID("sub", now),
		TenantID:          tenantID,
		Destination:       hub.Destination{Type: "webhook"},
		MaxInFlight:       1,
		Enabled:           true,
		VerificationState: hub.VerificationPending,
	}
	scheme, _, err := req.signatureScheme()
	if err != nil {
		return err
	}
	// v1 answers its secret once; v1a seals its private key and shows
	// only the public key.
	secret, signing := "", ""
	if sub.SignatureScheme = scheme; scheme == hub.SignatureV1a {
		signing, sub.SigningPublicKey = destination.NewKeyPair()
	} else {
		secret = destination.NewSecret()
		signing = secret
	}
	secrets := hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: signing}}}
	if _, err := req.apply(&sub, &secrets, s.reach()); err != nil {
		return err
	}
	if err := s.sealSecrets(&sub, secrets); err != nil {
		return err
	}
	created, err := s.deps.Store.CreateSubscription(r.Context(), sub)
	if err != nil {
		return err
	}
	out := s.toSubscriptionJSON(created)
	if since != nil {
		// The subscription is pending verification: nothing is matched
		// for it before the backfill is stored.
		b, err := s.deps.Store.StartBackfill(r.Context(), tenantID, created.ID, *since)
		if err != nil {
			// Not half done: without its backfill the subscription would
			// not be what was asked for.
			if derr := s.deps.Store.DeleteSubscription(r.Context(), tenantID, created.ID); derr != nil {
				s.deps.Logger.Error("a subscription whose backfill could not be stored was not deleted", "subscription", created.ID, "err", derr)
			}
			return err
		}
		out.Backfill = toBackfillJSON(b)
	}
	out.SigningSecret = secret
	out.Warnings = s.warnings(r, created)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(r)
	if err != nil {
		return err
	}
	subs, err := s.deps.Store.ListSubscriptions(r.Context(), store.ListSubscriptionsParams{TenantID: tenantID, After: after, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := make([]subscriptionJSON, len(subs))
	for i, sub := range subs {
		out[i] = s.toSubscriptionJSON(sub)
	}
	if err := s.withBackfills(r.Context(), tenantID, out); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(s subscriptionJSON) string { return s.ID }))
	return nil
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := []subscriptionJSON{s.toSubscriptionJSON(sub)}
	if err := s.withBackfills(r.Context(), tenantID, out); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out[0])
	return nil
}

func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	var req subscriptionRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	since, err := s.backfillSince(req.Backfill)
	if err != nil {
		return err
	}
	sub, err := s.modifySubscription(r.Context(), tenantID, r.PathValue("id"), func(sub *hub.Subscription, sec *hub.SubscriptionSecrets) error {
		wasEnabled := sub.Enabled
		urlChanged, err := req.apply(sub, sec, s.reach())
		if err != nil {
			return err
		}
		if urlChanged {
			// A new URL has not proved it is the subscriber's.
			sub.VerificationState = hub.VerificationPending
		}
		if sub.Enabled && !wasEnabled {
			sub.DisabledReason, sub.DisabledAt = "", nil
		}
		if !sub.Enabled && wasEnabled && sub.DisabledAt == nil {
			now := s.now()
			sub.DisabledReason, sub.DisabledAt = "disabled through the API", &now
		}
		return nil
	})
	if err != nil {
		return err
	}
	if since != nil {
		// From here the subscription's jobs are held until the backfill
		// has queued the older events (those already attempted stay so).
		if _, err := s.deps.Store.StartBackfill(r.Context(), tenantID, sub.ID, *since); err != nil {
			return err
		}
	}
	outs := []subscriptionJSON{s.toSubscriptionJSON(sub)}
	if err := s.withBackfills(r.Context(), tenantID, outs); err != nil {
		return err
	}
	out := outs[0]
	out.Warnings = s.warnings(r, sub)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	if err := s.deps.Store.DeleteSubscription(r.Context(), tenantID, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// modifySubscription reads, changes and writes a subscription (and its
// opened secrets), retrying when a concurrent writer got there first.
func (s *Server) modifySubscription(ctx context.Context, tenantID, id string, change func(*hub.Subscription, *hub.SubscriptionSecrets) error) (hub.Subscription, error) {
	for attempt := 0; ; attempt++ {
		sub, err := s.deps.Store.GetSubscription(ctx, tenantID, id)
		if err != nil {
			return hub.Subscription{}, err
		}
		sec, err := s.openSecrets(sub)
		if err != nil {
			return hub.Subscription{}, err
		}
		if err := change(&sub, &sec); err != nil {
			return hub.Subscription{}, err
		}
		if err := s.sealSecrets(&sub, sec); err != nil {
			return hub.Subscription{}, err
		}
		updated, err := s.deps.Store.UpdateSubscription(ctx, sub)
		if hub.ErrorCode(err) == hub.ECONFLICT && attempt < 5 {
			continue
		}
		return updated, err
	}
}
