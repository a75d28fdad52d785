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

func reach(name string) {
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
		return
	}
	mu.Lock()
	seen++
	hit := seen == after
	mu.Unlock()
	if hit {
		fmt.Fprintf(os.Stderr, "crashpoint %s reached (%d): SIGKILL\n", name, after)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
