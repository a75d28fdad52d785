package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// claimTries bounds a claim that keeps finding its key released between
// the insert and the read (each a request that failed and let go).
const claimTries = 5

func (db *DB) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (rec store.IdempotencyRecord, claimed bool, err error) {
	defer wrap(&err, "ClaimIdempotencyKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	for range claimTries {
		now := db.opts.Stamp()
		var token string
		err = db.pool.QueryRow(ctx, `INSERT INTO idempotency_keys
			(principal, idem_key, request_hash, token, state, status, body, created_at, expires_at)
			VALUES ($1, $2, $3, $4, 'running', 0, NULL, $5, $6)
			ON CONFLICT (principal, idem_key) DO UPDATE SET request_hash = EXCLUDED.request_hash,
				token = EXCLUDED.token, state = 'running', status = 0, body = NULL,
				created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
			WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
			RETURNING token`,
			c.Principal, c.Key, c.RequestHash, c.Token, now, now.Add(c.Lock)).Scan(&token)
		if err == nil {
			return store.IdempotencyRecord{Principal: c.Principal, Key: c.Key, RequestHash: c.RequestHash,
				CreatedAt: now, ExpiresAt: now.Add(c.Lock)}, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return rec, false, err
		}
		var state string
		err = db.pool.QueryRow(ctx, `SELECT request_hash, state, status, body, created_at, expires_at
			FROM idempotency_keys WHERE principal = $1 AND idem_key = $2`, c.Principal, c.Key).
			Scan(&rec.RequestHash, &state, &rec.Status, &rec.Body, &rec.CreatedAt, &rec.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile: claim again
		}
		if err != nil {
			return rec, false, err
		}
		rec.Principal, rec.Key, rec.Completed = c.Principal, c.Key, state == store.IdempotencyCompleted
		rec.CreatedAt, rec.ExpiresAt = rec.CreatedAt.UTC(), rec.ExpiresAt.UTC()
		return rec, false, nil
	}
	return rec, false, errors.New("the key was claimed and released too many times in a row")
}

func (db *DB) CompleteIdempotencyKey(ctx context.Context, principal, key, token string, status int, body []byte, ttl time.Duration) (ok bool, err error) {
	defer wrap(&err, "CompleteIdempotencyKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	tag, err := db.pool.Exec(ctx, `UPDATE idempotency_keys
		SET state = 'completed', status = $4, body = $5, expires_at = created_at + $6 * interval '1 microsecond'
		WHERE principal = $1 AND idem_key = $2 AND token = $3 AND state = 'running'`,
		principal, key, token, status, body, ttl.Microseconds())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (db *DB) ReleaseIdempotencyKey(ctx context.Context, principal, key, token string) (err error) {
	defer wrap(&err, "ReleaseIdempotencyKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	_, err = db.pool.Exec(ctx, `DELETE FROM idempotency_keys
		WHERE principal = $1 AND idem_key = $2 AND token = $3 AND state = 'running'`, principal, key, token)
	return err
}

func (db *DB) ReapIdempotencyKeys(ctx context.Context, batch int) (n int, err error) {
	defer wrap(&err, "ReapIdempotencyKeys")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if batch <= 0 {
		batch = config.DefaultPruneBatch
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (principal, idem_key) IN (
		SELECT principal, idem_key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2)`, db.opts.Stamp(), batch)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
