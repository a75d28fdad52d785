package transform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"syscall"

	hub "github.com/lerianstudio/streaming-hub"
)

// asHeadroom is how much address space a worker may map beyond what it had
// mapped when it started. The Go runtime reserves heap in 64 MiB arenas,
// so the hard limit cannot be closer to the 32 MiB a program may use; it
// only has to stop the one builtin call that asks for gigabytes at once
// (`"x" * 2000000000`), which the heap watch cannot see in time. The 32 MiB
// itself is the heap watch's (watchHeap).
const asHeadroom = 128 << 20

// setLimits makes this process a worker: the garbage collector works to
// stay within hub.MaxTransformMemory of what it holds now, and its address
// space may grow by asHeadroom at most (RLIMIT_AS, soft and hard: a
// program cannot raise it back). It answers the limits as text, for the
// hub's log and the tests.
func setLimits() ([]byte, error) {
	total := totalBytes()
	debug.SetMemoryLimit(int64(total) + hub.MaxTransformMemory)
	if raceEnabled {
		// The race detector maps terabytes of shadow memory as the heap
		// grows: no address-space limit holds it.
		return fmt.Appendf(nil, "as=unlimited (race detector) heap=%d", heapBytes()), nil
	}
	vm, err := vmSize()
	if err != nil {
		return nil, fmt.Errorf("cannot measure its address space: %w", err)
	}
	limit := vm + asHeadroom
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err != nil {
		return nil, fmt.Errorf("cannot read its address-space limit: %w", err)
	}
	if cur.Max < limit {
		limit = cur.Max // inherited, tighter already (prlimit --as on the hub)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return nil, fmt.Errorf("cannot limit its address space: %w", err)
	}
	return fmt.Appendf(nil, "as=%d baseline=%d heap=%d", limit, vm, heapBytes()), nil
}

func totalBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// vmSize is this process's mapped address space (VmSize, Linux).
func vmSize() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				n, err := strconv.ParseUint(string(f[0]), 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}
