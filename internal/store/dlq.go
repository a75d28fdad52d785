package store

import (
	"context"
	"time"
)

// DLQRecord is a record read from a producer's dead-letter topic
// (lerian.streaming.<app>.dlq, docs/lerian-platform.md): kept for operators,
// never an event to deliver. Source coordinates are nil when the record does
// not carry them (or carries something that is not a number).
type DLQRecord struct {
	ID              int64
	Topic           string
	Partition       int32
	Offset          int64
	SourceTopic     string
	SourcePartition *int32
	SourceOffset    *int64
	// PayloadOmitted: the producer dropped the payload to make the record
	// fit (x-lerian-dlq-payload-omitted: true).
	PayloadOmitted bool
	CEID           string
	TenantID       string
	Headers        map[string]string
	// ValueExcerpt is the first MaxDLQValueBytes of the value, as text.
	ValueExcerpt string
	ReceivedAt   time.Time
}

// Bounds on what a stored DLQ record keeps.
const (
	MaxDLQValueBytes = 4096
)

// SafeDLQRecord is r as every driver stores it: each text valid UTF-8
// without NUL and bounded, the headers bounded like a rejection's. Whatever
// bytes a producer sent, the row is one the database accepts.
func SafeDLQRecord(r DLQRecord) DLQRecord {
	out := r
	out.Topic = CleanText(r.Topic, MaxRejectionNameBytes)
	out.SourceTopic = CleanText(r.SourceTopic, MaxRejectionNameBytes)
	out.CEID = CleanText(r.CEID, MaxRejectionNameBytes)
	out.TenantID = CleanText(r.TenantID, MaxRejectionNameBytes)
	out.ValueExcerpt = CleanText(r.ValueExcerpt, MaxDLQValueBytes)
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

// ListDLQParams pages DLQ records newest first, optionally filtered.
type ListDLQParams struct {
	Topic    string    // only this DLQ topic; "" means all
	TenantID string    // only records whose ce-tenantid is this; "" means all
	Since    time.Time // only records received at or after it; zero means all
	Before   int64     // only ids lower than this; 0 means from the newest
	Limit    int
}

// DLQ is where the records of the producers' dead-letter topics are kept.
type DLQ interface {
	// SaveDLQRecords stores records in one transaction, stamping
	// received_at; a record already stored (same topic, partition and
	// offset: a redelivery) is kept once, as first stored.
	SaveDLQRecords(ctx context.Context, recs []DLQRecord) error
	ListDLQRecords(ctx context.Context, p ListDLQParams) ([]DLQRecord, error)
	// PruneDLQRecords deletes at most batch records received before
	// before, oldest first, and says how many.
	PruneDLQRecords(ctx context.Context, before time.Time, batch int) (int, error)
}
