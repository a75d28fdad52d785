package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The machine's limits (issue 23 point 2): what this machine does at all,
// measured in the same run as the bench so the hub's figures can be read
// against them rather than against numbers from another day and load.
const (
	limitHTTPClients = 64  // concurrent loopback POSTs
	limitHTTPBody    = 512 // bytes each, the bench's default event body
)

// limitPGClients are the connections of the commit measurements, in order.
var limitPGClients = []int{1, 8}

// MinLimits is the shortest measurement -limits takes: below it the
// connections' start is most of what is measured.
const MinLimits = 100 * time.Millisecond

// Limits is what the machine's limits measured: each measurement ran for
// Each, one after the other.
type Limits struct {
	Each        time.Duration
	LoadAverage [2]string // the 1-minute load average before and after (/proc/loadavg)
	HTTP        HTTPLimit
	// Commits is PostgreSQL's single-row commits from 1, then 8
	// connections; nil when the run is not on PostgreSQL.
	Commits []CommitLimit
	// SynchronousCommit and Fsync are the server's settings the commits
	// ran with, as SHOW gave them: "on" and "on" make each commit wait
	// for its WAL on disk.
	SynchronousCommit, Fsync string
	// Scratch is the schema the commits went to; it is dropped after.
	Scratch string
}

// HTTPLimit is plain Go HTTP over loopback: a net/http server on
// 127.0.0.1 that reads the body and answers 200, Clients goroutines
// POSTing Body bytes each over kept-alive connections.
type HTTPLimit struct {
	Clients, Body int
	Requests      int
	Elapsed       time.Duration
	CPU           time.Duration // of the bench process (server and clients both), utime + stime
}

// Rate is requests per second.
func (h HTTPLimit) Rate() float64 { return perSecond(h.Requests, h.Elapsed) }

// CommitLimit is Clients connections each committing INSERTs of one row,
// each in its own transaction, as fast as they can.
type CommitLimit struct {
	Clients    int
	Commits    int
	Elapsed    time.Duration
	BackendCPU time.Duration // the connections' PostgreSQL backends, utime + stime of /proc/<pid>/stat
	// BackendRead says BackendCPU was read: false when PostgreSQL is not
	// on this machine.
	BackendRead bool
}

// Rate is commits per second.
func (c CommitLimit) Rate() float64 { return perSecond(c.Commits, c.Elapsed) }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// MeasureLimits measures the machine's limits for each of the given
// durations: loopback HTTP, then, when databaseURL is a PostgreSQL one,
// single-row commits from 1 and from 8 connections. It prints what it does
// to out.
func MeasureLimits(ctx context.Context, each time.Duration, databaseURL string, out io.Writer) (*Limits, error) {
	if each < MinLimits {
		return nil, fmt.Errorf("limits %v: want %v or more for each measurement", each, MinLimits)
	}
	pg := databaseURL != "" && !strings.HasPrefix(databaseURL, "sqlite://")
	what := "loopback HTTP"
	if pg {
		what += ", PostgreSQL commits from 1 and from 8 connections"
	}
	fmt.Fprintf(out, "bench: measuring the machine's limits for %v each: %s\n", each, what)
	lim := &Limits{Each: each, LoadAverage: [2]string{loadAverage(), ""}}
	var err error
	if lim.HTTP, err = measureHTTP(ctx, each); err != nil {
		return nil, fmt.Errorf("bench: limits: loopback HTTP: %w", err)
	}
	if pg {
		if err := measureCommits(ctx, each, databaseURL, lim); err != nil {
			return nil, fmt.Errorf("bench: limits: PostgreSQL commits: %w", err)
		}
	}
	lim.LoadAverage[1] = loadAverage()
	return lim, nil
}

// measureHTTP runs the loopback HTTP measurement.
func measureHTTP(ctx context.Context, d time.Duration) (HTTPLimit, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return HTTPLimit{}, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: limitHTTPClients, MaxIdleConns: limitHTTPClients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	body := bytes.Repeat([]byte("x"), limitHTTPBody)

	var requests atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	cpu0, start := cpuTime(), time.Now()
	deadline := start.Add(d)
	for range limitHTTPClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						firstErr.CompareAndSwap(nil, err)
					}
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					firstErr.CompareAndSwap(nil, fmt.Errorf("answer %d", resp.StatusCode))
					return
				}
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	res := HTTPLimit{Clients: limitHTTPClients, Body: limitHTTPBody, Requests: int(requests.Load()), Elapsed: time.Since(start), CPU: cpuTime() - cpu0}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if v := firstErr.Load(); v != nil {
		return res, v.(error)
	}
	return res, nil
}

// measureCommits runs the commit measurements in a scratch table of a
// fresh scratch schema, dropped afterwards.
func measureCommits(ctx context.Context, d time.Duration, url string, lim *Limits) (err error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	// Durable commits whatever the URL says (the tests' URLs turn
	// synchronous_commit off): each commit waits for its WAL on disk.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	cfg.RuntimeParams["application_name"] = "streaming-hub-bench-limits"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var b [4]byte
	rand.Read(b[:])
	lim.Scratch = "bench_limits_" + strconv.FormatInt(time.Now().UnixNano(), 36) + hex.EncodeToString(b[:])
	table := lim.Scratch + ".commits"
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+lim.Scratch); err != nil {
		return err
	}
	defer func() {
		// On a connection of its own, so the schema goes even when an
		// interruption broke the first one.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, derr := pgx.ConnectConfig(dctx, cfg)
		if derr == nil {
			_, derr = c.Exec(dctx, "DROP SCHEMA "+lim.Scratch+" CASCADE")
			c.Close(dctx)
		}
		switch {
		case derr != nil && err != nil:
			err = fmt.Errorf("%w; then drop the scratch schema %s: %v", err, lim.Scratch, derr) // one line
		case derr != nil:
			err = fmt.Errorf("drop the scratch schema %s: %w", lim.Scratch, derr)
		}
	}()
	if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, client int NOT NULL, body text NOT NULL)"); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit'), current_setting('fsync')").Scan(&lim.SynchronousCommit, &lim.Fsync); err != nil {
		return err
	}
	for _, n := range limitPGClients {
		c, err := commitFrom(ctx, cfg, table, n, d)
		if err != nil {
			return err
		}
		lim.Commits = append(lim.Commits, c)
	}
	return nil
}

// commitFrom has n connections each INSERT one row at a time for d; each
// INSERT is a transaction of its own (no BEGIN: the statement commits).
func commitFrom(ctx context.Context, cfg *pgx.ConnConfig, table string, n int, d time.Duration) (CommitLimit, error) {
	conns := make([]*pgx.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.Background())
			}
		}
	}()
	insert := "INSERT INTO " + table + " (client, body) VALUES ($1, $2)"
	body := strings.Repeat("x", 64)
	for i := range conns {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return CommitLimit{}, err
		}
		conns[i] = c
		if _, err := c.Exec(ctx, insert, i, body); err != nil { // prepares the statement, outside the count
			return CommitLimit{}, err
		}
	}
	cpu0 := backendCPU(conns)
	var commits atomic.Int64
	errs := make(chan error, n)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if _, err := c.Exec(ctx, insert, i, body); err != nil {
					errs <- err
					return
				}
				commits.Add(1)
			}
		}()
	}
	wg.Wait()
	res := CommitLimit{Clients: n, Commits: int(commits.Load()), Elapsed: time.Since(start)}
	if cpu0 != nil {
		if cpu1 := backendCPU(conns); cpu1 != nil {
			res.BackendCPU, res.BackendRead = *cpu1-*cpu0, true
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err // the connections' own errors are its consequence
	}
	close(errs)
	return res, <-errs
}

// backendCPU sums the CPU of the connections' backends, nil when one of
// them cannot be read (PostgreSQL on another machine).
func backendCPU(conns []*pgx.Conn) *time.Duration {
	var sum time.Duration
	for _, c := range conns {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.PgConn().PID()))
		if err != nil {
			return nil
		}
		sum += parseStatCPU(string(b))
	}
	return &sum
}

// ReportLimits writes the machine's limits: the block the bench prints
// before its own figures, and alone under -limits-only.
func ReportLimits(w io.Writer, l *Limits) {
	if l == nil {
		return
	}
	fmt.Fprintf(w, "\nmachine (%d CPUs; limits measured for %v each, load average %s before, %s after)\n",
		runtime.NumCPU(), l.Each, l.LoadAverage[0], l.LoadAverage[1])
	fmt.Fprintf(w, "  limits          %s\n", l.Summary())
	h := l.HTTP
	fmt.Fprintf(w, "  loopback HTTP   %s requests in %v (%d clients, %d-byte POSTs, keep-alive); bench process CPU %v, %.0f%% of one core\n",
		grouped(float64(h.Requests)), h.Elapsed.Round(time.Millisecond), h.Clients, h.Body, h.CPU.Round(10*time.Millisecond), coreShare(h.CPU, h.Elapsed))
	if len(l.Commits) == 0 {
		fmt.Fprintf(w, "  PostgreSQL      not measured: the run is not on PostgreSQL\n")
		return
	}
	for _, c := range l.Commits {
		cpu := "backends' CPU unknown (PostgreSQL is not on this machine)"
		if c.BackendRead {
			cpu = fmt.Sprintf("backends' CPU %v, %.0f%% of one core", c.BackendCPU.Round(10*time.Millisecond), coreShare(c.BackendCPU, c.Elapsed))
		}
		fmt.Fprintf(w, "  PostgreSQL      %s commits in %v from %d connection%s (each one INSERT of one row, its own transaction); %s\n",
			grouped(float64(c.Commits)), c.Elapsed.Round(time.Millisecond), c.Clients, plural(c.Clients), cpu)
	}
	fmt.Fprintf(w, "  durability      synchronous_commit %s, fsync %s (scratch schema %s, dropped)\n", l.SynchronousCommit, l.Fsync, l.Scratch)
}

// Summary is the limits on one line, e.g. "loopback HTTP 30,177 req/s at
// 64 concurrent; PostgreSQL commits 7,000/s from 1 client, 13,700/s from
// 8".
func (l *Limits) Summary() string {
	s := fmt.Sprintf("loopback HTTP %s req/s at %d concurrent", grouped(l.HTTP.Rate()), l.HTTP.Clients)
	for i, c := range l.Commits {
		if i == 0 {
			s += fmt.Sprintf("; PostgreSQL commits %s/s from %d client%s", grouped(c.Rate()), c.Clients, plural(c.Clients))
		} else {
			s += fmt.Sprintf(", %s/s from %d", grouped(c.Rate()), c.Clients)
		}
	}
	return s
}

func coreShare(cpu, of time.Duration) float64 {
	if of <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / of.Seconds()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// grouped writes a count rounded to a whole number, with thousands
// separated by commas: 30177.4 -> "30,177".
func grouped(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
