package sqlite

import (
	"context"
	"database/sql"
	"sort"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// ClaimJobs: SQLite has one writer, so the whole claim is one write
// transaction and no other claimer can interleave. Each deliverable
// subscription offers its oldest due jobs up to its free in-flight slots;
// the batch takes them tenant round by tenant round.
func (db *DB) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	var out []store.Claimed
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = claim(ctx, tx, p, db.opts.Stamp())
		return err
	})
	return out, err
}

// claim claims within tx; completions use it to claim the next jobs of the
// subscriptions they just freed, in their own transaction.
func claim(ctx context.Context, tx *sql.Tx, p store.ClaimParams, now time.Time) ([]store.Claimed, error) {
	if p.Subscriptions != nil && len(p.Subscriptions) == 0 {
		return nil, nil // targeted at nothing
	}
	nowUS := micros(now)
	token := hub.NewID("lease", now)
	var out []store.Claimed
	err := func() error {
		rows, err := tx.QueryContext(ctx, `SELECT s.id, s.max_in_flight -
				(SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = s.id AND f.status = 'in_flight') AS free
			FROM subscriptions s
			WHERE s.enabled = 1 AND s.verification_state = 'active' AND s.deleted_at IS NULL
			  AND EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.subscription_id = s.id AND j.status = 'pending' AND j.next_attempt_at <= ?)`+
			only(len(p.Subscriptions)), append([]any{nowUS}, anys(p.Subscriptions)...)...)
		if err != nil {
			return err
		}
		type sub struct {
			id   string
			free int
		}
		subs, err := collect(rows, func(r scanner) (sub, error) {
			var s sub
			return s, r.Scan(&s.id, &s.free)
		})
		if err != nil {
			return err
		}
		type offer struct {
			id, tenant string
			seq        int64
			rn         int
		}
		var offers []offer
		pick, err := tx.PrepareContext(ctx, `SELECT id, tenant_id, event_sequence FROM delivery_jobs
			WHERE subscription_id = ? AND status = 'pending' AND next_attempt_at <= ? ORDER BY event_sequence LIMIT ?`)
		if err != nil {
			return err
		}
		defer pick.Close()
		for _, s := range subs {
			if s.free <= 0 {
				continue
			}
			rows, err := pick.QueryContext(ctx, s.id, nowUS, s.free)
			if err != nil {
				return err
			}
			o, err := collect(rows, func(r scanner) (offer, error) {
				var o offer
				return o, r.Scan(&o.id, &o.tenant, &o.seq)
			})
			if err != nil {
				return err
			}
			offers = append(offers, o...)
		}
		// Rank each tenant's offers by arrival, then take round by round.
		sort.Slice(offers, func(i, j int) bool {
			if offers[i].tenant != offers[j].tenant {
				return offers[i].tenant < offers[j].tenant
			}
			return offers[i].seq < offers[j].seq
		})
		for i := range offers {
			if i > 0 && offers[i].tenant == offers[i-1].tenant {
				offers[i].rn = offers[i-1].rn + 1
			}
		}
		sort.SliceStable(offers, func(i, j int) bool { return offers[i].rn < offers[j].rn })
		offers = offers[:min(len(offers), p.Batch)]

		claim, err := tx.PrepareContext(ctx, `UPDATE delivery_jobs SET status = 'in_flight', lease_token = ?,
			lease_expires_at = ?, updated_at = ? WHERE id = ? AND status = 'pending' RETURNING `+jobColumns)
		if err != nil {
			return err
		}
		defer claim.Close()
		expires := micros(now.Add(p.Lease))
		jobs := make([]hub.Job, 0, len(offers))
		for _, o := range offers {
			j, err := scanJob(claim.QueryRowContext(ctx, token, expires, nowUS, o.id))
			if err != nil {
				return err
			}
			jobs = append(jobs, j)
		}
		out, err = loadClaimed(ctx, tx, jobs, token)
		return err
	}()
	return out, err
}

// only restricts the subscriptions query to a list of ids, when given.
func only(n int) string {
	if n == 0 {
		return ""
	}
	return " AND s.id IN (" + placeholders(n) + ")"
}

func loadClaimed(ctx context.Context, tx *sql.Tx, jobs []hub.Job, token string) ([]store.Claimed, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	getEvent, err := tx.PrepareContext(ctx, `SELECT `+eventSelect+` FROM events WHERE tenant_id = ? AND sequence = ?`)
	if err != nil {
		return nil, err
	}
	defer getEvent.Close()
	getSub, err := tx.PrepareContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`)
	if err != nil {
		return nil, err
	}
	defer getSub.Close()
	subs := make(map[string]hub.Subscription)
	out := make([]store.Claimed, len(jobs))
	for i, j := range jobs {
		ev, err := scanEvent(getEvent.QueryRowContext(ctx, j.TenantID, j.EventSequence))
		if err != nil && err != sql.ErrNoRows {
			return nil, err
		}
		s, ok := subs[j.SubscriptionID]
		if !ok {
			if s, err = scanSubscription(getSub.QueryRowContext(ctx, j.SubscriptionID)); err != nil {
				return nil, err
			}
			subs[j.SubscriptionID] = s
		}
		out[i] = store.Claimed{Job: j, LeaseToken: token, Event: ev, Subscription: s}
	}
	return out, nil
}

func (db *DB) ReleaseJobs(ctx context.Context, leases []store.JobLease) error {
	now := micros(db.opts.Stamp())
	return db.tx(ctx, func(tx *sql.Tx) error {
		for _, l := range leases {
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_jobs SET status = 'pending', lease_token = NULL,
				lease_expires_at = NULL, next_attempt_at = ?, updated_at = ?
				WHERE id = ? AND lease_token = ? AND status = 'in_flight'`, now, now, l.JobID, l.LeaseToken); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error) {
	now := micros(db.opts.Stamp())
	var res store.RecoverResult
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE delivery_jobs SET
				recoveries = recoveries + 1,
				status = CASE WHEN recoveries + 1 >= ?1 THEN 'dead_lettered' ELSE 'pending' END,
				dead_letter_reason = CASE WHEN recoveries + 1 >= ?1 THEN 'poison' ELSE dead_letter_reason END,
				completed_at = CASE WHEN recoveries + 1 >= ?1 THEN ?2 END,
				last_error = 'lease expired without a result: the worker stopped mid-attempt',
				lease_token = NULL, lease_expires_at = NULL, next_attempt_at = ?2, updated_at = ?2
			WHERE id IN (SELECT id FROM delivery_jobs WHERE status = 'in_flight' AND lease_expires_at < ?2
			             ORDER BY lease_expires_at LIMIT ?3)
			RETURNING status`, p.PoisonThreshold, now, max(p.Limit, 1))
		if err != nil {
			return err
		}
		statuses, err := collect(rows, func(r scanner) (string, error) {
			var s string
			return s, r.Scan(&s)
		})
		for _, s := range statuses {
			if s == string(hub.JobDeadLettered) {
				res.Poisoned++
			} else {
				res.Recovered++
			}
		}
		return err
	})
	return res, err
}

func (db *DB) DeadLetterOrphans(ctx context.Context) (int, error) {
	now := micros(db.opts.Stamp())
	res, err := db.w.ExecContext(ctx, `UPDATE delivery_jobs SET status = 'dead_lettered',
			dead_letter_reason = CASE WHEN (SELECT deleted_at FROM subscriptions s WHERE s.id = delivery_jobs.subscription_id) IS NOT NULL
				THEN 'subscription_deleted' ELSE 'subscription_disabled' END,
			completed_at = ?, updated_at = ?
		WHERE status = 'pending' AND subscription_id IN (SELECT id FROM subscriptions WHERE deleted_at IS NOT NULL OR enabled = 0)`, now, now)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CountJobs counts each status apart, so each count reads only its own
// partial index: one query over "status IN (...)" matches none of them
// and reads the whole table, history included.
func (db *DB) CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error) {
	var pending, inFlight, dead int64
	err := db.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM delivery_jobs WHERE status = 'pending'),
		(SELECT count(*) FROM delivery_jobs WHERE status = 'in_flight'),
		(SELECT count(*) FROM delivery_jobs WHERE status = 'dead_lettered' AND completed_at IS NOT NULL)`).Scan(&pending, &inFlight, &dead)
	return map[hub.JobStatus]int64{hub.JobPending: pending, hub.JobInFlight: inFlight, hub.JobDeadLettered: dead}, err
}
