package testkit

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// LoadFactor is how much busier than its cores the machine is right now:
// the one-minute load average over the number of CPUs, at least 1 (and 1
// where /proc/loadavg cannot be read). A test machine shared by several
// builds runs at 10 to 25 times its cores now and then.
func LoadFactor() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	return loadFactor(string(b), runtime.NumCPU())
}

func loadFactor(loadavg string, cpus int) float64 {
	fields := strings.Fields(loadavg)
	if len(fields) == 0 || cpus < 1 {
		return 1
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || load <= float64(cpus) {
		return 1
	}
	return load / float64(cpus)
}

// Scaled is d stretched by LoadFactor, for a timeout a test gives a real
// operation that must finish (a produce to kfake, a publish to a local
// broker, an access manager on loopback): 3 s on a quiet machine, 75 s at
// a load of 50 on 2 cores. It never goes past Patience unless d does: a
// wait longer than that is a hang, whatever the load. A timeout that the
// test expects to fire is not one to scale.
func Scaled(d time.Duration) time.Duration {
	return scaled(d, LoadFactor())
}

func scaled(d time.Duration, factor float64) time.Duration {
	s := time.Duration(float64(d) * factor)
	return min(s, max(d, Patience))
}
