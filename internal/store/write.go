package store

import (
	"cmp"
	"slices"
	"time"
)

// WriteParams is one batch of a process's writer (docs/architecture.md,
// "The writer"): everything the process must make durable that is ready
// when the previous batch's commit returns, written in one transaction.
// Any part may be empty.
type WriteParams struct {
	// Ingest are the records ingest took, from any of its partitions, in
	// each partition's order.
	Ingest IngestParams
	// Offer, when set (and Ingest has events), is this process's
	// dispatcher's room for jobs born leased to it: the jobs it may take
	// come back in WriteResult.Born, and the caller hands them over after
	// the commit (nobody is called from inside the store).
	Offer *BirthOffer
	// Complete are delivery results, with their auto-disable gates and the
	// hand-off claim (Complete.Next) of the subscriptions they free.
	Complete CompleteParams
	// DeferStats leaves this batch's own statistics (the types its events
	// carry, the health rollups of its attempts) unwritten: the caller
	// gathers them in memory and writes them later, as Stats.
	DeferStats bool
	// Stats are statistics gathered over an interval (docs/operations.md,
	// "Statistics"), written with this batch.
	Stats Stats
}

// Empty reports whether the batch has nothing to write.
func (p WriteParams) Empty() bool {
	return len(p.Ingest.Events) == 0 && len(p.Ingest.Rejected) == 0 && len(p.Complete.Completions) == 0 && p.Stats.Empty()
}

// Durable reports whether the batch must be on disk when its commit
// returns: a batch with records does (their Kafka offsets are committed
// after it); results alone may be lost with PostgreSQL's own crash, and
// are then sent again (at least once).
func (p WriteParams) Durable() bool { return len(p.Ingest.Events) > 0 || len(p.Ingest.Rejected) > 0 }

// WriteResult is what a batch did: its records' outcomes (as Ingest
// answers), the jobs born leased to the offering dispatcher (with their
// events and subscriptions), and its results' outcome (as CompleteJobs
// answers: fenced, disabled, the hand-off's claimed jobs).
type WriteResult struct {
	Ingest   IngestResult
	Born     []Claimed
	Complete CompleteResult
}

// Stats are the statistics a process gathers between two writes of
// them: the event types seen and the subscriptions' health rollups. They
// decide nothing about delivery; a crash loses at most one interval.
type Stats struct {
	Types   []TypeSeen
	Rollups []Rollup
}

// Empty reports whether there is nothing to write.
func (s Stats) Empty() bool { return len(s.Types) == 0 && len(s.Rollups) == 0 }

// StatsOf are a batch's own statistics: the types of its accepted
// events and the rollups of its attempts.
func StatsOf(p WriteParams, res WriteResult, now time.Time) Stats {
	var s Stats
	if len(p.Ingest.Events) > 0 && len(res.Ingest.Outcomes) == len(p.Ingest.Events) {
		s.Types = TypesSeen(p.Ingest.Events, res.Ingest.Outcomes, now)
	}
	s.Rollups = Rollups(p.Complete.Completions)
	return s
}

// Gathered accumulates statistics between writes, in bounded memory: one
// entry per (tenant, type, major) and per (subscription, bucket). It is
// not safe for concurrent use.
type Gathered struct {
	types   map[typeKey]TypeSeen
	rollups map[rollupKey]*Rollup
}

type typeKey struct {
	tenant, typ string
	major       int
}

type rollupKey struct {
	sub   string
	start time.Time
}

// Add folds s in.
func (g *Gathered) Add(s Stats) {
	if g.types == nil {
		g.types, g.rollups = make(map[typeKey]TypeSeen), make(map[rollupKey]*Rollup)
	}
	for _, t := range s.Types {
		k := typeKey{t.TenantID, t.EventType, t.SchemaMajor}
		if old, ok := g.types[k]; ok {
			t.FirstSeenAt = minTime(old.FirstSeenAt, t.FirstSeenAt)
			if t.LastSeenAt.Before(old.LastSeenAt) {
				t.LastSeenAt, t.Source = old.LastSeenAt, old.Source
			}
		}
		g.types[k] = t
	}
	for _, r := range s.Rollups {
		k := rollupKey{r.SubscriptionID, r.Start}
		if old := g.rollups[k]; old != nil {
			old.Add(r)
			continue
		}
		r := r
		g.rollups[k] = &r
	}
}

// Len is how many entries are gathered.
func (g *Gathered) Len() int { return len(g.types) + len(g.rollups) }

// Take returns what was gathered, sorted (types by tenant, type and
// major; rollups by subscription and bucket: the order the drivers lock
// rows in), and starts again.
func (g *Gathered) Take() Stats {
	var s Stats
	for _, t := range g.types {
		s.Types = append(s.Types, t)
	}
	for _, r := range g.rollups {
		s.Rollups = append(s.Rollups, *r)
	}
	sortTypes(s.Types)
	sortRollups(s.Rollups)
	g.types, g.rollups = nil, nil
	return s
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// LeasedJob is a job in flight under a process's name (LeasedTo): one
// the process may no longer hold in memory (a hand-over lost with its
// commit's answer, a give-back that failed), which it then gives back.
type LeasedJob struct {
	JobLease
	SubscriptionID string
	UpdatedAt      time.Time
}

func sortTypes(ts []TypeSeen) {
	slices.SortFunc(ts, func(a, b TypeSeen) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.EventType, b.EventType), cmp.Compare(a.SchemaMajor, b.SchemaMajor))
	})
}

func sortRollups(rs []Rollup) {
	slices.SortFunc(rs, func(a, b Rollup) int {
		return cmp.Or(cmp.Compare(a.SubscriptionID, b.SubscriptionID), a.Start.Compare(b.Start))
	})
}
