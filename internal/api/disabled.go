package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// listDisabledSubscriptions: GET /v1/admin/disabled-subscriptions, the
// subscriptions the hub disabled (disabled_reason set), across tenants,
// most recently disabled first (admin only). Each is shown as
// GET /v1/subscriptions/{id} shows it: never a secret.
func (s *Server) listDisabledSubscriptions(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	p := store.ListDisabledSubscriptionsParams{Limit: limit + 1}
	if cursor != "" {
		if p.After, err = parseDisabledCursor(cursor); err != nil {
			return err
		}
	}
	subs, err := s.deps.Store.ListDisabledSubscriptions(r.Context(), p)
	if err != nil {
		return err
	}
	var next *string // a single-tenant hub's page: its cursor, from the page before filtering
	if served := s.deps.ServedTenant; served != "" {
		// A single-tenant hub shows no other tenant's subscriptions (a
		// page may then be short; its cursor still moves on).
		if len(subs) > limit {
			next = encodeCursor(disabledCursor(s.toSubscriptionJSON(subs[limit-1])))
		}
		subs = slices.DeleteFunc(subs[:min(len(subs), limit)], func(sub hub.Subscription) bool { return sub.TenantID != served })
	}
	out := make([]subscriptionJSON, len(subs))
	ids := map[string][]string{} // by tenant: backfills are read per tenant
	for i, sub := range subs {
		out[i] = s.toSubscriptionJSON(sub)
		ids[sub.TenantID] = append(ids[sub.TenantID], sub.ID)
	}
	for tenant, theirs := range ids {
		bs, err := s.deps.Store.Backfills(r.Context(), tenant, theirs)
		if err != nil {
			return err
		}
		for i := range out {
			if b, ok := bs[out[i].ID]; ok && out[i].TenantID == tenant {
				out[i].Backfill = toBackfillJSON(b)
			}
		}
	}
	pg := paginate(out, limit, disabledCursor)
	if s.deps.ServedTenant != "" {
		pg.NextCursor = next
	}
	writeJSON(w, http.StatusOK, pg)
	return nil
}

// disabledCursor is a subscription's place in that order: when it was
// disabled (Unix microseconds, "-" for never) and its id.
func disabledCursor(sub subscriptionJSON) string {
	at := "-"
	if sub.DisabledAt != nil {
		at = strconv.FormatInt(sub.DisabledAt.UnixMicro(), 10)
	}
	return at + "/" + sub.ID
}

func parseDisabledCursor(cursor string) (*store.DisabledPosition, error) {
	bad := hub.Errorf(hub.EINVALID, "cursor: not a cursor this API issued")
	at, id, ok := strings.Cut(cursor, "/")
	if !ok || id == "" {
		return nil, bad
	}
	pos := &store.DisabledPosition{ID: id}
	if at != "-" {
		us, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return nil, bad
		}
		t := time.UnixMicro(us).UTC()
		pos.At = &t
	}
	return pos, nil
}
