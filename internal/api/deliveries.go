package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// jobJSON is a delivery job as the API shows it.
type jobJSON struct {
	ID             string `json:"id"`
	SubscriptionID string `json:"subscription_id"`
	EventID        string `json:"event_id"`
	// EventType is the event's type (what the events API calls type);
	// null when retention removed the event.
	EventType        *string       `json:"event_type"`
	Sequence         int64         `json:"sequence"`
	Status           hub.JobStatus `json:"status"`
	Attempts         int           `json:"attempts"`
	NextAttemptAt    *time.Time    `json:"next_attempt_at"`
	DeadLetterReason *string       `json:"dead_letter_reason"`
	LastError        *string       `json:"last_error"`
	CreatedAt        time.Time     `json:"created_at"`
	CompletedAt      *time.Time    `json:"completed_at"`
	// The replay marks: null when the job was never replayed.
	ReplayedAt *time.Time    `json:"replayed_at"`
	ReplayedBy *string       `json:"replayed_by"`
	ReplayedAs *string       `json:"replayed_as"`
	AttemptLog []attemptJSON `json:"attempt_log,omitempty"`
}

type attemptJSON struct {
	ID           string    `json:"id"`
	StartedAt    time.Time `json:"started_at"`
	DurationMS   int64     `json:"duration_ms"`
	StatusCode   *int      `json:"status_code"`
	Error        *string   `json:"error"`
	ResponseBody string    `json:"response_body"`
	// RequestHeaders and ResponseHeaders are objects, {} when none (a
	// broker's answer, an attempt logged before the hub kept them).
	RequestHeaders  map[string]string `json:"request_headers"`
	ResponseHeaders map[string]string `json:"response_headers"`
}

// headersJSON is h as the API shows it: an object, {} for none.
func headersJSON(h map[string]string) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	return h
}

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func toJobJSON(j hub.Job) jobJSON {
	out := jobJSON{
		ID: j.ID, SubscriptionID: j.SubscriptionID, EventID: j.EventID, EventType: optional(j.EventType), Sequence: j.EventSequence,
		Status: j.Status, Attempts: j.Attempts, DeadLetterReason: optional(j.DeadLetterReason),
		LastError: optional(j.LastError), CreatedAt: j.CreatedAt, CompletedAt: j.CompletedAt,
		ReplayedAt: j.ReplayedAt, ReplayedBy: optional(j.ReplayedBy), ReplayedAs: optional(j.ReplayedAs),
	}
	if j.Status == hub.JobPending || j.Status == hub.JobInFlight {
		next := j.NextAttemptAt
		out.NextAttemptAt = &next
	}
	return out
}

// listDeliveries: GET /v1/subscriptions/{id}/deliveries?status=, newest first.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	var status hub.JobStatus
	if v := r.URL.Query().Get("status"); v != "" {
		if status, err = hub.ParseJobStatus(v); err != nil {
			return hub.Errorf(hub.EINVALID, "status: %v", err)
		}
	}
	limit, before, err := pageParams(r)
	if err != nil {
		return err
	}
	jobs, err := s.deps.Store.ListJobs(r.Context(), store.ListJobsParams{
		TenantID: tenantID, SubscriptionID: sub.ID, Status: status, Before: before, Limit: limit + 1,
	})
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

// getDelivery: GET /v1/deliveries/{id}, the job and its attempt log.
func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	j, attempts, err := s.deps.Store.GetJob(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := toJobJSON(j)
	out.AttemptLog = make([]attemptJSON, len(attempts))
	for i, a := range attempts {
		out.AttemptLog[i] = attemptJSON{ID: a.ID, StartedAt: a.StartedAt, DurationMS: a.Duration.Milliseconds(),
			StatusCode: optional(a.StatusCode), Error: optional(a.Error), ResponseBody: a.ResponseBody,
			RequestHeaders: headersJSON(a.RequestHeaders), ResponseHeaders: headersJSON(a.ResponseHeaders)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// replayDelivery: POST /v1/deliveries/{id}/replay, a fresh job for the
// same event (202), even if it was replayed before (an explicit request);
// the replayed job is marked with when, by whom and as what.
func (s *Server) replayDelivery(w http.ResponseWriter, r *http.Request) error {
	tenantID, who, err := s.tenantScopeOf(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	j, err := s.deps.Store.ReplayJob(r.Context(), tenantID, r.PathValue("id"), who.Who())
	if err != nil {
		return err
	}
	s.jobsCreated()
	writeJSON(w, http.StatusAccepted, toJobJSON(j))
	return nil
}

// replaySubscription: POST /v1/subscriptions/{id}/replay
// {"status":"dead_lettered","since":"RFC3339"}: a fresh job for each job
// that ended in status since then and was not replayed yet (202): one
// replayed already has its fresh job, and replaying it again in bulk
// would deliver it twice. The answer says how many it replayed, how many
// matched and were skipped, and, when it replayed none, why.
func (s *Server) replaySubscription(w http.ResponseWriter, r *http.Request) error {
	tenantID, who, err := s.tenantScopeOf(r)
	if err != nil {
		return err
	}
	var req struct {
		Status *string `json:"status"`
		Since  *string `json:"since"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	status := hub.JobDeadLettered
	if req.Status != nil {
		status = hub.JobStatus(*req.Status)
		if status != hub.JobDeadLettered && status != hub.JobSucceeded {
			return hub.Errorf(hub.EINVALID, "status: dead_lettered or succeeded")
		}
	}
	var since time.Time
	if req.Since != nil {
		if since, err = time.Parse(time.RFC3339Nano, *req.Since); err != nil {
			return hub.Errorf(hub.EINVALID, "since: an RFC 3339 timestamp")
		}
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	res, err := s.deps.Store.ReplaySubscription(r.Context(), store.ReplayParams{
		TenantID: tenantID, SubscriptionID: sub.ID, Status: status, Since: since, By: who.Who(),
	})
	if err != nil {
		return err
	}
	if res.Replayed > 0 {
		s.jobsCreated()
	}
	out := replayJSON{Replayed: res.Replayed, Matched: res.Matched, AlreadyReplayed: res.AlreadyReplayed}
	if res.Replayed == 0 {
		out.Reason = replayReason(res, status, since)
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

// replayJSON is a bulk replay's answer.
type replayJSON struct {
	Replayed        int    `json:"replayed"`
	Matched         int    `json:"matched"`
	AlreadyReplayed int    `json:"already_replayed"`
	Reason          string `json:"reason,omitempty"`
}

// replayReason says why a bulk replay replayed nothing. (A subscription
// that is disabled or deleted is refused with 409 before anything is
// counted.)
func replayReason(res store.ReplayResult, status hub.JobStatus, since time.Time) string {
	what := "dead letters"
	if status == hub.JobSucceeded {
		what = "succeeded deliveries"
	}
	window := ""
	if !since.IsZero() {
		window = " since " + since.UTC().Format(time.RFC3339Nano)
	}
	switch left := res.Matched - res.AlreadyReplayed; {
	case res.Matched == 0:
		return "no " + what + window
	case left == 0 && res.Matched == 1:
		return "the 1 matching " + strings.TrimSuffix(what, "s") + window + " was already replayed"
	case left == 0:
		return fmt.Sprintf("all %d matching %s%s were already replayed", res.Matched, what, window)
	case left == 1:
		return "the 1 matching " + strings.TrimSuffix(what, "s") + window + " not yet replayed has its event no longer retained in the inbox"
	default:
		return fmt.Sprintf("the %d matching %s%s not yet replayed have their events no longer retained in the inbox", left, what, window)
	}
}

func (s *Server) jobsCreated() {
	if s.deps.OnJobs != nil {
		s.deps.OnJobs()
	}
}
