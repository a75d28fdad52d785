package transform_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// floor is the programs that must fail with transform_limit.
var floor = testkit.HostileTransforms

func TestRun_ProgramsPastTheirMemoryOrTimeFailWithTransformLimit(t *testing.T) {
	for _, src := range floor {
		t.Run(src, func(t *testing.T) {
			p, err := transform.Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = p.Run(context.Background(), event())
			if err == nil || !strings.HasPrefix(err.Error(), "transform: transform_limit: ") {
				t.Fatalf("got %v, want a transform_limit error", err)
			}
			if !errors.Is(err, transform.ErrMemory) && !errors.Is(err, transform.ErrTimeout) {
				t.Errorf("%v names neither the memory nor the time limit", err)
			}
			t.Logf("%v after %s", err, time.Since(start).Round(time.Millisecond))
			// This process is the hub: it is here, and the next program runs.
			res, err := run(t, `.data.currency`, event())
			if err != nil || string(res.Body) != "BRL" {
				t.Fatalf("after %s: got %s, %v", src, res.Body, err)
			}
		})
	}
}

func TestRun_ConcurrentRunsEachGetTheirOwnAnswer(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		wg.Go(func() {
			if i%8 == 0 {
				p, _ := transform.Compile(floor[i/8%len(floor)])
				if _, err := p.Run(context.Background(), event()); err == nil || !strings.Contains(err.Error(), "transform_limit") {
					errs <- err
				}
				return
			}
			in := event()
			in.ID = "ev_" + strings.Repeat("x", i)
			res, err := run(t, `.id`, in)
			if err != nil || string(res.Body) != in.ID {
				errs <- errors.New("run " + in.ID + ": got " + string(res.Body))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWorker_GetsNoneOfTheHubsEnvironment(t *testing.T) {
	t.Setenv("STREAMING_HUB_KEK", "a-secret-the-worker-must-not-see")
	w, err := transform.StartWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	b, err := os.ReadFile("/proc/" + itoa(w.Pid()) + "/environ")
	if err != nil {
		t.Skipf("cannot read a process's environment here: %v", err)
	}
	env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	want := []string{"STREAMING_HUB_TRANSFORM_WORKER=1", "GOMAXPROCS=1", "GOTRACEBACK=none"}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("worker environment %q, want %q", env, want)
	}
	if !strings.Contains(w.Limits(), "heap=") {
		t.Fatalf("limits %q", w.Limits())
	}
	t.Logf("worker limits: %s", w.Limits())
}

func TestWorker_HungInOneStepIsKilledAndGone(t *testing.T) {
	w, err := transform.StartWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// One step, the regular expression on 8 MiB, that takes far longer
	// than 50 ms: only a kill stops it. It also grows its memory as it
	// goes, so on a loaded machine, where the 50 ms are measured late, the
	// memory limit may be the one that kills it: either is a transform
	// limit, and the worker must be gone.
	in := event()
	in.Data, in.DataContentType = bytes.Repeat([]byte("a"), 8<<20), "text/plain"
	_, err, alive := w.Run(context.Background(), `.data | test("(a|a)*b")`, in)
	if !(errors.Is(err, transform.ErrTimeout) || errors.Is(err, transform.ErrMemory)) || alive {
		t.Fatalf("got %v (alive %v), want the time or the memory limit and the worker gone", err, alive)
	}
	if err := syscall.Kill(w.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("worker %d still there: %v", w.Pid(), err)
	}
}

func TestWorker_StaysForTheNextRunAfterAProgramError(t *testing.T) {
	w, err := transform.StartWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, src := range []string{`error("no")`, `.data.tags[]`, `empty`, `.data`} {
		if _, _, alive := w.Run(context.Background(), src, event()); !alive {
			t.Fatalf("%s ended the worker", src)
		}
	}
	// A 1 MiB body, whole.
	in := event()
	in.Data, in.DataContentType = bytes.Repeat([]byte("y"), 1<<20), "text/plain"
	res, err, alive := w.Run(context.Background(), `.data`, in)
	if err != nil || len(res.Body) != 1<<20 || !alive {
		t.Fatalf("got %d bytes, %v (alive %v)", len(res.Body), err, alive)
	}
}

func TestRun_CancelledWhileRunningAnswersCancelled(t *testing.T) {
	p, err := transform.Compile(`"a" * 20000000 | test("(a|a)*b")`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	_, err = p.Run(ctx, event())
	if err == nil || !strings.HasPrefix(err.Error(), "transform: ") {
		t.Fatalf("got %v", err)
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

func TestWorker_AnswersAProgramThatDoesNotCompile(t *testing.T) {
	// The hub compiles first; a worker refuses on its own too, in step.
	w, err := transform.StartWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_, err, alive := w.Run(context.Background(), `{a: }`, event())
	if err == nil || !strings.HasPrefix(err.Error(), "transform: does not parse") || !alive {
		t.Fatalf("got %v (alive %v)", err, alive)
	}
	if res, err, _ := w.Run(context.Background(), `.type`, event()); err != nil || string(res.Body) != "studio.lerian.transaction.posted" {
		t.Fatalf("got %s, %v", res.Body, err)
	}
}
