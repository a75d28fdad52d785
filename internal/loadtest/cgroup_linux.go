//go:build linux

package loadtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupV1 is a pair of cgroup v1 groups, cpu and memory, made for one
// run and removed after it.
type cgroupV1 struct {
	cpu, mem string
}

const cgroupRoot = "/sys/fs/cgroup"

// newCgroup makes the groups with the limits: a CFS quota of MilliCPU per
// 100 ms period, and a memory limit.
func newCgroup(l CgroupLimits) (*cgroupV1, error) {
	name := fmt.Sprintf("streaming-hub-bench-%d", os.Getpid())
	g := &cgroupV1{cpu: filepath.Join(cgroupRoot, "cpu", name), mem: filepath.Join(cgroupRoot, "memory", name)}
	for _, d := range []string{g.cpu, g.mem} {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return nil, fmt.Errorf("bench: cgroup: %w (cgroup v1 cpu and memory controllers, mounted under %s, and the rights to make a group there)", err, cgroupRoot)
		}
	}
	const period = 100_000 // µs
	for _, w := range []struct{ file, value string }{
		{filepath.Join(g.cpu, "cpu.cfs_period_us"), strconv.Itoa(period)},
		{filepath.Join(g.cpu, "cpu.cfs_quota_us"), strconv.Itoa(period * l.MilliCPU / 1000)},
		{filepath.Join(g.mem, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
	} {
		if err := os.WriteFile(w.file, []byte(w.value), 0o644); err != nil {
			g.remove()
			return nil, fmt.Errorf("bench: cgroup: %w", err)
		}
	}
	return g, nil
}

// add moves a process into the groups.
func (g *cgroupV1) add(pid int) error {
	for _, d := range []string{g.cpu, g.mem} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("bench: cgroup: put process %d in %s: %w", pid, d, err)
		}
	}
	return nil
}

// usage reads what the group's processes used.
func (g *cgroupV1) usage(l CgroupLimits) CgroupResult {
	r := CgroupResult{Limits: l}
	if b, err := os.ReadFile(filepath.Join(g.mem, "memory.max_usage_in_bytes")); err == nil {
		r.PeakMemory, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if b, err := os.ReadFile(filepath.Join(g.cpu, "cpu.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, " ")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "nr_periods":
				r.Periods = n
			case "nr_throttled":
				r.Throttled = n
			case "throttled_time":
				r.ThrottledTime = time.Duration(n)
			}
		}
	}
	return r
}

// remove deletes the groups once their processes are gone.
func (g *cgroupV1) remove() {
	for _, d := range []string{g.cpu, g.mem} {
		for range 50 {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
