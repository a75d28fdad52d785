package loadtest

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Result is what a run measured. The fields at the top are totals over
// every class; Classes has one entry per class that had tenants.
type Result struct {
	Events, Delivered, Duplicates int
	Database                      string
	Settings                      string  // the hub's dispatch settings, as run
	IngestRate                    float64 // events/s from the first produce to the last event in the inbox
	DeliveryRate                  float64 // unique deliveries/s from the first to the last
	P50, P95, P99, Max            time.Duration
	PeakRSS                       int64         // bytes (VmHWM of the bench process)
	CPU                           time.Duration // user + system CPU of the bench process while producing and delivering
	CPUPerDelivery                time.Duration // CPU / Delivered
	Elapsed                       time.Duration
	Drain                         time.Duration // the -drain the run had (0: until every healthy event was delivered)
	LoadAverage                   [2]string     // the machine's 1-minute load average at the start and the end (/proc/loadavg)
	Classes                       []ClassResult
	Sink                          SinkProfile
	SharedHost                    bool        // every receiver was one host, each tenant at its own path
	Soak                          *SoakResult // a soak's lines and summary; nil for other runs
	// PGCPU is the CPU of the hub's PostgreSQL backends during the load
	// (utime + stime of their /proc/<pid>/stat); 0 on SQLite.
	PGCPU         time.Duration
	PGCPUPerEvent time.Duration // PGCPU / events produced
	PGBackends    int
	Idle          *IdleResult     // Options.Idle's window; nil without it
	Statements    []StatementStat // the most frequent statements of the load (Options.Statements)
	StatementsRun int             // every statement of the load
	Limits        *Limits         // the machine's limits measured before the run (Options.Limits); nil without
	// Replicas has each hub replica's part of the load when several ran
	// it (Options.Replicas); nil with one.
	Replicas []ReplicaResult
	// Cgroup is what the hub under the limits used (Options.Cgroup).
	Cgroup *CgroupResult
}

// SinkProfile is what the receivers were told to do.
type SinkProfile struct {
	Median   time.Duration
	Spread   float64
	Hang     time.Duration
	P50, P99 time.Duration // of the latency distribution itself, for reading the end-to-end figures against
}

// ClassResult is what the receivers of one class saw.
type ClassResult struct {
	Class    Class
	Tenants  int
	Expected int // events produced to this class's tenants
	// Delivered counts unique events answered 2xx while the hub was still
	// waiting; Received unique events that reached the receiver at all;
	// Attempts every request.
	Delivered, Received, Attempts int
	Duplicates                    int    // 2xx answers for an event already delivered
	OutOfOrder                    int    // first receipts with a lower sequence than an earlier one of the tenant
	FirstLate                     string // the first of them
	P50, P95, P99, Max            time.Duration
	DeliveryRate                  float64       // delivered/s, first to last
	LastAfterProduce              time.Duration // last delivery, counted from the last produce
}

// Report writes the result as the bench prints it: a soak's summary, or
// the run's totals; then the figures of each class of tenant.
func Report(w io.Writer, res Result) {
	if res.Soak != nil {
		reportSoak(w, res)
	} else {
		reportTotals(w, res)
	}
	ReportLimits(w, res.Limits)
	reportClasses(w, res)
}

func reportTotals(w io.Writer, res Result) {
	fmt.Fprintf(w, "\nresult (%s; %s)\n", res.Database, res.Settings)
	if res.Sink.Median > 0 {
		fmt.Fprintf(w, "  receivers       median %v, log-normal spread %.2f (their own p50 %v, p99 %v)\n",
			res.Sink.Median, res.Sink.Spread, round(res.Sink.P50), round(res.Sink.P99))
	} else {
		fmt.Fprintf(w, "  receivers       answer at once\n")
	}
	fmt.Fprintf(w, "  events          %d delivered (%d duplicate deliveries) of %d in %v\n",
		res.Delivered, res.Duplicates, res.Events, res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  ingest          %.0f events/s\n", res.IngestRate)
	fmt.Fprintf(w, "  deliveries      %.0f/s sustained\n", res.DeliveryRate)
	fmt.Fprintf(w, "  end to end      p50 %v  p95 %v  p99 %v  max %v\n", round(res.P50), round(res.P95), round(res.P99), round(res.Max))
	share := 0.0
	if res.Elapsed > 0 {
		share = 100 * res.CPU.Seconds() / res.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "  CPU             %.2f ms per delivery (%v in all, %.0f%% of one core; bench process: broker, hub, receivers)\n",
		float64(res.CPUPerDelivery)/float64(time.Millisecond), res.CPU.Round(10*time.Millisecond), share)
	if res.PGBackends > 0 {
		fmt.Fprintf(w, "  PostgreSQL      %.3f ms CPU per event (%v in all, %.1f%% of one core; %d backends of the hub)\n",
			ms(res.PGCPUPerEvent), res.PGCPU.Round(10*time.Millisecond), 100*res.PGCPU.Seconds()/res.Elapsed.Seconds(), res.PGBackends)
	}
	reportReplicas(w, res)
	reportCgroup(w, res)
	fmt.Fprintf(w, "  peak RSS        %d MB\n", res.PeakRSS>>20)
	reportDB(w, res)
	if res.LoadAverage[0] != "" {
		fmt.Fprintf(w, "  machine         load average %s at the start, %s at the end (%d CPUs)\n", res.LoadAverage[0], res.LoadAverage[1], runtime.NumCPU())
	}
}

func reportClasses(w io.Writer, res Result) {
	drain := "until every healthy event was delivered"
	if res.Drain > 0 {
		drain = fmt.Sprintf("up to %v after the last produce", res.Drain)
	}
	host := ""
	if res.SharedHost {
		host = "; every receiver on one shared host"
	}
	fmt.Fprintf(w, "\nby class of tenant (watched %s; latency: produce to first receipt%s)\n", drain, host)
	fmt.Fprintf(w, "  %-8s %7s %21s %8s %9s %9s %9s %9s %11s %8s %s\n",
		"class", "tenants", "delivered", "attempts", "p50", "p95", "p99", "max", "deliveries", "order", "last delivery")
	for _, c := range res.Classes {
		last := "-"
		if c.Delivered > 0 {
			last = fmt.Sprintf("%+.1fs after last produce", c.LastAfterProduce.Seconds())
		}
		order := "kept"
		if c.OutOfOrder > 0 {
			order = strconv.Itoa(c.OutOfOrder) + " late"
		}
		fmt.Fprintf(w, "  %-8s %7d %21s %8d %9v %9v %9v %9v %9.0f/s %8s %s\n",
			c.Class, c.Tenants, fmt.Sprintf("%d/%d %s", c.Delivered, c.Expected, percent(c.Delivered, c.Expected)),
			c.Attempts, round(c.P50), round(c.P95), round(c.P99), round(c.Max), c.DeliveryRate, order, last)
	}
	for _, c := range res.Classes {
		if c.FirstLate != "" {
			fmt.Fprintf(w, "  %s, first late receipt: %s\n", c.Class, c.FirstLate)
		}
	}
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	p := 100 * float64(n) / float64(of)
	if p > 99.9 && n < of {
		return "99.9%" // never round a loss up to 100%
	}
	return fmt.Sprintf("%.0f%%", p)
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Microsecond)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 { return procStatus("VmHWM:") }

// currentRSS is the process's resident set now (VmRSS), in bytes.
func currentRSS() int64 { return procStatus("VmRSS:") }

func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseStatusKB(string(b), key)
}

func parseHWM(status string) int64 { return parseStatusKB(status, "VmHWM:") }

// parseStatusKB reads a "key: N kB" line of /proc/<pid>/status, in bytes.
func parseStatusKB(status, key string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadAverage is the 1-minute load average: the other work a run shared
// the machine with.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// userHZ is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on every
// Linux architecture Go supports.
const userHZ = 100

// cpuTime is the process's user + system CPU time so far (utime + stime of
// /proc/self/stat).
func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads fields 14 and 15 (utime, stime) of a stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields
// are counted after its closing one.
func parseStatCPU(stat string) time.Duration {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}

// reportDB prints the idle window and the statement counts.
func reportDB(w io.Writer, res Result) {
	if i := res.Idle; i != nil && i.Duration > 0 {
		pg := ""
		if i.PGBackends > 0 {
			pg = fmt.Sprintf(", PostgreSQL %.2f%% (%d backends); together %.2f%%", 100*i.PGCPU.Seconds()/i.Duration.Seconds(), i.PGBackends,
				100*(i.CPU+i.PGCPU).Seconds()/i.Duration.Seconds())
		}
		fmt.Fprintf(w, "  idle            %v: bench process %.2f%% of one core%s\n", i.Duration.Round(100*time.Millisecond),
			100*i.CPU.Seconds()/i.Duration.Seconds(), pg)
	}
	if len(res.Statements) == 0 {
		return
	}
	per := float64(res.StatementsRun) / float64(max(res.Events, 1))
	fmt.Fprintf(w, "  statements      %d in the load, %.1f per event; the most frequent (count, per event, client time):\n", res.StatementsRun, per)
	for _, s := range res.Statements {
		fmt.Fprintf(w, "    %8d %6.2f %9v  %s\n", s.Count, float64(s.Count)/float64(max(res.Events, 1)), s.Time.Round(time.Millisecond), s.SQL)
	}
}

// reportReplicas prints each replica's part of the load: its attempts
// answered 2xx (its deliveries) and their share of the replicas' sum, the
// deliveries/s that share is of the total, its attempts, the partitions it
// consumed and the events it ingested, and its CPU and its PostgreSQL
// backends'. The sum is set beside the receivers' count of 2xx answers:
// every one of those was some replica's.
func reportReplicas(w io.Writer, res Result) {
	if len(res.Replicas) == 0 {
		return
	}
	var sum int64
	for _, r := range res.Replicas {
		sum += r.Delivered
	}
	fmt.Fprintf(w, "  replicas        %d (role all, one schema, one consumer group): %d deliveries between them (receivers: %d answered 2xx), %.0f/s in all\n",
		len(res.Replicas), sum, res.Delivered+res.Duplicates, res.DeliveryRate)
	for _, r := range res.Replicas {
		proc := fmt.Sprintf("the bench process (pid %d)", r.PID)
		if r.Replica > 1 {
			proc = fmt.Sprintf("pid %d, %v CPU", r.PID, r.CPU.Round(10*time.Millisecond))
		}
		pg := ""
		if r.PGBackends > 0 {
			pg = fmt.Sprintf("; PostgreSQL %v CPU (%d backends)", r.PGCPU.Round(10*time.Millisecond), r.PGBackends)
		}
		failed := ""
		if r.Err != "" {
			failed = "; its last reading: " + r.Err
		}
		fmt.Fprintf(w, "    replica %-4d %7d delivered %6s %7.0f/s  %7d attempts  %2d partitions  %7d ingested  %s%s%s\n",
			r.Replica, r.Delivered, fmt.Sprintf("%.1f%%", 100*r.Share), r.Share*res.DeliveryRate, r.Attempts, r.Partitions, r.Ingested, proc, pg, failed)
	}
}

// reportCgroup prints what the hub held to the chart's limits used: its
// peak memory against the limit, how often its CPU quota ran out, and its
// CPU (and its PostgreSQL backends') per delivery.
func reportCgroup(w io.Writer, res Result) {
	c := res.Cgroup
	if c == nil || len(res.Replicas) < 2 {
		return
	}
	r := res.Replicas[1]
	fmt.Fprintf(w, "under %s: peak memory %d MiB of %d MiB; CPU quota used up in %d of %d periods (waited %v)\n",
		c.Limits, c.PeakMemory>>20, c.Limits.Memory>>20, c.Throttled, c.Periods, c.ThrottledTime.Round(time.Millisecond))
	if n := r.Delivered; n > 0 {
		fmt.Fprintf(w, "  CPU per delivery: hub %.3f ms + its PostgreSQL backends %.3f ms = %.3f ms\n",
			msOf(r.CPU)/float64(n), msOf(r.PGCPU)/float64(n), (msOf(r.CPU)+msOf(r.PGCPU))/float64(n))
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
