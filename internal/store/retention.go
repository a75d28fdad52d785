package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
)

// Retention is the part of the store housekeeping works on: bounded
// deletes of what is past its retention, and a lock that lets one process
// at a time do it.
type Retention interface {
	// Prune deletes at most Batch rows of each kind past its bound, each
	// kind in its own transaction, and says how many it deleted: call it
	// again while a count equals Batch. Jobs go first, so events they
	// held are free in the same call.
	Prune(ctx context.Context, p PruneParams) (PruneResult, error)
	// Exclusive runs fn unless another holder of name — in this process or
	// any other on the same database (and schema) — is running; then it
	// returns false at once. A holder that dies releases it.
	Exclusive(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error)
}

// PruneParams bound what is kept. A zero time leaves that kind alone.
// (Rejected records are bounded by ingest itself.)
type PruneParams struct {
	// SucceededBefore: succeeded jobs completed before it go, with their
	// attempt logs.
	SucceededBefore time.Time
	// DeadLettersBefore: dead letters completed before it go, with their
	// attempt logs.
	DeadLettersBefore time.Time
	// EventsBefore: events received before it go, unless a job that may
	// still send them (pending, in flight, or a dead letter that can be
	// replayed) refers to them.
	EventsBefore time.Time
	// Batch bounds each kind's delete (<= 0 means 1000).
	Batch int
	// ByPartition lets a driver with time partitions (PostgreSQL: weekly,
	// docs/performance.md) work by whole partitions: it drops each partition
	// lying wholly before its bound in which nothing is left that the bounds
	// keep, and deletes rows only in partitions lying wholly before the bound
	// that it keeps (a job not final, or its event, holds one), so rows live
	// up to one partition's span past their bound. Drivers without partitions
	// ignore it.
	ByPartition bool
}

// PruneResult counts what one Prune deleted.
type PruneResult struct {
	SucceededJobs, DeadLetters, Events int
	// Partitions counts the partitions dropped whole (ByPartition); their
	// rows are not in the counts above.
	Partitions int
}

// Full reports whether some kind hit the batch bound: there may be more.
func (r PruneResult) Full(batch int) bool {
	return r.SucceededJobs >= batch || r.DeadLetters >= batch || r.Events >= batch
}

// Partitioner is a store with time partitions (PostgreSQL, docs/performance.md).
type Partitioner interface {
	// EnsurePartitions makes the partitions of the week holding now and
	// of the weeksAhead weeks after it, unless they exist, and says how
	// many it made. Rows that waited in a default partition for their
	// week move into it.
	// A table whose locks it cannot have in time (the hub's own queries
	// hold them) is left, and the error then wraps ErrPartitionsBusy:
	// the caller tries again soon.
	EnsurePartitions(ctx context.Context, now time.Time, weeksAhead int) (int, error)
}

// ErrPartitionsBusy says EnsurePartitions left some partitions unmade
// because the tables were busy: not a fault, a reason to try again soon.
var ErrPartitionsBusy = errors.New("tables busy: some partitions are left for the next try")

// Deleters are a driver's bounded deletes, one per kind; Prune runs them
// in the order the contract needs. Each deletes at most batch rows, in its
// own transaction, and says how many.
type Deleters struct {
	Jobs   func(ctx context.Context, status hub.JobStatus, before time.Time, batch int) (int, error)
	Events func(ctx context.Context, before time.Time, batch int) (int, error)
}

// Prune is Retention.Prune over the deleters: jobs first, so the events
// they held are free in the same call; a zero bound skips its kind.
func (d Deleters) Prune(ctx context.Context, p PruneParams) (PruneResult, error) {
	var r PruneResult
	batch := p.Batch
	if batch <= 0 {
		batch = config.DefaultPruneBatch
	}
	var err error
	if !p.SucceededBefore.IsZero() {
		if r.SucceededJobs, err = d.Jobs(ctx, hub.JobSucceeded, p.SucceededBefore, batch); err != nil {
			return r, fmt.Errorf("succeeded jobs: %w", err)
		}
	}
	if !p.DeadLettersBefore.IsZero() {
		if r.DeadLetters, err = d.Jobs(ctx, hub.JobDeadLettered, p.DeadLettersBefore, batch); err != nil {
			return r, fmt.Errorf("dead letters: %w", err)
		}
	}
	if !p.EventsBefore.IsZero() {
		if r.Events, err = d.Events(ctx, p.EventsBefore, batch); err != nil {
			return r, fmt.Errorf("events: %w", err)
		}
	}
	return r, nil
}
