package ingest

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// rejection records why r was refused, with its headers made safe to store
// (valid UTF-8, no NUL, bounded).
func rejection(r *kgo.Record, reason string) hub.Rejection {
	rej := hub.Rejection{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Reason:    reason,
		Headers:   make(map[string]string, min(len(r.Headers), store.MaxRejectionHeaders)),
	}
	for _, h := range r.Headers {
		if len(rej.Headers) == store.MaxRejectionHeaders {
			break
		}
		k := store.CleanText(strings.ToLower(h.Key), store.MaxRejectionNameBytes)
		v := store.CleanText(string(h.Value), store.MaxRejectionHeaderBytes)
		if _, dup := rej.Headers[k]; dup {
			continue // keep the first: enough to show the conflict's source
		}
		rej.Headers[k] = v
		if k == "ce-id" {
			rej.CEID = v
		}
	}
	return store.SafeRejection(rej)
}
