package transform

import (
	"context"
	"time"
)

// Worker is a worker process started for a test, outside the pool.
type Worker struct{ w *worker }

// StartWorker starts a worker as the pool does.
func StartWorker(ctx context.Context) (*Worker, error) {
	w, err := startWorker(ctx)
	if err != nil {
		return nil, err
	}
	return &Worker{w}, nil
}

// Limits is what the worker said of its limits.
func (w *Worker) Limits() string { return w.w.limits }

// Pid is the worker's process id.
func (w *Worker) Pid() int { return w.w.cmd.Process.Pid }

// Run runs src on in in this worker; alive says whether the worker is
// still there for another.
func (w *Worker) Run(ctx context.Context, src string, in Input) (res Result, err error, alive bool) {
	return w.w.do(ctx, request{src: src, budget: 50e6, in: in}.encode(), 50e6)
}

// Stop kills the worker.
func (w *Worker) Stop() { w.w.kill() }

// ForgetTenants starts the pool's sharing afresh, as a new process would:
// a test's tenants, heavy or about, are no one's concern after it.
func ForgetTenants() { workers.fair = newFair(poolSize, maxWait, time.Now) }
