package transform

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// poolSize is how many worker processes a hub keeps for its transforms:
// one evaluation at a time each, warm between them.
const poolSize = 2

const (
	// killAfter is the allowance past a run's budget for its answer to
	// arrive: the worker stops a program itself when its budget is spent
	// (between gojq's steps), and is killed when a single step outlasts
	// that by this much.
	killAfter = 100 * time.Millisecond
	// startTimeout bounds a new worker's start, up to its ready frame.
	startTimeout = 10 * time.Second
	// moveTimeout bounds moving a request in, and a result out once it has
	// begun to arrive: at most 16 MiB and 1 MiB through a pipe.
	moveTimeout = 5 * time.Second
)

// workers is the process's pool.
var workers = &pool{fair: newFair(poolSize, maxWait, time.Now)}

// pool hands out worker processes, at most poolSize at once, shared
// fairly between tenants (fair.go); a worker that died, or was killed, is
// replaced in the background while its slot stays taken, and charged to
// the tenant whose program it ran.
type pool struct {
	fair *fair
	mu   sync.Mutex
	idle []*worker
}

// run evaluates src on in in a worker, for c.
func (p *pool) run(ctx context.Context, c Caller, src string, in Input) (Result, error) {
	g, err := p.fair.acquire(ctx, c)
	if err != nil {
		return Result{}, err
	}
	w := p.take()
	if w == nil {
		if w, err = startWorker(ctx); err != nil {
			g.release()
			if ctx.Err() != nil {
				return Result{}, ctxError(ctx)
			}
			return Result{}, fmt.Errorf("transform: cannot start its worker process: %v", err)
		}
	}
	// Waiting for a worker does not count: the budget starts now.
	budget := hub.TransformTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d))
	}
	if budget <= 0 {
		p.put(w)
		g.release()
		return Result{}, ErrTimeout
	}
	q := request{src: src, budget: budget, in: in}.encode()
	if len(q) > maxRequest {
		p.put(w)
		g.release()
		return Result{}, fmt.Errorf("transform: the event is larger than the %d MiB a transform takes", maxRequest>>20)
	}
	res, err, ok := w.do(ctx, q, budget)
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrMemory) || !ok && !errors.Is(ctx.Err(), context.Canceled) {
		g.limit()
	}
	if ok {
		p.put(w)
		g.release()
		return res, err
	}
	go p.replace(g)
	return res, err
}

func (p *pool) take() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return w
	}
	return nil
}

func (p *pool) put(w *worker) {
	p.mu.Lock()
	p.idle = append(p.idle, w)
	p.mu.Unlock()
}

// replace starts a worker for a slot whose worker is gone, and frees the
// slot; one that cannot start leaves the slot to be tried by the next run.
func (p *pool) replace(g *grant) {
	defer g.release()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if w, err := startWorker(ctx); err == nil {
		p.put(w)
	}
}

func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return errors.New("transform: cancelled")
}

// worker is one worker process and the hub's ends of its two pipes.
type worker struct {
	cmd    *exec.Cmd
	req    *os.File // its fd 3
	res    *os.File // its fd 4
	r      *bufio.Reader
	stderr *tail
	exited chan struct{} // closed once it has exited and its stderr is read
	limits string        // what it said in its ready frame
}

// executable is the binary a worker runs: the hub's own, or the test
// binary. /proc/self/exe is the running image even when its file was
// replaced since (an upgrade in place).
func executable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// startWorker starts a worker and waits for its ready frame. Its
// environment is only what a worker needs: none of the hub's variables
// (secrets among them) reach it.
func startWorker(ctx context.Context) (*worker, error) {
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	w := &worker{req: reqW, res: resR, r: bufio.NewReaderSize(resR, 64<<10), stderr: &tail{}, exited: make(chan struct{})}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{"streaming-hub-transform-worker"},
		Env:         []string{workerEnv + "=" + workerToken, "GOMAXPROCS=1", "GOTRACEBACK=none"},
		Dir:         "/",
		ExtraFiles:  []*os.File{reqR, resW},
		Stderr:      w.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	w.cmd = cmd
	err = cmd.Start()
	reqR.Close()
	resW.Close()
	if err != nil {
		reqW.Close()
		resR.Close()
		return nil, err
	}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	deadline := time.Now().Add(startTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	resR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { resR.SetReadDeadline(time.Now()) })
	b, err := readFrame(w.r, maxResult)
	stop()
	if err == nil && (len(b) == 0 || b[0] != kindReady) {
		err = errors.New("no ready frame")
	}
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("%v%s", err, w.said())
	}
	w.limits = string(b[1:])
	return w, nil
}

// do sends one request and reads its result. ok is false when the worker
// is gone: killed past the budget, cancelled, dead by itself (its memory
// limit, most likely), or out of step.
func (w *worker) do(ctx context.Context, q []byte, budget time.Duration) (res Result, err error, ok bool) {
	w.req.SetWriteDeadline(time.Now().Add(moveTimeout))
	w.res.SetReadDeadline(time.Now().Add(moveTimeout))
	// A cancelled caller stops waiting at once; a caller's deadline is in
	// the budget already, which the worker keeps.
	var cancelled atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancelled.Store(true)
			w.res.SetReadDeadline(time.Now())
			w.req.SetWriteDeadline(time.Now())
		}
	})
	defer stop()
	err = writeFrame(w.req, q)
	var b []byte
	if err == nil {
		b, err = readFrame(w.r, 1)
		if err == nil && (len(b) != 1 || b[0] != kindStarted) {
			err = errors.New("out of step")
		}
	}
	overtime := false
	if err == nil {
		// From here the program runs: its budget and the allowance, up to
		// the first bytes of its result; then the time to move them.
		evalDeadline := time.Now().Add(budget + killAfter)
		if !cancelled.Load() {
			w.res.SetReadDeadline(evalDeadline)
		}
		b, err = readFrameThen(w.r, maxResult, func() {
			if !cancelled.Load() {
				w.res.SetReadDeadline(time.Now().Add(moveTimeout))
			}
		})
		overtime = err != nil && !time.Now().Before(evalDeadline)
	}
	if err == nil {
		if res, err = decodeResult(b); err == nil || !strings.HasPrefix(err.Error(), "result of unknown kind") {
			return res, err, true
		}
	}
	// Whatever went wrong, this worker is done with.
	died := w.hasExited(err)
	w.kill()
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return Result{}, errors.New("transform: cancelled"), false
	case !died && overtime && errors.Is(err, os.ErrDeadlineExceeded):
		return Result{}, ErrTimeout, false
	case died && w.outOfMemory():
		return Result{}, ErrMemory, false
	}
	return Result{}, fmt.Errorf("transform: transform_limit: its worker process failed: %v%s", err, w.said()), false
}

// hasExited reports whether the worker ended by itself: its result pipe
// closed, or its request pipe (it died reading a large request: out of
// memory), and it exits soon after.
func (w *worker) hasExited(err error) bool {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.EPIPE) {
		return false
	}
	select {
	case <-w.exited:
	case <-time.After(time.Second):
	}
	return true
}

// outOfMemory reports whether the worker died of its limits: the Go
// runtime says "out of memory" when a mapping fails under RLIMIT_AS, and
// cannot create a thread either; a kernel's OOM kill is SIGKILL.
func (w *worker) outOfMemory() bool {
	s := w.stderr.String()
	if strings.Contains(s, "out of memory") || strings.Contains(s, "pthread_create failed") ||
		strings.Contains(s, "cannot allocate memory") {
		return true
	}
	if st := w.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

// kill ends the worker and its process group (a worker starts nothing, but
// a stuck one is stopped whatever it is in), and waits for its exit.
func (w *worker) kill() {
	select {
	case <-w.exited:
	default:
		// Not reaped yet (exited is still open), so the group is still
		// its own.
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		w.cmd.Process.Kill()
		<-w.exited
	}
	w.req.Close()
	w.res.Close()
}

// said is the end of what the worker wrote on stderr, for an error.
func (w *worker) said() string {
	s := w.stderr.First()
	if s == "" {
		return ""
	}
	return " (" + clip(s, 200) + ")"
}

// tail keeps the first and the last tailSize bytes written to it: a
// runtime's fatal error comes first, then every goroutine's stack.
type tail struct {
	mu         sync.Mutex
	head, last []byte
}

const tailSize = 2 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := tailSize - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head, p = append(t.head, p[:k]...), p[k:]
	}
	t.last = append(t.last, p...)
	if len(t.last) > tailSize {
		t.last = append(t.last[:0], t.last[len(t.last)-tailSize:]...)
	}
	return n, nil
}

// String is the head, then the end.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.last)
}

// First is the first line written.
func (t *tail) First() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, _, _ := strings.Cut(strings.TrimSpace(string(t.head)), "\n")
	return s
}
