package loadtest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCPU measures the CPU the hub's PostgreSQL backends spend: the backends
// are the ones pg_stat_activity lists with one of the hub's
// application_names (the bench sets one in each replica's URL), their CPU
// is utime + stime of /proc/<pid>/stat (PostgreSQL runs on this machine).
// A sampler reads them every 250 ms, so a backend that exits loses at most
// its last 250 ms.
type pgCPU struct {
	conn *pgx.Conn
	apps []string

	mu   sync.Mutex
	last map[int32]time.Duration // the latest reading of every backend seen
	app  map[int32]string        // the application_name of every backend seen
}

// newPGCPU watches the backends of apps; the first names the monitor's own
// connection too (apps[0]-monitor, which no app matches).
func newPGCPU(ctx context.Context, url string, apps ...string) (*pgCPU, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = apps[0] + "-monitor"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &pgCPU{conn: conn, apps: apps, last: make(map[int32]time.Duration), app: make(map[int32]string)}, nil
}

// run samples until ctx ends.
func (p *pgCPU) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		p.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *pgCPU) sample(ctx context.Context) {
	p.mu.Lock() // one query on the connection at a time
	defer p.mu.Unlock()
	rows, err := p.conn.Query(ctx, `SELECT pid, application_name FROM pg_stat_activity WHERE application_name = ANY($1)`, p.apps)
	if err != nil {
		return
	}
	backends, err := pgx.CollectRows(rows, pgx.RowToStructByPos[backend])
	if err != nil {
		return
	}
	for _, b := range backends {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.PID))
		if err != nil {
			continue
		}
		p.last[b.PID] = parseStatCPU(string(stat))
		p.app[b.PID] = b.App
	}
}

// backend is a row of pg_stat_activity.
type backend struct {
	PID int32
	App string
}

// pgWindow is a stretch of the run the CPU of the backends is summed over.
type pgWindow struct {
	p     *pgCPU
	start map[int32]time.Duration
}

// begin samples now and starts a window.
func (p *pgCPU) begin(ctx context.Context) pgWindow {
	p.sample(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	start := make(map[int32]time.Duration, len(p.last))
	for pid, c := range p.last {
		start[pid] = c
	}
	return pgWindow{p: p, start: start}
}

// end samples now and returns the CPU the backends spent in the window
// (a backend started within it counts from its start) and how many there
// were.
func (w pgWindow) end(ctx context.Context) (cpu time.Duration, backends int) {
	for _, u := range w.endByApp(ctx) {
		cpu += u.cpu
		backends += u.backends
	}
	return cpu, backends
}

// pgUse is the CPU some backends spent in a window, and how many there
// were.
type pgUse struct {
	cpu      time.Duration
	backends int
}

// endByApp is end by application_name: each replica's backends apart.
func (w pgWindow) endByApp(ctx context.Context) map[string]pgUse {
	w.p.sample(ctx)
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	by := make(map[string]pgUse)
	for pid, c := range w.p.last {
		u := by[w.p.app[pid]]
		u.cpu += c - w.start[pid]
		u.backends++
		by[w.p.app[pid]] = u
	}
	return by
}

// close closes the connection once no sample is using it (the sampler
// may still be in one when the run ends).
func (p *pgCPU) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn.Close(context.Background())
}

// statements counts the statements the hub sends to PostgreSQL (a pgx
// tracer, app.Hub.OnStatement) and their time on the client.
type statements struct {
	mu sync.Mutex
	by map[string]*StatementStat
}

// StatementStat is one statement's count and client time in a window.
type StatementStat struct {
	SQL   string // whitespace collapsed, cut to 120 characters
	Count int
	Time  time.Duration
}

func newStatements() *statements { return &statements{by: make(map[string]*StatementStat)} }

func (s *statements) observe(sql string, took time.Duration) {
	s.mu.Lock()
	st := s.by[sql]
	if st == nil {
		st = &StatementStat{SQL: shortSQL(sql)}
		s.by[sql] = st
	}
	st.Count++
	st.Time += took
	s.mu.Unlock()
}

// take returns the counts so far, most frequent first, and starts again.
func (s *statements) take() []StatementStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]StatementStat, 0, len(s.by))
	for _, st := range s.by {
		out = append(out, *st)
	}
	s.by = make(map[string]*StatementStat)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Time > out[j].Time
	})
	return out
}

func shortSQL(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	// The claims share their first lines: name which is which.
	switch {
	case strings.Contains(s, "CROSS JOIN LATERAL (SELECT 1 FROM delivery_jobs j"):
		s = "[claim across all subscriptions] " + s
	case strings.Contains(s, "c.id = ANY($7)"):
		s = "[claim of named subscriptions] " + s
	}
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
