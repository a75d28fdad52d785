package consumer

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"
)

// Defaults of the dedupers.
const (
	// DefaultDedupeTTL is how long a processed event is remembered: longer
	// than the longest retry schedule the hub accepts (12 steps of at most
	// 10h, so 5 days) and as long as the hub keeps dead letters by default
	// (7 days), from which an operator may replay.
	DefaultDedupeTTL = 7 * 24 * time.Hour
	// DefaultLease is how long a claim outlives a handler that never
	// finished (crash, kill, lost connection to the store). The hub gives up
	// on an attempt after 15s, so a minute covers any handler the hub is
	// still waiting for.
	DefaultLease = time.Minute
)

// State is what Claim found for an event.
type State int

const (
	// Claimed: the event was neither processed nor being processed; the
	// caller now holds it and must Commit (processed) or Release (failed).
	Claimed State = iota + 1
	// InProgress: another delivery of the event holds an unexpired claim.
	// Its outcome is unknown yet: answer non-2xx so the hub tries again.
	InProgress
	// Processed: a delivery of the event was committed: acknowledge it
	// without processing it again.
	Processed
)

func (s State) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case InProgress:
		return "in progress"
	case Processed:
		return "processed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Claim is the outcome of Deduper.Claim. Pass it back to Commit or Release.
type Claim struct {
	Key   string
	State State
	// Token tells this claim from a later one of the same key (after the
	// lease expired): Release only removes the claim it was given. Set when
	// State is Claimed.
	Token string
}

// Deduper remembers which events were processed, in two phases, so that a
// failed or interrupted handler never swallows an event:
//
//   - Claim atomically takes a key that is free (Claimed), or reports that
//     another delivery holds it (InProgress) or that it was processed
//     (Processed). Of concurrent claims of a free key exactly one wins.
//   - Commit marks the claimed key processed, for the deduper's TTL.
//   - Release frees the claimed key, so the hub's retry processes it.
//
// A claim lives for a lease only: if its holder dies between Claim and
// Commit/Release, the key frees itself and the event is processed again
// on a later retry, never lost. Commit and Release do nothing for a Claim
// whose State is not Claimed.
//
// A single-phase "seen" mark (set before handling, deleted on failure)
// loses events in two cases this design covers: a receiver that crashes
// mid-handler leaves the mark for its whole TTL, so every retry is
// acknowledged unprocessed; and a retry that arrives while the first
// attempt still runs (the hub timed out after 15s) is acknowledged, and
// then the first attempt fails.
//
// Keys are opaque; Middleware passes "<tenant id>/<event id>".
type Deduper interface {
	Claim(ctx context.Context, key string) (Claim, error)
	Commit(ctx context.Context, c Claim) error
	Release(ctx context.Context, c Claim) error
}

// newToken returns a random claim token.
func newToken() string { return rand.Text() }
