package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// QueueDispatchSettings, QueueResults and QueueClaim expose the dispatch
// path's statements to the plan tests.
var QueueDispatchSettings = queueDispatchSettings

func QueueResults(b *pgx.Batch, cs []store.Completion, now time.Time) {
	queueResults(b, cs, store.SubscriptionsOf(cs), now, true)
}

func QueueClaim(b *pgx.Batch, p store.ClaimParams, now time.Time) {
	var out []store.Claimed
	queueClaim(b, p, now, &out)
}

// MigrateTo applies the migrations up to version upTo, for tests of a
// migration on a schema filled at an older version.
func (db *DB) MigrateTo(ctx context.Context, upTo int) error { return db.migrateTo(ctx, upTo) }

// ListJobsSQL, GetJobSQL and SearchJobsSQL are the job reads' statements,
// for the plan tests.
var (
	ListJobsSQL   = listJobsSQL
	GetJobSQL     = getJobSQL
	SearchJobsSQL = searchJobsSQL
)

// MigrateLockID is golang-migrate's advisory lock id, as the runner
// computes it.
var MigrateLockID = migrateLockID
