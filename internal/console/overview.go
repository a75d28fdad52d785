package console

import (
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// rates turns the process's counters into per-second rates: each operator
// overview samples them, and a rate is measured against the oldest sample
// of the last five minutes (the first view has none yet).
type rates struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at     time.Time
	values map[string]float64
}

const rateWindow = 5 * time.Minute

func newRates() *rates { return &rates{} }

// observe records now's values and returns the per-second rates since the
// oldest kept sample, and over how long (0: no rate yet).
func (rt *rates) observe(now time.Time, values map[string]float64) (map[string]float64, time.Duration) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for len(rt.samples) > 1 && now.Sub(rt.samples[1].at) >= rateWindow {
		rt.samples = rt.samples[1:]
	}
	if len(rt.samples) > 0 && now.Sub(rt.samples[0].at) > 2*rateWindow {
		rt.samples = nil // too old to say anything about now
	}
	var out map[string]float64
	var over time.Duration
	if len(rt.samples) > 0 {
		first := rt.samples[0]
		if over = now.Sub(first.at); over > 0 {
			out = map[string]float64{}
			for k, v := range values {
				out[k] = math.Max(0, v-first.values[k]) / over.Seconds()
			}
		} else {
			over = 0
		}
	}
	if len(rt.samples) == 0 || now.Sub(rt.samples[len(rt.samples)-1].at) >= time.Second {
		rt.samples = append(rt.samples, sample{now, values})
	}
	if len(rt.samples) > 600 {
		rt.samples = rt.samples[len(rt.samples)-600:]
	}
	return out, over
}

// processCounters gathers this process's metrics: the families by name,
// the ingest counters the overview turns into rates, and the verdicts seen.
// Deliveries are the hub's (hubHealth), not this process's.
func (c *Console) processCounters() (map[string]*dto.MetricFamily, map[string]float64, []string) {
	fams, err := c.deps.Metrics.Registry.Gather()
	if err != nil {
		c.deps.Logger.Warn("reading metrics for the console failed", "err", err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	counters := map[string]float64{}
	verdicts := []string{}
	for _, mt := range metricsOf(byName, "streaming_hub_ingest_records_total") {
		v := label(mt, "verdict")
		if _, ok := counters["ingest:"+v]; !ok {
			verdicts = append(verdicts, v)
		}
		counters["ingest:"+v] += mt.GetCounter().GetValue()
	}
	sort.Strings(verdicts)
	return byName, counters, verdicts
}

// sampleRates takes the counters' first sample when the console starts, so
// that the first overview has rates (since the start) without a reload.
func (c *Console) sampleRates() {
	_, counters, _ := c.processCounters()
	c.rates.observe(c.now(), counters)
}

// operatorStats reads the overview's figures of this process from its
// metrics, and the auto-disabled subscriptions from the API.
func (c *Console) operatorStats(r *http.Request, s *session) m {
	byName, counters, verdicts := c.processCounters()
	perSec, over := c.rates.observe(c.now(), counters)

	out := m{"RateOver": duration(over.Round(time.Second)), "HasRates": perSec != nil}
	var ingest []m
	for _, v := range verdicts {
		row := m{"Verdict": v, "Total": counters["ingest:"+v]}
		if perSec != nil {
			row["PerSec"] = perSec["ingest:"+v]
		}
		ingest = append(ingest, row)
	}
	out["Ingest"] = ingest
	lag, lagSeen := 0.0, false
	for _, mt := range metricsOf(byName, "streaming_hub_consumer_lag") {
		lag += mt.GetGauge().GetValue()
		lagSeen = true
	}
	if lagSeen {
		out["Lag"] = lag
	}
	for _, mt := range metricsOf(byName, "streaming_hub_breakers_open") {
		out["BreakersOpen"] = mt.GetGauge().GetValue()
	}
	for _, mt := range metricsOf(byName, "streaming_hub_jobs") {
		if label(mt, "status") == "dead_lettered" {
			out["DeadLetters"] = mt.GetGauge().GetValue()
		}
	}
	for _, mt := range metricsOf(byName, "streaming_hub_delivery_end_to_end_seconds") {
		if q, ok := quantile(mt.GetHistogram(), 0.99); ok {
			out["P99"] = duration(time.Duration(q * float64(time.Second)))
		}
	}
	out["Disabled"], out["DisabledError"] = c.autoDisabled(r, s)
	return out
}

func metricsOf(byName map[string]*dto.MetricFamily, name string) []*dto.Metric {
	if f := byName[name]; f != nil {
		return f.GetMetric()
	}
	return nil
}

func label(mt *dto.Metric, name string) string {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile estimates a quantile from cumulative buckets, as Prometheus's
// histogram_quantile does (linear within the bucket).
func quantile(h *dto.Histogram, q float64) (float64, bool) {
	total := float64(h.GetSampleCount())
	if h == nil || total == 0 {
		return 0, false
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range h.GetBucket() {
		cnt := float64(b.GetCumulativeCount())
		if cnt >= rank {
			if math.IsInf(b.GetUpperBound(), 1) {
				return prevBound, true
			}
			if cnt == prevCount {
				return b.GetUpperBound(), true
			}
			return prevBound + (b.GetUpperBound()-prevBound)*(rank-prevCount)/(cnt-prevCount), true
		}
		prevBound, prevCount = b.GetUpperBound(), cnt
	}
	return prevBound, true
}

// overviewDisabled is how many disabled subscriptions the overview lists,
// the most recently disabled first; disabledPage is the API's largest page.
const (
	overviewDisabled = 1000
	disabledPage     = 500
)

// autoDisabled lists the subscriptions the hub disabled (disabled_reason
// set), across tenants, as the API answers the signed-in operator
// (GET /v1/admin/disabled-subscriptions, page by page); a failure is the
// message the overview shows instead.
func (c *Console) autoDisabled(r *http.Request, s *session) ([]m, string) {
	out := []m{}
	query := url.Values{}
	for len(out) < overviewDisabled {
		query.Set("limit", strconv.Itoa(min(disabledPage, overviewDisabled-len(out))))
		var list struct {
			Data []struct {
				ID             string  `json:"id"`
				TenantID       string  `json:"tenant_id"`
				Name           string  `json:"name"`
				DisabledReason *string `json:"disabled_reason"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := c.call(r, s, "GET", "/v1/admin/disabled-subscriptions?"+query.Encode(), nil, &list); err != nil {
			if ae, ok := err.(*apiError); ok && ae.Status < 500 {
				return nil, ae.Message
			}
			c.deps.Logger.Warn("listing disabled subscriptions for the console failed", "err", err)
			return nil, "the disabled subscriptions could not be read; the log says why."
		}
		for _, sub := range list.Data {
			reason := ""
			if sub.DisabledReason != nil {
				reason = *sub.DisabledReason
			}
			out = append(out, m{"Tenant": sub.TenantID, "ID": sub.ID, "Name": sub.Name, "Reason": reason})
		}
		if list.NextCursor == nil {
			break
		}
		query.Set("cursor", *list.NextCursor)
	}
	return out, ""
}

// overviewWindow is the operator overview's default window: the overview
// is about now; longer windows are a link away.
const overviewWindow = "1h"

// hubHealth adds the hub's delivery figures and charts over the window the
// request asks (GET /v1/admin/health: every tenant, every process): the
// attempts delivered and failed in the window, the success rate and p99,
// and per bucket the same counts, so the cards and the bars beside them
// read in one unit over one window. They come from the rollups, so they
// are there on the first look.
func (c *Console) hubHealth(r *http.Request, s *session, out m) {
	window := r.URL.Query().Get("window")
	if window == "" {
		window = overviewWindow
	}
	out["Window"], out["WindowLabel"], out["Windows"] = window, windowLabel(window), healthWindows
	var h m
	if err := c.call(r, s, "GET", "/v1/admin/health?window="+url.QueryEscape(window), nil, &h); err != nil {
		msg := "the hub's health could not be read; the log says why."
		if ae, ok := err.(*apiError); ok && ae.Status < 500 {
			msg = ae.Message
		} else {
			c.deps.Logger.Warn("reading the hub's health for the console failed", "err", err)
		}
		out["HubError"] = msg
		return
	}
	out["Hub"] = h
	out["BucketLabel"] = duration(seriesOf(h).Width)
	out["RateChart"], out["P99Chart"] = overviewCharts(h, windowDuration(window), c.now())
}
