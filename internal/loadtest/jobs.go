package loadtest

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, as the store uses it

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// jobCounts is what a soak line shows of the delivery_jobs table.
type jobCounts struct{ due, retrying, inFlight int64 }

// jobCounter reads the bench's own database, read-only, beside the hub:
// the store has no count of due against retrying jobs, and the bench does
// not need one in its interface.
type jobCounter struct {
	pg  *pgx.Conn // PostgreSQL, or
	sql *sql.DB   // SQLite
}

// countJobs counts pending jobs due at $1 and not yet due (a failed
// attempt's back-off, or shed by an open breaker), and jobs in flight; each
// reads the partial index of its status (delivery_jobs_pending,
// delivery_jobs_in_flight).
const countJobs = `SELECT
	count(*) FILTER (WHERE next_attempt_at <= $1),
	count(*) FILTER (WHERE next_attempt_at > $1),
	(SELECT count(*) FROM delivery_jobs WHERE status = 'in_flight')
FROM delivery_jobs WHERE status = 'pending'`

// liveEvents lists the events a job still holds.
const liveEvents = `SELECT DISTINCT event_id FROM delivery_jobs WHERE status IN ('pending', 'in_flight')`

// openJobCounter connects to the hub's database URL (a bench schema of
// PostgreSQL, or the SQLite file).
func openJobCounter(ctx context.Context, dbURL string) (*jobCounter, error) {
	if path, ok := config.SQLitePath(dbURL); ok {
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "query_only(1)")
		db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return &jobCounter{sql: db}, nil
	}
	conn, err := pgx.Connect(ctx, plainURL(dbURL))
	if err != nil {
		return nil, err
	}
	return &jobCounter{pg: conn}, nil
}

// plainURL drops the pgxpool settings (pool_max_conns...) from a URL, which
// one connection would send to the server as parameters.
func plainURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (j *jobCounter) count(ctx context.Context) (c jobCounts, err error) {
	now := time.Now()
	if j.pg != nil {
		err = j.pg.QueryRow(ctx, countJobs, now).Scan(&c.due, &c.retrying, &c.inFlight)
	} else {
		// SQLite keeps times as unix microseconds.
		err = j.sql.QueryRowContext(ctx, strings.ReplaceAll(countJobs, "$1", "?1"), now.UnixMicro()).Scan(&c.due, &c.retrying, &c.inFlight)
	}
	return c, err
}

func (j *jobCounter) live(ctx context.Context) (map[string]bool, error) {
	ids := map[string]bool{}
	if j.pg != nil {
		rows, err := j.pg.Query(ctx, liveEvents)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids[id] = true
		}
		return ids, rows.Err()
	}
	rows, err := j.sql.QueryContext(ctx, liveEvents)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, rows.Err()
}

func (j *jobCounter) close() {
	if j.pg != nil {
		j.pg.Close(context.Background())
	} else {
		j.sql.Close()
	}
}
