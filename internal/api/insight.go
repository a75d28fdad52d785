package api

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Insight
// (docs/insight.md):
// health, the catalog, lookups, test events and keys.

const defaultHealthWindow = 24 * time.Hour

// healthJSON is a health answer: the hub's (GET /v1/admin/health) and a
// subscription's, which adds what only a subscription has in the middle
// (its last error, backlog, breaker). The hub's leaves that part nil, and
// encoding/json writes no field of a nil embedded pointer: one type, the
// keys in one order.
type healthJSON struct {
	Window        string      `json:"window"`
	Attempts      int64       `json:"attempts"`
	Successes     int64       `json:"successes"`
	Failures      int64       `json:"failures"`
	SuccessRate   *float64    `json:"success_rate"`
	LatencyMS     latencyJSON `json:"latency_ms"`
	LastSuccessAt *time.Time  `json:"last_success_at"`
	LastFailureAt *time.Time  `json:"last_failure_at"`
	*subscriptionHealthJSON
	BucketSeconds int64        `json:"bucket_seconds"`
	Buckets       []bucketJSON `json:"buckets"`
}

// subscriptionHealthJSON is the part of a subscription's health that the
// hub's health has not.
type subscriptionHealthJSON struct {
	LastError    *string          `json:"last_error"`
	Backlog      backlogJSON      `json:"backlog"`
	BreakerState string           `json:"breaker_state"`
	FailureSpan  *failureSpanJSON `json:"failure_span"`
	// DestinationConcurrency is this process's limit on attempts in flight
	// to the subscription's receiver host (docs/delivery.md, "Concurrency
	// that follows the receiver"); null when the process has not sent
	// there lately, or does not deliver.
	DestinationConcurrency *destinationConcurrencyJSON `json:"destination_concurrency"`
}

type destinationConcurrencyJSON struct {
	Limit           int      `json:"limit"`
	InFlight        int      `json:"in_flight"`
	Ceiling         int      `json:"ceiling"`
	RecentLatencyMS *float64 `json:"recent_latency_ms"`
	BestLatencyMS   *float64 `json:"best_latency_ms"`
}

// DestinationLimit is a receiver host's adaptive limit in this process,
// as the dispatcher reports it.
type DestinationLimit struct {
	Limit, InFlight, Ceiling   int
	RecentLatency, BestLatency time.Duration
}

func millisOrNil(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	ms := float64(d.Microseconds()) / 1000
	return &ms
}

// toHealthJSON is the health over a window labelled label; sub, when not
// nil, makes it a subscription's.
func toHealthJSON(label string, h store.HealthSummary, sub *subscriptionHealthJSON) healthJSON {
	return healthJSON{
		Window: label, Attempts: h.Attempts, Successes: h.Successes, Failures: h.Failures, SuccessRate: h.SuccessRate,
		LatencyMS:     latencyJSON{h.P50, h.P95, h.P99},
		LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt,
		subscriptionHealthJSON: sub,
		BucketSeconds:          int64(h.Width / time.Second), Buckets: bucketsJSON(h),
	}
}

type latencyJSON struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

type backlogJSON struct {
	Pending      int64 `json:"pending"`
	InFlight     int64 `json:"in_flight"`
	DeadLettered int64 `json:"dead_lettered"`
}

type bucketJSON struct {
	Start     time.Time `json:"start"`
	Successes int64     `json:"successes"`
	Failures  int64     `json:"failures"`
	P99MS     *float64  `json:"p99_ms"`
}

func bucketsJSON(h store.HealthSummary) []bucketJSON {
	out := make([]bucketJSON, len(h.Buckets))
	for i, b := range h.Buckets {
		out[i] = bucketJSON{Start: b.Start, Successes: b.Successes, Failures: b.Failures, P99MS: b.P99}
	}
	return out
}

// healthWindow reads the window query parameter: a Go duration up to
// STREAMING_HUB_HEALTH_WINDOW, 24h by default; its label is as asked.
func (s *Server) healthWindow(r *http.Request) (time.Duration, string, error) {
	window, label := defaultHealthWindow, "24h"
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > s.deps.HealthWindow {
			return 0, "", hub.Errorf(hub.EINVALID, "window: a Go duration above 0 and at most %s (STREAMING_HUB_HEALTH_WINDOW), such as 24h", s.deps.HealthWindow)
		}
		window, label = d, v
	}
	return min(window, s.deps.HealthWindow), label, nil
}

// hubHealth: GET /v1/admin/health?window=1h, every tenant's attempts over
// the window, from the same rollups as a subscription's health.
func (s *Server) hubHealth(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	window, label, err := s.healthWindow(r)
	if err != nil {
		return err
	}
	now := s.now()
	rollups, err := s.deps.Store.ListHubRollups(r.Context(), store.HealthFrom(now, window))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toHealthJSON(label, store.Summarize(rollups, now, window), nil))
	return nil
}

// subscriptionHealth: GET /v1/subscriptions/{id}/health?window=24h, read
// from the rollups completions keep, never from the attempt log.
func (s *Server) subscriptionHealth(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	window, label, err := s.healthWindow(r)
	if err != nil {
		return err
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	now := s.now()
	rollups, err := s.deps.Store.ListRollups(r.Context(), sub.ID, store.HealthFrom(now, window))
	if err != nil {
		return err
	}
	backlog, err := s.deps.Store.Backlog(r.Context(), sub.ID)
	if err != nil {
		return err
	}
	h := store.Summarize(rollups, now, window)
	view := s.toSubscriptionJSON(sub)
	writeJSON(w, http.StatusOK, toHealthJSON(label, h, &subscriptionHealthJSON{
		LastError: optional(h.LastError),
		Backlog: backlogJSON{Pending: backlog[hub.JobPending], InFlight: backlog[hub.JobInFlight],
			DeadLettered: backlog[hub.JobDeadLettered]},
		BreakerState: view.BreakerState, FailureSpan: view.FailureSpan,
		DestinationConcurrency: s.destinationConcurrency(sub),
	}))
	return nil
}

// destinationConcurrency is the subscription's receiver host's limit in
// this process, if it has one.
func (s *Server) destinationConcurrency(sub hub.Subscription) *destinationConcurrencyJSON {
	if s.deps.DestinationLimit == nil {
		return nil
	}
	l, ok := s.deps.DestinationLimit(sub.Destination.Address())
	if !ok {
		return nil
	}
	return &destinationConcurrencyJSON{Limit: l.Limit, InFlight: l.InFlight, Ceiling: l.Ceiling,
		RecentLatencyMS: millisOrNil(l.RecentLatency), BestLatencyMS: millisOrNil(l.BestLatency)}
}

// catalog is the event types tenantID can subscribe to.
func (s *Server) catalog(r *http.Request, tenantID string) ([]manifest.Entry, error) {
	seen, err := s.deps.Store.ListTypesSeen(r.Context(), tenantID)
	if err != nil {
		return nil, err
	}
	sources, err := s.deps.Store.ListManifests(r.Context())
	if err != nil {
		return nil, err
	}
	return manifest.Catalog(seen, sources), nil
}

// warnings are a subscription's event types that the catalog does not
// know; a failure to read it costs the warnings, never the write.
func (s *Server) warnings(r *http.Request, sub hub.Subscription) []string {
	cat, err := s.catalog(r, sub.TenantID)
	if err != nil {
		s.deps.Logger.Warn("event catalog unavailable for subscription warnings", "err", err)
		return nil
	}
	return manifest.Warnings(sub.EventTypes, cat)
}

// listEventTypes: GET /v1/event-types.
func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	cat, err := s.catalog(r, tenantID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page[manifest.Entry]{Data: cat})
	return nil
}

type manifestJSON struct {
	URL           string     `json:"url"`
	LastFetchedAt *time.Time `json:"last_fetched_at"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	LastError     *string    `json:"last_error"`
	Publisher     *string    `json:"publisher"`
	EventCount    int        `json:"event_count"`
}

// listManifests: GET /v1/admin/manifests, each source as last fetched.
func (s *Server) listManifests(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	sources, err := s.deps.Store.ListManifests(r.Context())
	if err != nil {
		return err
	}
	out := make([]manifestJSON, 0, len(sources))
	for _, src := range sources {
		m := manifestJSON{URL: src.URL, LastFetchedAt: src.LastFetchedAt, LastSuccessAt: src.LastSuccessAt, LastError: optional(src.LastError)}
		if src.Manifest != nil {
			if parsed, err := manifest.Parse(src.Manifest); err == nil {
				m.EventCount = len(parsed.Events)
				m.Publisher = optional(parsed.Publisher.ServiceName)
			}
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, page[manifestJSON]{Data: out})
	return nil
}

type eventDeliveryJSON struct {
	ID             string        `json:"id"`
	SubscriptionID string        `json:"subscription_id"`
	Status         hub.JobStatus `json:"status"`
	Attempts       int           `json:"attempts"`
	LastError      *string       `json:"last_error"`
	CreatedAt      time.Time     `json:"created_at"`
	ReplayedAt     *time.Time    `json:"replayed_at"`
	ReplayedBy     *string       `json:"replayed_by"`
	ReplayedAs     *string       `json:"replayed_as"`
}

// getEvent: GET /v1/events/{id} (the ce-id), as pulled, with its deliveries.
func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	ev, jobs, err := s.deps.Store.GetEvent(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := struct {
		eventJSON
		Deliveries []eventDeliveryJSON `json:"deliveries"`
	}{eventJSON: toEventJSON(ev), Deliveries: make([]eventDeliveryJSON, len(jobs))}
	for i, j := range jobs {
		out.Deliveries[i] = eventDeliveryJSON{ID: j.ID, SubscriptionID: j.SubscriptionID, Status: j.Status,
			Attempts: j.Attempts, LastError: optional(j.LastError), CreatedAt: j.CreatedAt,
			ReplayedAt: j.ReplayedAt, ReplayedBy: optional(j.ReplayedBy), ReplayedAs: optional(j.ReplayedAs)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// searchDeliveries: GET /v1/deliveries?status=&subscription_id=&event_id=&since=&until=,
// the tenant's jobs newest first.
func (s *Server) searchDeliveries(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	p := store.SearchJobsParams{TenantID: tenantID, SubscriptionID: q.Get("subscription_id"), EventID: q.Get("event_id")}
	for name, v := range map[string]string{"subscription_id": p.SubscriptionID, "event_id": p.EventID} {
		if !hub.PlainText(v) || len(v) > 1024 {
			return hub.Errorf(hub.EINVALID, "%s: must be valid UTF-8 without control characters, at most 1024 bytes", name)
		}
	}
	if v := q.Get("status"); v != "" {
		if p.Status, err = hub.ParseJobStatus(v); err != nil {
			return hub.Errorf(hub.EINVALID, "status: %v", err)
		}
	}
	for name, dst := range map[string]*time.Time{"since": &p.Since, "until": &p.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return hub.Errorf(hub.EINVALID, "%s: an RFC 3339 time, such as 2026-01-02T15:04:05Z", name)
			}
			*dst = t.UTC()
		}
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Until.After(p.Since) {
		return hub.Errorf(hub.EINVALID, "until: must be after since")
	}
	limit, before, err := pageParams(r)
	if err != nil {
		return err
	}
	p.Before = before
	p.Limit = limit + 1
	jobs, err := s.deps.Store.SearchJobs(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]jobJSON, len(jobs))
	for i, j := range jobs {
		out[i] = toJobJSON(j)
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(j jobJSON) string { return j.ID }))
	return nil
}

// Test events.
const (
	testEventType    = "hub.test"
	maxTestBodyBytes = 64 << 10
)

type testResultJSON struct {
	DeliveryID   string  `json:"delivery_id"`
	StatusCode   *int    `json:"status_code"`
	DurationMS   int64   `json:"duration_ms"`
	ResponseBody string  `json:"response_body"`
	Error        *string `json:"error"`
}

// testSubscription: POST /v1/subscriptions/{id}/test. One signed attempt
// right now, whatever the subscription's state; nothing is stored and
// nothing retried. It spends the tenant's pull tokens.
func (s *Server) testSubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	var req struct {
		Type *string         `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	typ := testEventType
	if req.Type != nil && *req.Type != testEventType {
		if _, _, err := hub.ParseEventType(*req.Type); err != nil {
			return hub.Errorf(hub.EINVALID, "type: %v", err)
		}
		typ = *req.Type
	}
	data := []byte(`{"test":true}`)
	if len(req.Data) > 0 && string(req.Data) != "null" {
		if len(req.Data) > maxTestBodyBytes {
			return hub.Errorf(hub.EINVALID, "data: at most %d bytes", maxTestBodyBytes)
		}
		data = req.Data
	}
	if ok, retry := s.limiter.allow(tenantID); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		return hub.Errorf(hub.ERATELIMITED, "rate limit reached for tenant %q (shared with pull); retry after %s", tenantID, retry.Round(time.Millisecond))
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	sec, err := s.openSecrets(sub)
	if err != nil {
		return err
	}
	now := s.now()
	id, deliveryID := "test_"+destination.RandomHex(16), hub.NewID("att", now)
	ceType := "studio.lerian." + strings.TrimPrefix(typ, hub.OperationalPrefix)
	if strings.HasPrefix(typ, hub.OperationalPrefix) {
		ceType = hub.OperationalCEType(typ)
	}
	headers := destination.EventHeaders(hub.Event{ID: id, EventType: typ, TenantID: tenantID, Type: ceType,
		Source: hub.OperationalSource, SpecVersion: "1.0", Time: now.Format(time.RFC3339Nano), SchemaVersion: "1.0.0"},
		deliveryID, "")
	headers["X-Lerian-Test"] = []string{"true"}
	// The subscription's transform
	// (docs/filters-and-transforms.md) makes the test's
	// body as it makes every event's; a failing one fails the test, nothing
	// is sent.
	data, contentType, err := testTransform(r.Context(), sub.Transform, hub.Event{ID: id, Type: ceType,
		Source: hub.OperationalSource, Time: now.Format(time.RFC3339Nano), TenantID: tenantID,
		DataContentType: hub.DefaultContentType, Data: data})
	if err != nil {
		writeJSON(w, http.StatusOK, testResultJSON{DeliveryID: deliveryID, Error: optional(err.Error())})
		return nil
	}
	res := s.deps.Destinations.Send(r.Context(), destination.TargetOf(sub, sec, now), destination.Message{
		ID: id, EventType: typ, TenantID: tenantID, ContentType: contentType,
		Body: data, Time: now, Headers: headers,
	})
	if res.Err != nil {
		// The tenant reads what failed; the log, where (addresses too).
		s.deps.Logger.Info("test event failed", "subscription", sub.ID, "error", destination.Detail(res.Err))
	}
	writeJSON(w, http.StatusOK, testResult(deliveryID, res))
	return nil
}

// testResult is the answer to a test event: status_code and response_body
// stay null and empty for a broker destination, error says why the
// destination did not take it.
func testResult(deliveryID string, res destination.Result) testResultJSON {
	out := testResultJSON{DeliveryID: deliveryID, DurationMS: res.Duration.Milliseconds(), ResponseBody: res.Body}
	if res.Status != 0 {
		out.StatusCode = &res.Status
	}
	if res.Err != nil {
		out.Error = optional(res.Err.Error())
	}
	return out
}

type keyJSON struct {
	ID         string     `json:"id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// listKeys: GET /v1/tenants/{id}/keys, never a secret or its hash.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	tenantID := r.PathValue("id")
	if _, err := s.deps.Store.GetTenant(r.Context(), tenantID); err != nil {
		return err
	}
	keys, err := s.deps.Store.ListAPIKeys(r.Context(), tenantID)
	if err != nil {
		return err
	}
	out := make([]keyJSON, len(keys))
	for i, k := range keys {
		out[i] = keyJSON{ID: k.ID, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
	}
	writeJSON(w, http.StatusOK, page[keyJSON]{Data: out})
	return nil
}

// keyUses remembers when this process last wrote each key's last use, so
// authentication writes a key at most once a minute (the store's own
// condition makes that hold across replicas too).
type keyUses struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (u *keyUses) due(id string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil {
		u.last = make(map[string]time.Time)
	}
	if t, ok := u.last[id]; ok && now.Sub(t) < store.KeyTouchInterval && !now.Before(t) {
		return false
	}
	if len(u.last) > 100_000 { // bounded: forgetting only costs one write
		clear(u.last)
	}
	u.last[id] = now
	return true
}

// touchKey records a key's use; a failure is logged, never the request's.
func (s *Server) touchKey(r *http.Request, id string) {
	now := s.now()
	if !s.keyUses.due(id, now) {
		return
	}
	if err := s.deps.Store.TouchAPIKey(r.Context(), id, now); err != nil && r.Context().Err() == nil {
		s.deps.Logger.Warn("recording an API key's last use failed", "key_id", id, "err", err)
	}
}

// lookupJSON is where a resource named by its id lives.
type lookupJSON struct {
	Kind      store.ResourceKind `json:"kind"`
	ID        string             `json:"id"`
	TenantIDs []string           `json:"tenant_ids"`
}

// lookup: GET /v1/admin/lookup?kind=delivery|subscription|event&id=…
// (admin), the tenants holding a resource, so that an operator's link to
// a delivery, subscription or event opens without naming the tenant
// (docs/console.md). A delivery or subscription is one tenant's; a ce-id may be
// several tenants'. None: an empty list, not a 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	q := r.URL.Query()
	kind := store.ResourceKind(q.Get("kind"))
	switch kind {
	case store.ResourceDelivery, store.ResourceSubscription, store.ResourceEvent:
	default:
		return hub.Errorf(hub.EINVALID, "kind: one of delivery, subscription, event")
	}
	id := q.Get("id")
	if id == "" || len(id) > 512 || !hub.PlainText(id) {
		return hub.Errorf(hub.EINVALID, "id: required, plain text of at most 512 bytes")
	}
	tenants, err := s.deps.Store.TenantsOf(r.Context(), kind, id)
	if err != nil {
		return err
	}
	if served := s.deps.ServedTenant; served != "" {
		// A single-tenant hub knows of no other tenant's resources.
		tenants = slices.DeleteFunc(tenants, func(t string) bool { return t != served })
	}
	writeJSON(w, http.StatusOK, lookupJSON{Kind: kind, ID: id, TenantIDs: tenants})
	return nil
}
