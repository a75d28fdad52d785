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
