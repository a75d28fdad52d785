package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
)

// ReplicaResult is one hub replica's part of a run with several
// (Options.Replicas): its figures come from its own metrics, read at the
// end of the run.
type ReplicaResult struct {
	Replica int    // 1 is the bench's own hub; 2 and on, the processes it started
	PID     int    // its process (the bench's own for replica 1)
	Addr    string // its API, host:port
	// Delivered counts its attempts answered 2xx
	// (streaming_hub_delivery_attempts_total{outcome="success"}), Attempts
	// all of them; Share is Delivered over the replicas' sum.
	Delivered, Attempts int64
	Share               float64
	Ingested            int64 // events it wrote to the inbox (streaming_hub_inbox_events_written_total)
	Partitions          int   // partitions it consumed at the end (streaming_hub_partitions_assigned)
	// CPU is its process's user + system CPU during the load; 0 for
	// replica 1, which shares the bench's process (Result.CPU).
	CPU time.Duration
	// PGCPU is the CPU of its PostgreSQL backends (found by the
	// application_name of its URL) during the load.
	PGCPU      time.Duration
	PGBackends int
	Err        string // why its figures are missing, when they are
}

// replicaStart bounds a replica's start, up to its /readyz answering 200;
// replicaStop how long a replica has to stop after SIGTERM before it is
// killed (its own shutdown is bounded by 10 s, as the bench's hub's is);
// replicaSettle how long the end of a run waits for the replicas' counts
// of 2xx answers to reach the receivers' (a replica counts an answer when
// it arrives, a moment after the receiver counted it).
const (
	replicaStart  = time.Minute
	replicaStop   = 15 * time.Second
	replicaSettle = 5 * time.Second
)

// replica is one hub of a run: the bench's own (h) or a process.
type replica struct {
	n    int
	app  string // application_name of its database connections
	addr string
	h    *app.Hub // the bench's own hub; nil for a process
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	out  *tail         // the end of what it wrote, for an error
	cpu0 time.Duration // its process's CPU when the load started
	last counts        // its latest readable counts
}

// counts are the figures a replica's metrics give.
type counts struct {
	success, failure, ingested, partitions float64
}

// replicas are the hubs of a run. The first is the bench's own; with
// Options.Replicas 1 it is the only one and nothing here runs.
type replicas struct {
	list   []*replica
	client *http.Client
	// limits, when set, holds the processes it starts (Options.Cgroup).
	limits *cgroupV1
}

func newReplicas(h *app.Hub, db string) *replicas {
	return &replicas{list: []*replica{{n: 1, app: appName(db), addr: h.HTTPAddr(), h: h}}, client: &http.Client{Timeout: 2 * time.Second}}
}

// apps are the application_names of every replica's connections.
func (rs *replicas) apps() []string {
	var apps []string
	for _, r := range rs.list {
		apps = append(apps, r.app)
	}
	return apps
}

// procs are the replicas the bench started.
func (rs *replicas) procs() []*replica { return rs.list[1:] }

// start runs replicas 2 to n with command and waits until each answers
// /readyz with 200. Each gets the variables of the bench's own hub (vars),
// the embedded broker, a free loopback port and an application_name of
// its own; a failure leaves what started for stop.
func (rs *replicas) start(ctx context.Context, n int, command []string, vars map[string]string, db string, brokers []string) error {
	if n > 1 && len(command) == 0 {
		return fmt.Errorf("bench: %d replicas: no command to start them with", n)
	}
	base := rs.list[0]
	for i := 2; i <= n; i++ {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		r := &replica{n: i, app: fmt.Sprintf("%s-r%d", base.app, i), addr: addr, done: make(chan struct{}), out: &tail{}}
		env := replicaEnv(os.Environ(), vars, withApp(db, r.app), brokers, addr)
		if err := r.run(command, env); err != nil {
			return fmt.Errorf("bench: start replica %d: %w", i, err)
		}
		rs.list = append(rs.list, r)
		if rs.limits != nil {
			if err := rs.limits.add(r.cmd.Process.Pid); err != nil {
				return err
			}
		}
	}
	for _, r := range rs.procs() {
		if err := rs.waitReady(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// run starts the process, in a process group of its own so that a ctrl-C
// at the terminal reaches the bench alone, which then stops it in order;
// on Linux it is also killed if the bench dies without stopping it.
func (r *replica) run(command, env []string) error {
	r.cmd = exec.Command(command[0], command[1:]...)
	r.cmd.Env = env
	r.cmd.Stdout = io.Discard // serve writes its logs on stderr
	r.cmd.Stderr = io.MultiWriter(r.out, &prefixLines{w: os.Stderr, prefix: fmt.Sprintf("replica %d: ", r.n)})
	r.cmd.WaitDelay = time.Second // no grandchild holding stderr delays the reaping
	r.cmd.SysProcAttr = replicaProcAttr()
	if err := r.cmd.Start(); err != nil {
		return err
	}
	go func() {
		r.cmd.Wait()
		close(r.done)
	}()
	return nil
}

// replicaEnv is a replica's environment: the bench's own, less any of the
// hub's variables (the bench's hub reads none of them: its configuration
// is vars alone) and OpenTelemetry's; then vars, with the replica's own
// database URL, HTTP address and the embedded broker, and what serve needs
// to run as the bench's dev-mode hub does (private sinks, text logs), unless
// a -set variable says otherwise.
func replicaEnv(environ []string, vars map[string]string, db string, brokers []string, addr string) []string {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, config.Prefix) && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	own := map[string]string{
		config.Prefix + "ALLOW_PRIVATE_SINKS": "true",
		config.Prefix + "LOG_FORMAT":          "text",
		config.Prefix + "SHUTDOWN_TIMEOUT":    "10s",
	}
	for k, v := range vars {
		own[k] = v
	}
	delete(own, config.Prefix+"DEV_KAFKA_ADDR")
	own[config.Prefix+"DATABASE_URL"] = db
	own[config.Prefix+"HTTP_ADDR"] = addr
	own[config.Prefix+"KAFKA_BROKERS"] = strings.Join(brokers, ",")
	for k, v := range own {
		env = append(env, k+"="+v)
	}
	return env
}

// withApp is the database URL db with another application_name.
func withApp(db, app string) string {
	u, err := url.Parse(db)
	if err != nil {
		return db
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// freeAddr is a loopback address with a port free now. The replica binds
// it a moment later; another process taking it in between fails that
// replica's start, visibly.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls the replica's /readyz until it answers 200: its store
// is reached and its consumer has joined the group.
func (rs *replicas) waitReady(ctx context.Context, r *replica) error {
	ctx, cancel := context.WithTimeout(ctx, replicaStart)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if rs.ready(ctx, r) {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("bench: replica %d exited before it was ready (%s)%s", r.n, r.cmd.ProcessState, r.out.said())
		case <-ctx.Done():
			return fmt.Errorf("bench: replica %d not ready on %s: %w%s", r.n, r.addr, ctx.Err(), r.out.said())
		case <-tick.C:
		}
	}
}

func (rs *replicas) ready(ctx context.Context, r *replica) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/readyz", nil)
	resp, err := rs.client.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop ends the processes: SIGTERM, the hub's graceful stop, then SIGKILL
// to the process group of any still running after replicaStop. It returns
// once every one is reaped, so none outlives the bench.
func (rs *replicas) stop() {
	for _, r := range rs.procs() {
		r.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(replicaStop)
	for _, r := range rs.procs() {
		select {
		case <-r.done:
		case <-time.After(time.Until(deadline)):
			fmt.Fprintf(os.Stderr, "bench: replica %d still running %v after SIGTERM: killed\n", r.n, replicaStop)
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) // not reaped yet: the group is still its own
			<-r.done
		}
	}
}

// begin notes each process's CPU as the load starts.
func (rs *replicas) begin() {
	for _, r := range rs.procs() {
		r.cpu0 = processCPU(r.cmd.Process.Pid)
	}
}

// ingested sums the events the replicas wrote to the inbox; a replica
// whose metrics cannot be read counts its latest reading.
func (rs *replicas) ingested(ctx context.Context) int64 {
	var n float64
	for _, r := range rs.list {
		c, _ := rs.read(ctx, r)
		n += c.ingested
	}
	return int64(n)
}

// read returns the replica's counts: the bench's own hub's from its
// registry, a process's from its /metrics. On an error it returns the
// latest counts it read.
func (rs *replicas) read(ctx context.Context, r *replica) (counts, error) {
	if r.h != nil {
		m := r.h.Metrics
		r.last = counts{success: counterValue(m.Attempts.WithLabelValues("success")), failure: counterValue(m.Attempts.WithLabelValues("failure")),
			ingested: counterValue(m.InboxEvents), partitions: gaugeValue(m.PartitionsAssigned)}
		return r.last, nil
	}
	series, err := scrape(ctx, rs.client, r.addr)
	if err != nil {
		return r.last, fmt.Errorf("replica %d: %w", r.n, err)
	}
	r.last = countsOf(series)
	return r.last, nil
}

// The series the bench reads of each replica (internal/metrics).
const (
	seriesSuccess    = `streaming_hub_delivery_attempts_total{outcome="success"}`
	seriesFailure    = `streaming_hub_delivery_attempts_total{outcome="failure"}`
	seriesIngested   = `streaming_hub_inbox_events_written_total`
	seriesPartitions = `streaming_hub_partitions_assigned`
)

func countsOf(series map[string]float64) counts {
	return counts{success: series[seriesSuccess], failure: series[seriesFailure], ingested: series[seriesIngested], partitions: series[seriesPartitions]}
}

// scrape reads the Prometheus text of a hub's /metrics into value by
// series, as written ("name" or "name{label=\"value\",...}").
func scrape(ctx context.Context, client *http.Client, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads Prometheus' text format: a sample is the series, a
// space and its value (an optional timestamp after it is ignored).
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := make(map[string]float64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// Label values may hold spaces: the series ends at its closing
		// brace when it has labels.
		end := strings.LastIndexByte(line, '}') + 1
		if end == 0 {
			end = strings.IndexByte(line, ' ')
		}
		if end <= 0 || end >= len(line) {
			continue
		}
		fields := strings.Fields(line[end:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[line[:end]] = v
	}
	return out, sc.Err()
}

// settle reads every replica's counts once the replicas' 2xx answers add
// up to answered (the receivers' count of them) or replicaSettle has
// passed, and the error of each reading.
func (rs *replicas) settle(answered int) ([]counts, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), replicaSettle)
	defer cancel()
	for {
		var got []counts
		var errs []error
		sum := 0.0
		for _, r := range rs.list {
			c, err := rs.read(ctx, r)
			got, errs = append(got, c), append(errs, err)
			sum += c.success
		}
		if int(sum) >= answered || ctx.Err() != nil {
			return got, errs
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// describe names the replicas and the partitions each consumes, for the
// line before the load.
func (rs *replicas) describe(ctx context.Context) string {
	var parts []string
	for _, r := range rs.list {
		c, _ := rs.read(ctx, r)
		who := fmt.Sprintf("replica 1 in this process (pid %d)", os.Getpid())
		if r.cmd != nil {
			who = fmt.Sprintf("replica %d pid %d", r.n, r.cmd.Process.Pid)
		}
		parts = append(parts, fmt.Sprintf("%s on %s, %.0f partitions", who, r.addr, c.partitions))
	}
	return fmt.Sprintf("%d replicas (role all, one schema, one consumer group): %s", len(rs.list), strings.Join(parts, "; "))
}

// results makes the replicas' results of their counts.
func (rs *replicas) results(got []counts, errs []error, pg map[string]pgUse) []ReplicaResult {
	var sum float64
	for _, c := range got {
		sum += c.success
	}
	out := make([]ReplicaResult, len(rs.list))
	for i, r := range rs.list {
		c := got[i]
		res := ReplicaResult{Replica: r.n, PID: os.Getpid(), Addr: r.addr, Delivered: int64(c.success), Attempts: int64(c.success + c.failure),
			Ingested: int64(c.ingested), Partitions: int(c.partitions), PGCPU: pg[r.app].cpu, PGBackends: pg[r.app].backends}
		if sum > 0 {
			res.Share = c.success / sum
		}
		if r.cmd != nil {
			res.PID = r.cmd.Process.Pid
			res.CPU = processCPU(res.PID) - r.cpu0
		}
		if errs[i] != nil {
			res.Err = errs[i].Error()
		}
		out[i] = res
	}
	return out
}

// processCPU is a process's user + system CPU so far; 0 once it is gone.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b))
}

// tail keeps the end of what a process writes, for an error.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(p), nil
}

// said is the tail on one line after a colon, or "" when there is none.
func (t *tail) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(strings.Fields(string(t.buf)), " ")
	if s == "" {
		return ""
	}
	return ": " + s
}

// prefixLines writes each whole line to w after prefix, so a replica's
// logs read apart from the bench's own.
type prefixLines struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.partial[:i])
		p.partial = p.partial[i+1:]
	}
	return len(b), nil
}
