package api

import (
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// DLQRecordJSON is an item of GET /v1/admin/dlq: a record of a producer's
// dead-letter topic (docs/lerian-platform.md).
type DLQRecordJSON struct {
	ID              int64             `json:"id"`
	Topic           string            `json:"topic"`
	Partition       int32             `json:"partition"`
	Offset          int64             `json:"offset"`
	SourceTopic     string            `json:"source_topic"`
	SourcePartition *int32            `json:"source_partition"`
	SourceOffset    *int64            `json:"source_offset"`
	PayloadOmitted  bool              `json:"payload_omitted"`
	CEID            string            `json:"ce_id"`
	TenantID        string            `json:"tenant_id"`
	Headers         map[string]string `json:"headers"`
	ValueExcerpt    string            `json:"value_excerpt"`
	ReceivedAt      time.Time         `json:"received_at"`
}

// DLQJSON is r as the API answers it.
func DLQJSON(r store.DLQRecord) DLQRecordJSON {
	out := DLQRecordJSON(r)
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	return out
}

// ListDLQParams reads GET /v1/admin/dlq's query (?topic=, ?tenant_id=,
// ?since=, ?limit=, ?cursor=) into the store's parameters, with Limit one
// more than the page (paginate's look-ahead). Bad input is EINVALID
// naming the parameter.
func ListDLQParams(r *http.Request) (store.ListDLQParams, int, error) {
	q := r.URL.Query()
	p := store.ListDLQParams{Topic: q.Get("topic"), TenantID: q.Get("tenant_id")}
	for name, v := range map[string]string{"topic": p.Topic, "tenant_id": p.TenantID} {
		if !hub.PlainText(v) || len(v) > 1024 {
			return p, 0, hub.Errorf(hub.EINVALID, "%s: must be valid UTF-8 without control characters, at most 1024 bytes", name)
		}
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return p, 0, hub.Errorf(hub.EINVALID, "since: an RFC 3339 time, such as 2026-01-02T15:04:05Z")
		}
		p.Since = t.UTC()
	}
	limit, err := limitParam(r, defaultLimit, maxLimit)
	if err != nil {
		return p, 0, err
	}
	cursor, err := decodeCursor(r, "cursor")
	if err != nil {
		return p, 0, err
	}
	if cursor != "" {
		if p.Before, err = strconv.ParseInt(cursor, 10, 64); err != nil || p.Before <= 0 {
			return p, 0, hub.Errorf(hub.EINVALID, "cursor: not a cursor this API issued")
		}
	}
	p.Limit = limit + 1
	return p, limit, nil
}

// listDLQ: GET /v1/admin/dlq, the producers' dead-lettered records, newest
// first (admin only).
func (s *Server) listDLQ(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	p, limit, err := ListDLQParams(r)
	if err != nil {
		return err
	}
	rows, err := s.deps.Store.ListDLQRecords(r.Context(), p)
	if err != nil {
		return err
	}
	out := make([]DLQRecordJSON, len(rows))
	for i, rec := range rows {
		out[i] = DLQJSON(rec)
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(r DLQRecordJSON) string { return strconv.FormatInt(r.ID, 10) }))
	return nil
}
