package ingest

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// rejection records why r was refused: its place, the reason and its first
// store.MaxRejectionHeaders headers by lower-case name (the first of a
// name repeated: enough to show the conflict's source). It is cleaned
// once, where it is stored (store.SafeRejection, in every store driver), so
// whatever bytes a producer sent the row is one the database accepts.
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
		k := strings.ToLower(h.Key)
		if _, dup := rej.Headers[k]; dup {
			continue
		}
		v := string(h.Value)
		rej.Headers[k] = v
		if k == "ce-id" {
			rej.CEID = v
		}
	}
	return rej
}
