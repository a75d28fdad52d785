package hub

// Cause kinds of the hub's quarantine (docs/wire-contract.md#quarantine-on-kafka):
// which gate refused a record, as lib-streaming v3 names them in the
// x-lerian-dlq-cause-kind header. Each has a different owner and fix.
const (
	// CauseCodec: not a CloudEvent, or a broken envelope (a required ce-
	// header missing or invalid, extensions out of bounds): the producer's
	// wire format.
	CauseCodec = "codec"
	// CauseSourceMismatch: a source or tenant the hub does not accept (a
	// signature that does not verify, a tenant a single-tenant hub does
	// not serve, a producer writing the hub's own reserved types).
	CauseSourceMismatch = "source_mismatch"
	// CauseUnhandledKey: a type nobody declared where the catalog is
	// strict. The hub's catalog is never strict today: no refusal has it.
	CauseUnhandledKey = "unhandled_key"
	// CauseHandler: every other refusal (a value over
	// STREAMING_HUB_MAX_RECORD_BYTES).
	CauseHandler = "handler"
)

// CauseKinds are the four cause kinds, in the order of the table.
var CauseKinds = []string{CauseCodec, CauseSourceMismatch, CauseUnhandledKey, CauseHandler}
