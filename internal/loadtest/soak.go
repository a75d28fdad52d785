package loadtest

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// SoakLine is one progress line of a soak: the window since the previous
// line.
type SoakLine struct {
	Elapsed             time.Duration
	Produced, Delivered int64
	// From the database: pending jobs that are due (the backlog), pending
	// jobs whose next attempt is in the future (a failed attempt's
	// back-off, or shed by an open breaker), jobs in flight. Counted is
	// false when the count failed.
	Due, Retrying, InFlight int64
	Counted                 bool
	// Send -> receipt of the events delivered in the window at their first
	// attempt.
	P50, P99      time.Duration
	Samples       int
	PoolWait      time.Duration // the database pool's wait in the window (streaming_hub_db_pool_wait_seconds)
	PoolCalls     int64         // calls that took a connection in the window
	RSS, PeakRSS  int64         // VmRSS and VmHWM, bytes
	Final, Failed bool          // the line at the end of the drain; the count failed
}

// SoakResult is a soak's summary, beside the usual per-class Result.
type SoakResult struct {
	Duration time.Duration // of production
	Rate     int
	Tenants  int
	Ordered  int // ordered tenants (max_in_flight 1)
	Lines    []SoakLine
	Produced int64
	// Expected counts the events sent to healthy tenants: those are to be
	// delivered. Undelivered of them, Waiting still had a live job (pending
	// or in flight) when the watch ended, Lost had none.
	Expected, Delivered, Duplicates, Waiting, Lost int
	Ended                                          string // why the watch ended
	MaxDue, MaxRetrying, MaxInFlight               int64
	// Healthy is send -> receipt of events whose first attempt succeeded;
	// Retried of those delivered after a failed attempt (they waited for
	// their back-off by design).
	Healthy, Retried Quantiles
	WorstWindowP99   time.Duration
	PoolWait         time.Duration
	PoolCalls        int64
	CPUPerDelivery   time.Duration
	PeakRSS          int64
	OrderedLate      int // out-of-order first receipts at ordered tenants
	// BacklogBound is docs/performance.md's bound: 5 s of production (1,000
	// jobs at 200/s) of due jobs at every line.
	BacklogBound int64
}

// Quantiles of a latency sample.
type Quantiles struct {
	N                   int
	P50, P99, P999, Max time.Duration
}

func quantiles(sorted []time.Duration) Quantiles {
	q := Quantiles{N: len(sorted), P50: quantile(sorted, 0.5), P99: quantile(sorted, 0.99), P999: quantile(sorted, 0.999)}
	if len(sorted) > 0 {
		q.Max = sorted[len(sorted)-1]
	}
	return q
}

// p99Bound is docs/performance.md's bound on the healthy deliveries' p99.
const p99Bound = time.Second

// BacklogOK, P99OK and NothingLost are the verdict's three checks.
func (s *SoakResult) BacklogOK() bool { return s.MaxDue <= s.BacklogBound }

func (s *SoakResult) P99OK() bool { return s.Healthy.P99 <= p99Bound && s.WorstWindowP99 <= p99Bound }

func (s *SoakResult) NothingLost() bool { return s.Lost == 0 }

// soak watches a soak run: a line every Progress, then a summary once
// every healthy event is delivered, the drain is over or the time is up.
func (r *run) soak(ctx context.Context, out io.Writer) (Result, error) {
	o := r.o
	jobs, err := openJobCounter(ctx, r.db)
	if err != nil {
		return Result{}, fmt.Errorf("bench: counting jobs: %w", err)
	}
	defer jobs.close()
	s := &SoakResult{Duration: o.Soak, Rate: o.Rate, Tenants: o.Tenants, Ordered: o.Ordered, BacklogBound: 5 * int64(o.Rate)}
	poolSum, poolCalls := histogramTotals(r.h.Metrics.PoolWait)
	poolSum0, poolCalls0 := poolSum, poolCalls
	line := func(final bool) {
		l := SoakLine{Elapsed: time.Since(r.start), Produced: r.produced.Load(), Final: final}
		d, _ := r.rec.totals()
		l.Delivered = int64(d)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := jobs.count(cctx)
		cancel()
		l.Due, l.Retrying, l.InFlight, l.Counted = c.due, c.retrying, c.inFlight, err == nil
		w := r.rec.takeWindow()
		l.Samples, l.P50, l.P99 = len(w), quantile(w, 0.5), quantile(w, 0.99)
		sum, calls := histogramTotals(r.h.Metrics.PoolWait)
		l.PoolWait, l.PoolCalls = time.Duration((sum-poolSum)*float64(time.Second)), int64(calls-poolCalls)
		poolSum, poolCalls = sum, calls
		l.RSS, l.PeakRSS = currentRSS(), peakRSS()
		s.Lines = append(s.Lines, l)
		fmt.Fprintln(out, formatSoakLine(l, describeDB(r.db)))
		if err != nil {
			fmt.Fprintf(out, "  (counting jobs: %v)\n", err)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastPrint := r.start
watch:
	for {
		select {
		case <-ctx.Done():
			s.Ended = "the time was up (-timeout) or the run was interrupted"
			break watch
		case <-tick.C:
		}
		if v := r.produceErr.Load(); v != nil {
			return Result{}, v.(error)
		}
		if time.Since(lastPrint) >= o.Progress {
			lastPrint = time.Now()
			line(false)
		}
		if r.drained() {
			s.Ended = "every event to a healthy receiver was delivered"
			if r.rec.delivered(Healthy) < r.expected[Healthy] {
				s.Ended = fmt.Sprintf("the drain (%v after the last produce) was over", o.Drain)
			}
			break watch
		}
	}
	line(true)

	res := r.result(time.Now())
	res.Soak = s
	s.Produced = r.produced.Load()
	s.Expected = r.expected[Healthy]
	for _, c := range res.Classes {
		s.Duplicates += c.Duplicates
		if c.Class == Healthy {
			s.Delivered = c.Delivered
		}
	}
	// The undelivered events of healthy tenants: waiting if a job still
	// holds them, lost otherwise.
	if s.Delivered < s.Expected {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		live, err := jobs.live(cctx)
		cancel()
		if err != nil {
			return res, fmt.Errorf("bench: the jobs left: %w", err)
		}
		s.Waiting, s.Lost = undelivered(o, int(s.Produced), r.rec.isDelivered, live)
	}
	for _, l := range s.Lines {
		s.MaxDue = max(s.MaxDue, l.Due)
		s.MaxRetrying = max(s.MaxRetrying, l.Retrying)
		s.MaxInFlight = max(s.MaxInFlight, l.InFlight)
		s.WorstWindowP99 = max(s.WorstWindowP99, l.P99)
	}
	firstTry, retried := r.rec.latencies()
	s.Healthy, s.Retried = quantiles(firstTry), quantiles(retried)
	sum, calls := histogramTotals(r.h.Metrics.PoolWait)
	s.PoolWait, s.PoolCalls = time.Duration((sum-poolSum0)*float64(time.Second)), int64(calls-poolCalls0)
	s.CPUPerDelivery, s.PeakRSS = res.CPUPerDelivery, res.PeakRSS
	var ordered []int
	for t := range o.Tenants {
		if o.ordered(t) {
			ordered = append(ordered, t)
		}
	}
	s.OrderedLate = r.rec.lateAt(ordered)
	return res, nil
}

// undelivered counts the first n events to healthy tenants that were not
// delivered: waiting if a live job (pending or in flight) still holds
// them, lost if none does.
func undelivered(o Options, n int, delivered func(id string) bool, live map[string]bool) (waiting, lost int) {
	for i := range min(n, o.Events) {
		if o.classOf(i%o.Tenants) != Healthy {
			continue
		}
		switch id := eventID(i); {
		case delivered(id):
		case live[id]:
			waiting++
		default:
			lost++
		}
	}
	return waiting, lost
}

func formatSoakLine(l SoakLine, db string) string {
	jobs := "backlog     ?  retrying     ?  in flight     ?"
	if l.Counted {
		jobs = fmt.Sprintf("backlog %5d  retrying %5d  in flight %5d", l.Due, l.Retrying, l.InFlight)
	}
	lat := fmt.Sprintf("p50 %7s  p99 %7s  (n %5d)", "-", "-", 0)
	if l.Samples > 0 {
		lat = fmt.Sprintf("p50 %7v  p99 %7v  (n %5d)", round(l.P50), round(l.P99), l.Samples)
	}
	pool := "pool wait -"
	if l.PoolCalls > 0 {
		pool = fmt.Sprintf("pool wait %8.1f ms (%.3f ms/call)", ms(l.PoolWait), ms(l.PoolWait)/float64(l.PoolCalls))
	} else if db == "SQLite" {
		pool = "pool wait n/a"
	}
	end := ""
	if l.Final {
		end = "  (end)"
	}
	return fmt.Sprintf("  %6.1fs  produced %7d  delivered %7d  %s  %s  %s  rss %4d MB (peak %d MB)%s",
		l.Elapsed.Seconds(), l.Produced, l.Delivered, jobs, lat, pool, l.RSS>>20, l.PeakRSS>>20, end)
}

// histogramTotals sums the observations of a histogram (vector): their
// total and count.
func histogramTotals(c prometheus.Collector) (sum float64, count uint64) {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil && d.Histogram != nil {
			sum += d.Histogram.GetSampleSum()
			count += d.Histogram.GetSampleCount()
		}
	}
	return sum, count
}

// reportSoak writes a soak's summary and verdict.
func reportSoak(w io.Writer, res Result) {
	s := res.Soak
	fmt.Fprintf(w, "\nsoak (%s; %s)\n", res.Database, res.Settings)
	fmt.Fprintf(w, "  produced        %d events in %v at %s to %d tenants (%d ordered)\n", s.Produced, s.Duration, rate(s.Rate), s.Tenants, s.Ordered)
	fmt.Fprintf(w, "  ended           %v after the first produce: %s\n", res.Elapsed.Round(time.Second), s.Ended)
	fmt.Fprintf(w, "  delivered       %d of the %d events to healthy receivers (%d duplicate deliveries); %d lost",
		s.Delivered, s.Expected, s.Duplicates, s.Lost)
	if s.Waiting > 0 {
		fmt.Fprintf(w, "; %d still waiting for a retry at the end (a live job: not lost)", s.Waiting)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  backlog         max %d due jobs at a line (bound %d: 5 s of production); max %d waiting for a retry; max %d in flight\n",
		s.MaxDue, s.BacklogBound, s.MaxRetrying, s.MaxInFlight)
	fmt.Fprintf(w, "  healthy         p50 %v  p99 %v  p99.9 %v  max %v  (%d events delivered at their first attempt; worst line's p99 %v)\n",
		round(s.Healthy.P50), round(s.Healthy.P99), round(s.Healthy.P999), round(s.Healthy.Max), s.Healthy.N, round(s.WorstWindowP99))
	if s.Retried.N > 0 {
		fmt.Fprintf(w, "  retried         p50 %v  p99 %v  max %v  (%d events delivered after a failed attempt: back-off included)\n",
			round(s.Retried.P50), round(s.Retried.P99), round(s.Retried.Max), s.Retried.N)
	}
	if s.PoolCalls > 0 {
		fmt.Fprintf(w, "  pool wait       %.1f ms in all over %d calls (%.3f ms/call)\n", ms(s.PoolWait), s.PoolCalls,
			ms(s.PoolWait)/float64(s.PoolCalls))
	}
	fmt.Fprintf(w, "  CPU             %.2f ms per delivery (bench process)\n", float64(s.CPUPerDelivery)/float64(time.Millisecond))
	if res.PGBackends > 0 {
		fmt.Fprintf(w, "  PostgreSQL      %.3f ms CPU per event (%v in all; %d backends of the hub)\n",
			ms(res.PGCPUPerEvent), res.PGCPU.Round(10*time.Millisecond), res.PGBackends)
	}
	fmt.Fprintf(w, "  peak RSS        %d MB\n", s.PeakRSS>>20)
	if s.Ordered > 0 {
		order := "in order"
		if s.OrderedLate > 0 {
			order = fmt.Sprintf("%d first receipts out of order", s.OrderedLate)
		}
		fmt.Fprintf(w, "  ordered         %d tenants: %s\n", s.Ordered, order)
	}
	verdict := "PASS"
	if !s.BacklogOK() || !s.P99OK() || !s.NothingLost() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "  verdict         %s: backlog ≤ %d beyond the retrying at every line %s; healthy p99 ≤ %v (overall and every line) %s; nothing lost %s\n",
		verdict, s.BacklogBound, mark(s.BacklogOK()), p99Bound, mark(s.P99OK()), mark(s.NothingLost()))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "NOT MET"
}
