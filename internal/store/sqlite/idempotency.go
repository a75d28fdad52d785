package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// claimTries bounds a claim that keeps finding its key released between
// the insert and the read (each a request that failed and let go).
const claimTries = 5

func (db *DB) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (rec store.IdempotencyRecord, claimed bool, err error) {
	defer wrap(&err, "ClaimIdempotencyKey")
	for range claimTries {
		now := db.opts.Stamp()
		var token string
		err = db.w.QueryRowContext(ctx, `INSERT INTO idempotency_keys
			(principal, idem_key, request_hash, token, state, status, body, created_at, expires_at)
			VALUES (?1, ?2, ?3, ?4, 'running', 0, NULL, ?5, ?6)
			ON CONFLICT (principal, idem_key) DO UPDATE SET request_hash = excluded.request_hash,
				token = excluded.token, state = 'running', status = 0, body = NULL,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_keys.expires_at <= excluded.created_at
			RETURNING token`,
			c.Principal, c.Key, c.RequestHash, c.Token, micros(now), micros(now.Add(c.Lock))).Scan(&token)
		if err == nil {
			return store.IdempotencyRecord{Principal: c.Principal, Key: c.Key, RequestHash: c.RequestHash,
				CreatedAt: now, ExpiresAt: now.Add(c.Lock)}, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return rec, false, err
		}
		var state string
		var created, expires int64
		err = db.w.QueryRowContext(ctx, `SELECT request_hash, state, status, body, created_at, expires_at
			FROM idempotency_keys WHERE principal = ?1 AND idem_key = ?2`, c.Principal, c.Key).
			Scan(&rec.RequestHash, &state, &rec.Status, &rec.Body, &created, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released meanwhile: claim again
		}
		if err != nil {
			return rec, false, err
		}
		rec.Principal, rec.Key, rec.Completed = c.Principal, c.Key, state == store.IdempotencyCompleted
		rec.CreatedAt, rec.ExpiresAt = fromMicros(created), fromMicros(expires)
		return rec, false, nil
	}
	return rec, false, errors.New("the key was claimed and released too many times in a row")
}

func (db *DB) CompleteIdempotencyKey(ctx context.Context, principal, key, token string, status int, body []byte, ttl time.Duration) (ok bool, err error) {
	defer wrap(&err, "CompleteIdempotencyKey")
	if body == nil {
		body = []byte{}
	}
	res, err := db.w.ExecContext(ctx, `UPDATE idempotency_keys
		SET state = 'completed', status = ?4, body = ?5, expires_at = created_at + ?6
		WHERE principal = ?1 AND idem_key = ?2 AND token = ?3 AND state = 'running'`,
		principal, key, token, status, body, ttl.Microseconds())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (db *DB) ReleaseIdempotencyKey(ctx context.Context, principal, key, token string) (err error) {
	defer wrap(&err, "ReleaseIdempotencyKey")
	_, err = db.w.ExecContext(ctx, `DELETE FROM idempotency_keys
		WHERE principal = ?1 AND idem_key = ?2 AND token = ?3 AND state = 'running'`, principal, key, token)
	return err
}

func (db *DB) ReapIdempotencyKeys(ctx context.Context, batch int) (n int, err error) {
	defer wrap(&err, "ReapIdempotencyKeys")
	if batch <= 0 {
		batch = config.DefaultPruneBatch
	}
	res, err := db.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN (
		SELECT rowid FROM idempotency_keys WHERE expires_at <= ?1 LIMIT ?2)`, micros(db.opts.Stamp()), batch)
	if err != nil {
		return 0, err
	}
	m, err := res.RowsAffected()
	return int(m), err
}
