package loadtest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits of the process under test (Options.Cgroup): the hub runs as one
// `serve` process held to a CPU quota and a memory limit, as Lerian's
// chart gives mode all (cpu 500m, memory 512Mi), PostgreSQL and the
// broker outside them (docs/performance.md, "Under the chart's
// resources").
type CgroupLimits struct {
	MilliCPU int   // CPU quota in thousandths of a core (500: half a core)
	Memory   int64 // bytes
}

func (l CgroupLimits) String() string {
	return fmt.Sprintf("cpu=%dm,memory=%dMi", l.MilliCPU, l.Memory>>20)
}

// ParseCgroup reads "cpu=500m,memory=512Mi" (cpu in cores or millicores,
// memory in Ki, Mi or Gi as Kubernetes writes them).
func ParseCgroup(s string) (CgroupLimits, error) {
	var l CgroupLimits
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return l, fmt.Errorf("cgroup %q: want cpu=500m,memory=512Mi", s)
		}
		switch k {
		case "cpu":
			if m, ok := strings.CutSuffix(v, "m"); ok {
				n, err := strconv.Atoi(m)
				if err != nil || n <= 0 {
					return l, fmt.Errorf("cgroup cpu %q: want millicores such as 500m, or cores such as 1", v)
				}
				l.MilliCPU = n
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return l, fmt.Errorf("cgroup cpu %q: want millicores such as 500m, or cores such as 1", v)
			}
			l.MilliCPU = int(f * 1000)
		case "memory":
			unit := int64(1)
			for suffix, u := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
				if n, ok := strings.CutSuffix(v, suffix); ok {
					v, unit = n, u
					break
				}
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return l, fmt.Errorf("cgroup memory %q: want a size such as 512Mi", v)
			}
			l.Memory = n * unit
		default:
			return l, fmt.Errorf("cgroup %q: unknown limit %q (cpu, memory)", s, k)
		}
	}
	if l.MilliCPU == 0 || l.Memory == 0 {
		return l, fmt.Errorf("cgroup %q: give both cpu and memory", s)
	}
	return l, nil
}

// CgroupResult is what the limited process used.
type CgroupResult struct {
	Limits        CgroupLimits
	PeakMemory    int64         // the cgroup's memory.max_usage_in_bytes
	Throttled     int64         // periods the CPU quota was used up (cpu.stat nr_throttled)
	ThrottledTime time.Duration // how long it waited for its quota (throttled_time)
	Periods       int64         // periods with the process runnable (nr_periods)
}
