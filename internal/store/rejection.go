package store

import hub "github.com/lerianstudio/streaming-hub"

// Bounds on what a stored rejection keeps of a record: enough for an
// operator to find the producer, never enough to turn the table into a
// second inbox, and never bytes a text column refuses.
const (
	MaxRejectionHeaders     = 64
	MaxRejectionHeaderBytes = 1024
	MaxRejectionNameBytes   = 256
	MaxRejectionReasonBytes = 200
)

// SafeRejection is r as every driver stores it: each field valid UTF-8
// without NUL and bounded, at most MaxRejectionHeaders headers (the first
// of names that clean to the same). Whatever bytes a producer sent, the
// row is one the database accepts, so a bad record never blocks its
// partition (docs/wire-contract.md).
func SafeRejection(r hub.Rejection) hub.Rejection {
	out := r
	out.Topic = CleanText(r.Topic, MaxRejectionNameBytes)
	out.CEID = CleanText(r.CEID, MaxRejectionNameBytes)
	out.Reason = CleanText(r.Reason, MaxRejectionReasonBytes)
	out.Headers = make(map[string]string, min(len(r.Headers), MaxRejectionHeaders))
	for k, v := range r.Headers {
		if len(out.Headers) == MaxRejectionHeaders {
			break
		}
		k = CleanText(k, MaxRejectionNameBytes)
		if _, dup := out.Headers[k]; !dup {
			out.Headers[k] = CleanText(v, MaxRejectionHeaderBytes)
		}
	}
	return out
}
