package api

import (
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

type rejectionJSON struct {
	ID         int64             `json:"id"`
	Topic      string            `json:"topic"`
	Partition  int32             `json:"partition"`
	Offset     int64             `json:"offset"`
	CEID       string            `json:"ce_id"`
	Headers    map[string]string `json:"headers"`
	Reason     string            `json:"reason"`
	RejectedAt time.Time         `json:"rejected_at"`
}

// listRejections: GET /v1/admin/rejections, newest first.
func (s *Server) listRejections(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	var before int64
	if cursor != "" {
		if before, err = strconv.ParseInt(cursor, 10, 64); err != nil {
			return hub.Errorf(hub.EINVALID, "cursor: not a cursor this API issued")
		}
	}
	rows, err := s.deps.Store.ListRejections(r.Context(), store.ListRejectionsParams{Before: before, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := make([]rejectionJSON, len(rows))
	for i, rej := range rows {
		out[i] = rejectionJSON(rej)
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(r rejectionJSON) string { return strconv.FormatInt(r.ID, 10) }))
	return nil
}

// ReplayResult is what a replay made of a rejected record read again at
// its source (ingest.Consumer.Replay): its verdict and reason, and for an
// accepted event its tenant and arrival sequence.
type ReplayResult struct {
	Verdict     hub.Verdict
	Reason      string
	TenantID    string
	Sequence    int64
	Quarantined bool // refused again and quarantined a second time
}

type rejectionReplayJSON struct {
	RejectionID int64   `json:"rejection_id"`
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	Verdict     string  `json:"verdict"`
	Reason      *string `json:"reason"`
	TenantID    *string `json:"tenant_id"`
	Sequence    *int64  `json:"sequence"`
	Quarantined bool    `json:"quarantined"`
}

// replayRejection: POST /v1/admin/rejections/{id}/replay reads the
// rejected record again from Kafka at its topic, partition and offset and
// ingests it as if new (docs/operations.md, "Replaying a rejected record"):
// 200 with the new verdict; 404 for a rejection the log does not hold; 410
// record_not_retained when Kafka no longer has the record; 503 unavailable
// when this process reads no Kafka or Kafka does not answer.
func (s *Server) replayRejection(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return hub.Errorf(hub.ENOTFOUND, "rejection %s not found", store.QuoteID(r.PathValue("id")))
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	rej, err := s.deps.Store.GetRejection(r.Context(), id)
	if err != nil {
		return err
	}
	if s.deps.Replay == nil {
		return hub.Errorf(hub.EUNAVAILABLE, "this process reads no Kafka (STREAMING_HUB_ROLE=delivery): replay through a process of role all or ingest")
	}
	res, err := s.deps.Replay(r.Context(), rej)
	if err != nil {
		return err
	}
	out := rejectionReplayJSON{RejectionID: rej.ID, Topic: rej.Topic, Partition: rej.Partition, Offset: rej.Offset,
		Verdict: string(res.Verdict), Quarantined: res.Quarantined}
	if res.Reason != "" {
		out.Reason = &res.Reason
	}
	if res.Verdict == hub.Accept {
		out.TenantID, out.Sequence = &res.TenantID, &res.Sequence
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
