package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// jobsChannel is the channel new jobs are announced on. A notification's
// payload is "<schema> <origin> <subscription ids, comma-separated>", or
// "*" for the ids when they do not fit: a listener keeps only its own
// schema's (tests and benches share one database, a schema each) and
// skips its own process's, which its in-process listeners already had.
const jobsChannel = "streaming_hub_jobs"

// maxNotifyIDs bounds a payload's ids (PostgreSQL allows 8,000 bytes).
const maxNotifyIDs = 7000

func newOrigin() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// notifyJobs is the notification of new jobs: notifyArgs' payload.
const notifyJobs = `SELECT pg_notify('` + jobsChannel + `', current_schema() || ' ' || $1::text)`

// notifyArgs is the payload announcing subs' new jobs.
func (db *DB) notifyArgs(subs []string) []any {
	ids := strings.Join(subs, ",")
	if len(ids) > maxNotifyIDs {
		ids = "*"
	}
	return []any{db.origin + " " + ids}
}

// queueNotify queues, in the transaction that creates jobs, the
// notification of their subscriptions: PostgreSQL delivers it when (and
// only if) the transaction commits.
func (db *DB) queueNotify(b *pgx.Batch, subs []string) {
	if len(subs) == 0 {
		return
	}
	b.Queue(notifyJobs, db.notifyArgs(subs)...)
}

// ListenJobs tells p.OnJobs of new jobs: this process's at once after
// their commit, other processes' through LISTEN on a connection of its
// own (outside the pool and its budgets), dialed again with back-off when
// lost; once it listens, OnJobs(nil) covers what was announced before.
func (db *DB) ListenJobs(ctx context.Context, p store.ListenParams) error {
	defer db.wakes.Add(p.OnJobs)()
	if p.Ready != nil {
		p.Ready()
	}
	wait := 100 * time.Millisecond
	for {
		listened, err := db.listen(ctx, p.OnJobs)
		if ctx.Err() != nil {
			return nil
		}
		if p.OnLost != nil {
			p.OnLost(err)
		}
		if listened {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// listen holds one listening connection until it fails or ctx ends;
// listened says whether it got as far as listening.
func (db *DB) listen(ctx context.Context, onJobs func([]string)) (listened bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+jobsChannel); err != nil {
		return false, err
	}
	db.listener.Store(conn.PgConn().PID())
	onJobs(nil) // what was announced before this connection listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		from, rest, _ := strings.Cut(n.Payload, " ")
		origin, ids, _ := strings.Cut(rest, " ")
		if from != schema || origin == db.origin {
			continue
		}
		if ids == "*" {
			onJobs(nil)
		} else {
			onJobs(strings.Split(ids, ","))
		}
	}
}

// ListenerPID is the backend pid of the connection ListenJobs listens on
// (0: none yet), as pg_stat_activity shows it.
func (db *DB) ListenerPID() uint32 { return db.listener.Load() }
