package sqlite

import (
	"context"
	"database/sql"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// bearJobs inserts matching's jobs, leasing at birth to the dispatcher
// that offered room those it may take (docs/architecture.md, "The commit
// protocol"), by the rules PostgreSQL's insertJobsBorn applies: a
// subscription not held, with no backfill, no rate limit and not
// excluded; a free slot; for an ordered one, no pending job and nothing
// in flight but what the offering dispatcher leased; the offer's room, in
// arrival order. SQLite has one writer, so the reads need no locks. It
// returns the born jobs with their events and subscriptions.
func bearJobs(ctx context.Context, tx *sql.Tx, jobs []hub.Job, o *store.BirthOffer, now time.Time) ([]store.Claimed, error) {
	if o == nil || len(jobs) == 0 {
		return nil, insertJobs(ctx, tx, jobs)
	}
	excluded := make(map[string]bool, len(o.Exclude))
	for _, id := range o.Exclude {
		excluded[id] = true
	}
	free := make(map[string]int) // subscription -> jobs it may take at birth; absent: not read yet
	ahead := make(map[string]bool)
	var born []hub.Job
	runAhead := make(map[string]bool)
	for i := range jobs {
		j := &jobs[i]
		n, ok := free[j.SubscriptionID]
		if !ok {
			var err error
			if n, ahead[j.SubscriptionID], err = birthRoom(ctx, tx, j.SubscriptionID, o, now); err != nil {
				return nil, err
			}
			if excluded[j.SubscriptionID] {
				n = 0
			}
		}
		if n <= 0 || len(born) >= o.Room {
			free[j.SubscriptionID] = n
			continue
		}
		free[j.SubscriptionID] = n - 1
		j.Status = hub.JobInFlight
		if n > maxRun/2 { // ordered: run-ahead when a job of it is before this one
			runAhead[j.ID] = ahead[j.SubscriptionID]
			ahead[j.SubscriptionID] = true
		}
		born = append(born, *j)
	}
	if err := insertJobs(ctx, tx, jobs); err != nil {
		return nil, err
	}
	for _, j := range born {
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_jobs SET lease_token = ?, lease_expires_at = ?, run_ahead = ?, leased_by = nullif(?, '')
			WHERE id = ?`, o.Token, micros(now.Add(o.Lease)), runAhead[j.ID], o.Owner, j.ID); err != nil {
			return nil, err
		}
	}
	for _, id := range store.SubscriptionsOfJobs(born) {
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET leased_by = ? WHERE id = ?`, o.Owner, id); err != nil {
			return nil, err
		}
	}
	out, err := loadClaimed(ctx, tx, born, o.Token)
	for i := range out {
		out[i].Behind = runAhead[out[i].Job.ID]
	}
	return out, err
}

// maxRun stands for "no bound" in an ordered subscription's birth room:
// it takes every job of the batch, one behind the other.
const maxRun = 1 << 30

// birthRoom is how many jobs subscription id may take at birth and, for
// an ordered one, whether something of it is in flight already.
func birthRoom(ctx context.Context, tx *sql.Tx, id string, o *store.BirthOffer, now time.Time) (int, bool, error) {
	var maxInFlight, inFlight, pending int
	var leasedBy sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT s.max_in_flight,
			(SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = s.id AND f.status = 'in_flight'),
			EXISTS (SELECT 1 FROM delivery_jobs p WHERE p.subscription_id = s.id AND p.status = 'pending'),
			s.leased_by
		FROM subscriptions s
		WHERE s.id = ?1 AND s.enabled = 1 AND s.verification_state = 'active' AND s.deleted_at IS NULL
		  AND (s.held_until IS NULL OR s.held_until <= ?2) AND s.backfill_hold IS NULL AND s.rate_limit_per_second = 0`,
		id, micros(now)).Scan(&maxInFlight, &inFlight, &pending, &leasedBy)
	switch {
	case err == sql.ErrNoRows:
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case maxInFlight > 1:
		return maxInFlight - inFlight, false, nil
	case pending == 0 && (inFlight == 0 || leasedBy.String == o.Owner):
		// Ordered: the sentinel room makes the whole batch born, each
		// job after the first (or after what is in flight) run-ahead.
		return maxRun, inFlight > 0, nil
	}
	return 0, false, nil
}
