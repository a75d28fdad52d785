package api

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Pull bounds (docs/api.md).
const (
	pullDefaultLimit = defaultLimit // 50, as every list (docs/api.md)
	pullMaxLimit     = 1000
	pullMaxWait      = 30 * time.Second
	// pullRecheck bounds how long a long poll waits without looking again:
	// events stored by another process wake no one here.
	pullRecheck = time.Second
)

type eventJSON struct {
	ID              string          `json:"id"`
	Sequence        int64           `json:"sequence"`
	Type            string          `json:"type"`
	CEType          string          `json:"ce_type"`
	Source          string          `json:"source"`
	Subject         string          `json:"subject,omitempty"`
	Time            string          `json:"time"`
	TenantID        string          `json:"tenant_id"`
	SchemaVersion   string          `json:"schema_version"`
	DataContentType string          `json:"data_content_type"`
	TraceParent     string          `json:"traceparent,omitempty"`
	TraceState      string          `json:"tracestate,omitempty"`
	ProducerKeyID   string          `json:"producer_key_id,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	DataBase64      []byte          `json:"data_base64,omitempty"`
}

type eventsPage struct {
	Data       []eventJSON `json:"data"`
	NextCursor string      `json:"next_cursor"`
}

// isJSON reports whether a content type carries JSON (application/json,
// text/json, anything +json).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	_, sub, _ := strings.Cut(mt, "/")
	return sub == "json" || strings.HasSuffix(sub, "+json")
}

func toEventJSON(ev hub.Event) eventJSON {
	out := eventJSON{
		ID: ev.ID, Sequence: ev.Sequence, Type: ev.EventType, CEType: ev.Type, Source: ev.Source,
		Subject: ev.Subject, Time: ev.Time, TenantID: ev.TenantID, SchemaVersion: ev.SchemaVersion,
		DataContentType: ev.DataContentType, TraceParent: ev.TraceParent, TraceState: ev.TraceState,
		ProducerKeyID: ev.ProducerKeyID,
	}
	// JSON payloads are embedded as they are; anything else (or JSON that
	// does not parse) goes as base64, so the answer is always valid JSON.
	if isJSON(ev.DataContentType) && json.Valid(ev.Data) {
		out.Data = ev.Data
	} else {
		out.DataBase64 = ev.Data
		if out.DataBase64 == nil {
			out.DataBase64 = []byte{}
		}
	}
	return out
}

// listEvents: GET /v1/events?after=&types=&limit=&wait=. A tenant reads its
// own events in arrival order; with wait, an empty answer is held until an
// event arrives or the wait ends.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := limitParam(r, pullDefaultLimit, pullMaxLimit)
	if err != nil {
		return err
	}
	var after int64
	if c, err := decodeCursor(r, "after"); err != nil {
		return err
	} else if c != "" {
		if after, err = strconv.ParseInt(c, 10, 64); err != nil || after < 0 {
			return hub.Errorf(hub.EINVALID, "after: not a cursor this API issued")
		}
	}
	var types []string
	for _, v := range q["types"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t == "" {
				continue
			}
			if _, _, err := hub.ParseEventType(t); err != nil {
				return hub.Errorf(hub.EINVALID, "types: %v", err)
			}
			types = append(types, t)
		}
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 || wait > pullMaxWait {
			return hub.Errorf(hub.EINVALID, "wait: a Go duration from 0s to 30s, such as 10s")
		}
	}
	if ok, retry := s.limiter.allow(tenantID); !ok {
		s.countPull("rate_limited")
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		return hub.Errorf(hub.ERATELIMITED, "pull rate limit reached for tenant %q; retry after %s", tenantID, retry.Round(time.Millisecond))
	}

	deadline := time.Now().Add(wait)
	for {
		woken := s.waiters.Wait(tenantID)
		evs, err := s.deps.Store.ListEvents(r.Context(), store.ListEventsParams{TenantID: tenantID, After: after, Types: types, Limit: limit})
		if err != nil {
			return err
		}
		left := time.Until(deadline)
		// A shutting-down server answers at once with what it has.
		if len(evs) > 0 || left <= 0 || s.waiters.isReleased() {
			page := eventsPage{Data: make([]eventJSON, len(evs)), NextCursor: *encodeCursor(strconv.FormatInt(after, 10))}
			for i, ev := range evs {
				page.Data[i] = toEventJSON(ev)
			}
			if len(evs) > 0 {
				page.NextCursor = *encodeCursor(strconv.FormatInt(evs[len(evs)-1].Sequence, 10))
				s.countPull("events")
			} else {
				s.countPull("empty")
			}
			writeJSON(w, http.StatusOK, page)
			return nil
		}
		timer := time.NewTimer(min(left, s.pullRecheck))
		s.waiters.hold(1)
		select {
		case <-woken:
		case <-timer.C:
		case <-s.waiters.Released():
		case <-r.Context().Done():
		}
		s.waiters.hold(-1)
		timer.Stop()
		if err := r.Context().Err(); err != nil {
			return fmt.Errorf("pull: %w", err) // the client went away: see writeError
		}
	}
}

func (s *Server) countPull(result string) {
	s.deps.Metrics.PullRequests.WithLabelValues(result).Inc()
}
