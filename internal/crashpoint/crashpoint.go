// Package crashpoint lets the fault suite kill a hub process at a named
// step of the writer and the deliveries (docs/architecture.md, "The
// writer"), as kill -9 would, at the exact moment a test needs. It is
// compiled in only with the build tag faults, which the fault suite builds
// its binary with; otherwise Reach does nothing and costs nothing.
//
// With the tag, STREAMING_HUB_CRASH_AT=NAME[:N] makes the N-th (default
// first) Reach(NAME) write one line to stderr and send the process
// SIGKILL, or the N-th Lose(NAME) write one line and report true.
package crashpoint

// The named steps.
const (
	// Born: a committed ingest transaction's jobs born leased to this
	// process are about to be handed to its dispatcher.
	Born = "born"
	// Unwritten: a batch of answered results is about to be written.
	Unwritten = "unwritten"
	// Written: a batch of results was just written.
	Written = "written"
	// Merged: a batch of records and answered results together (the
	// writer's merged batch: the records' ingest, their births and the
	// results in one transaction) is about to be written.
	Merged = "merged"
	// LostCommit: a merged batch was committed; at this step the process
	// is not killed, the COMMIT's answer is lost instead (Lose).
	LostCommit = "lostcommit"
)

// Reach marks that the process reached the named step.
func Reach(name string) { reach(name) }

// Lose reports whether the answer of the named step is to be lost here:
// with the tag, true at the N-th Lose(NAME) of STREAMING_HUB_CRASH_AT=NAME[:N]
// (the caller then drops its connection and returns an error, as when the
// answer of a COMMIT that went through is cut off); never kills.
func Lose(name string) bool { return lose(name) }
