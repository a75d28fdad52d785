package api

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// previewRequest is the body of transform-preview: an event in the shape
// a transform sees ({"id","type","source","subject","time","tenant_id",
// "data"}) or CloudEvent-ish (tenantid, specversion, datacontenttype), and
// optionally a transform to try instead of the subscription's.
type previewRequest struct {
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	Time            string          `json:"time"`
	TenantID        *string         `json:"tenant_id"`
	CETenantID      *string         `json:"tenantid"`
	SpecVersion     string          `json:"specversion"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
	Transform       json.RawMessage `json:"transform"`
}

type previewJSON struct {
	// Transform is the program that ran; null: none, the data goes
	// unchanged.
	Transform   *string `json:"transform"`
	ContentType string  `json:"content_type"`
	// Body is exactly what the destination would receive, as text.
	Body string `json:"body"`
}

// transformPreview: POST /v1/subscriptions/{id}/transform-preview. It runs
// the subscription's transform (or the one in the body, not saved) on the
// event in the body, with the limits of delivery, and answers the body and
// content type a destination would get. A program that does not compile
// is 400; one that fails on this event (its limits, no output, more than
// one, an error of its own) is 422 naming why. It spends the tenant's
// pull tokens, as a test event does.
func (s *Server) transformPreview(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	var req previewRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if ok, retry := s.limiter.allow(tenantID); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		return hub.Errorf(hub.ERATELIMITED, "rate limit reached for tenant %q (shared with pull); retry after %s", tenantID, retry.Round(time.Millisecond))
	}
	sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	program := sub.Transform
	if len(req.Transform) > 0 {
		if program, err = parseTransform(req.Transform); err != nil {
			return err
		}
	}
	ev := req.event(tenantID)
	out := previewJSON{ContentType: ev.DataContentType, Body: string(ev.Data)}
	if program == "" {
		if out.ContentType == "" {
			out.ContentType = hub.DefaultContentType
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	p, err := transform.Compile(program)
	if err != nil {
		return err
	}
	// The caller's tenant waits for a worker, whatever tenant_id the
	// event names; as a preview, it never holds every worker.
	res, err := p.RunAs(r.Context(), transform.Caller{Tenant: tenantID, Preview: true}, transform.InputOf(ev))
	if err != nil {
		return hub.Errorf(hub.EUNPROCESSABLE, "%s", err.Error())
	}
	out.Transform, out.ContentType, out.Body = &program, res.ContentType, string(res.Body)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// event is the request's event: tenant_id (or tenantid) defaults to the
// caller's tenant, datacontenttype to JSON; data that is a JSON string
// under another content type is that string's text.
func (req previewRequest) event(tenantID string) hub.Event {
	ev := hub.Event{ID: req.ID, Type: req.Type, Source: req.Source, Subject: req.Subject, Time: req.Time,
		TenantID: tenantID, DataContentType: req.DataContentType, Data: req.Data}
	if req.CETenantID != nil {
		ev.TenantID = *req.CETenantID
	}
	if req.TenantID != nil {
		ev.TenantID = *req.TenantID
	}
	if len(req.Data) == 0 || isNull(req.Data) {
		ev.Data = nil
	}
	if !transform.IsJSON(req.DataContentType) {
		var text string
		if json.Unmarshal(req.Data, &text) == nil {
			ev.Data = []byte(text)
		}
	}
	return ev
}

// testTransform is the body and content type of a test event under the
// subscription's program (the event's own when there is none), run as a
// preview of the event's tenant: a tenant's test events, like its
// previews, never hold every transform worker.
func testTransform(ctx context.Context, program string, ev hub.Event) ([]byte, string, error) {
	var c transform.Cache
	return c.ApplyAs(ctx, transform.Caller{Tenant: ev.TenantID, Preview: true}, program, ev)
}
