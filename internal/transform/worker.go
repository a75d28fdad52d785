package transform

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// workerEnv, set to workerToken, makes a process started from the hub's
// own binary (or from a test binary that imports this package) a transform
// worker: init serves requests and exits before main or the tests run.
const (
	workerEnv   = "STREAMING_HUB_TRANSFORM_WORKER"
	workerToken = "1"
)

// Exit codes of a worker that stops by itself.
const (
	exitDone   = 0 // its requests ended: the hub closed them
	exitBroken = 3 // a broken request or a failed write: the hub went away, or a bug
	exitSetup  = 4 // it could not set its limits
)

func init() {
	if os.Getenv(workerEnv) != workerToken {
		return
	}
	os.Exit(serveWorker())
}

// serveWorker is a worker's life: set its limits, say so, then answer
// requests one at a time until fd 3 closes.
func serveWorker() int {
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "results")
	if in == nil || out == nil {
		fmt.Fprintf(os.Stderr, "streaming-hub: %s is set only on the hub's own transform workers\n", workerEnv)
		return exitSetup
	}
	// Anything else that writes to stdout goes to stderr: neither is the
	// protocol.
	os.Stdout = os.Stderr
	runtime.GOMAXPROCS(1)
	limits, err := setLimits()
	if err != nil {
		fmt.Fprintf(os.Stderr, "streaming-hub transform worker: %v\n", err)
		return exitSetup
	}
	w := bufio.NewWriter(out)
	if writeFrame(w, append([]byte{kindReady}, limits...)) != nil || w.Flush() != nil {
		return exitBroken
	}
	r := bufio.NewReader(in)
	programs := map[string]*Program{}
	for {
		b, err := readFrame(r, maxRequest)
		if err == io.EOF {
			return exitDone
		}
		if err != nil {
			return exitBroken
		}
		q, err := decodeRequest(b)
		if err != nil {
			return exitBroken
		}
		res, err := serveOne(programs, q, func() bool {
			return writeFrame(w, []byte{kindStarted}) == nil && w.Flush() == nil
		})
		if writeFrame(w, encodeResult(res, err)) != nil || w.Flush() != nil {
			return exitBroken
		}
	}
}

// serveOne compiles q's program (once per source), makes the event its
// input value and runs it on that within q's budget and
// hub.MaxTransformMemory, counted from when it calls started (which says
// so to the hub). Neither the event's parsing nor the compiling is the
// program's time or memory, as they were not when programs ran in the
// hub's process.
func serveOne(programs map[string]*Program, q request, started func() bool) (Result, error) {
	p := programs[q.src]
	if p == nil {
		var err error
		if p, err = Compile(q.src); err != nil {
			if !started() {
				os.Exit(exitBroken)
			}
			return Result{}, fmt.Errorf("%s", hub.ErrorMessage(err))
		}
		if len(programs) >= cacheSize {
			clear(programs)
		}
		programs[q.src] = p
	}
	v := q.in.Value()
	if !started() {
		os.Exit(exitBroken)
	}
	budget := min(q.budget, hub.TransformTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	ctx, over := context.WithCancelCause(ctx)
	stop := watchHeap(heapBytes()+hub.MaxTransformMemory, func() { over(ErrMemory) })
	res, err := evaluate(ctx, p.code, v)
	stop()
	if heapBytes() > 8<<20 {
		// Whatever the program left is garbage now: give it back before
		// the next request, whose limit counts from here.
		debug.FreeOSMemory()
	}
	return res, err
}

// heapSample reads the bytes of heap objects, live and not yet swept: what
// a program's values hold.
var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func heapBytes() uint64 {
	metrics.Read(heapSample)
	return heapSample[0].Value.Uint64()
}

// watchHeap calls over, once, when the heap passes limit, until stop. It
// looks every millisecond; with GOMAXPROCS 1 it runs when the scheduler
// preempts the program (every 10 ms at the latest), and a program's single
// builtin call that allocates more in between meets the address-space
// limit instead (setLimits).
func watchHeap(limit uint64, over func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if heapBytes() > limit {
					over()
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
