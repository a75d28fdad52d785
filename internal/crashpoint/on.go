//go:build faults

package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	once  sync.Once
	at    string
	after int
	mu    sync.Mutex
	seen  int
)

// hit counts a reach of name and reports whether it is the one
// STREAMING_HUB_CRASH_AT names.
func hit(name string) bool {
	once.Do(func() {
		spec := os.Getenv("STREAMING_HUB_CRASH_AT")
		n := 1
		if name, count, ok := strings.Cut(spec, ":"); ok {
			spec = name
			if v, err := strconv.Atoi(count); err == nil && v > 0 {
				n = v
			}
		}
		at, after = spec, n
	})
	if at == "" || name != at {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	seen++
	return seen == after
}

func reach(name string) {
	if hit(name) {
		fmt.Fprintf(os.Stderr, "crashpoint %s reached (%d): SIGKILL\n", name, after)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

func lose(name string) bool {
	if hit(name) {
		fmt.Fprintf(os.Stderr, "crashpoint %s reached (%d): answer lost\n", name, after)
		return true
	}
	return false
}
