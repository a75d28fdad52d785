package loadtest

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Class is how a tenant's receiver behaves.
type Class int

const (
	Healthy Class = iota // answers 204 after its latency
	Hung                 // answers after Options.Hang, beyond the delivery timeout
	Failing              // answers 500 after its latency
	numClasses
)

func (c Class) String() string {
	return [...]string{"healthy", "hung", "failing"}[c]
}

// classOf gives the first HungTenants tenants hung receivers, the next
// FailingTenants failing ones, and the rest healthy ones.
func (o Options) classOf(tenant int) Class {
	switch {
	case tenant < o.HungTenants:
		return Hung
	case tenant < o.HungTenants+o.FailingTenants:
		return Failing
	}
	return Healthy
}

// maxInFlightOf is tenant's subscription's max_in_flight: the last Ordered
// tenants are ordered (1), the others have MaxInFlight.
func (o Options) maxInFlightOf(tenant int) int {
	if tenant >= o.Tenants-o.Ordered {
		return 1
	}
	return o.MaxInFlight
}

// ordered says whether tenant's subscription is ordered.
func (o Options) ordered(tenant int) bool { return o.maxInFlightOf(tenant) == 1 }

func tenantName(t int) string { return fmt.Sprintf("tenant-%03d", t) }

// latency draws receiver latencies log-normally around a median: most
// answers near it, a long tail above (real receivers call databases and
// other services). sigma 0 answers in exactly the median.
type latency struct {
	mu     sync.Mutex
	rng    *rand.Rand
	median time.Duration
	sigma  float64
}

func newLatency(median time.Duration, sigma float64, seed uint64) *latency {
	return &latency{rng: rand.New(rand.NewPCG(seed, 0x5eed)), median: median, sigma: sigma}
}

// maxLatencyFactor bounds the tail: a draw above 10 medians (about 7σ at
// the default spread) is cut there, so one draw cannot look like a hang.
const maxLatencyFactor = 10

func (l *latency) draw() time.Duration {
	if l.median <= 0 {
		return 0
	}
	if l.sigma == 0 {
		return l.median
	}
	l.mu.Lock()
	z := l.rng.NormFloat64()
	l.mu.Unlock()
	d := time.Duration(float64(l.median) * math.Exp(l.sigma*z))
	return min(d, maxLatencyFactor*l.median)
}

// mishaps are a healthy receiver's random failures and slow answers, drawn
// from the receiver's own seeded generator.
type mishaps struct {
	mu                 sync.Mutex
	rng                *rand.Rand
	failRate, slowRate float64
}

func newMishaps(failRate, slowRate float64, seed uint64) *mishaps {
	if failRate == 0 && slowRate == 0 {
		return nil
	}
	return &mishaps{rng: rand.New(rand.NewPCG(seed, 0xfa11)), failRate: failRate, slowRate: slowRate}
}

// draw says whether this request fails (500) and whether it is slow. Both
// are drawn every time, so one rate does not shift the other's draws.
func (m *mishaps) draw() (fail, slow bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, s := m.rng.Float64(), m.rng.Float64()
	return f < m.failRate, s < m.slowRate
}

// receiver is one tenant's destination: its own HTTP server on a loopback
// port, so each tenant is its own destination (scheme, host, port) as real
// receivers are; or, on a shared host, its own path on one server.
type receiver struct {
	tenant  int
	class   Class
	latency *latency
	hang    time.Duration
	mishaps *mishaps // a healthy receiver's random failures and slow answers; nil for none
	slow    time.Duration
	stop    <-chan struct{}
	rec     *recorder
	url     string
}

func newReceiver(o Options, t int, rec *recorder, stop <-chan struct{}) *receiver {
	r := &receiver{tenant: t, class: o.classOf(t), latency: newLatency(o.SinkLatency, o.SinkSpread, uint64(t)),
		hang: o.Hang, slow: o.SlowLatency, stop: stop, rec: rec}
	if r.class == Healthy {
		r.mishaps = newMishaps(o.FailRate, o.SlowRate, uint64(t))
	}
	return r
}

// serve starts one HTTP server on a loopback port for handler.
func serve(handler http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}

// startReceivers gives each receiver its URL: its own server, or with
// shared one server for all, each tenant at /hook/<tenant>. It returns the
// servers to close.
func startReceivers(receivers []*receiver, shared bool) ([]*http.Server, error) {
	var servers []*http.Server
	if shared {
		srv, base, err := serve(sharedHost(receivers))
		if err != nil {
			return nil, err
		}
		for _, r := range receivers {
			r.url = base + "/hook/" + tenantName(r.tenant)
		}
		return []*http.Server{srv}, nil
	}
	for _, r := range receivers {
		srv, base, err := serve(r)
		if err != nil {
			for _, s := range servers {
				s.Close()
			}
			return nil, err
		}
		servers = append(servers, srv)
		r.url = base + "/hook"
	}
	return servers, nil
}

// sharedHost routes /hook/<tenant> to that tenant's receiver.
func sharedHost(receivers []*receiver) http.Handler {
	byName := make(map[string]*receiver, len(receivers))
	for _, r := range receivers {
		byName[tenantName(r.tenant)] = r
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name, ok := strings.CutPrefix(req.URL.Path, "/hook/")
		r := byName[name]
		if !ok || r == nil {
			http.NotFound(w, req)
			return
		}
		r.ServeHTTP(w, req)
	})
}

var sentKey = []byte(`"sent_ns":`)

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	now := time.Now()
	var sent time.Time
	if i := bytes.Index(body, sentKey); i >= 0 {
		rest := body[i+len(sentKey):]
		if j := bytes.IndexByte(rest, ','); j > 0 {
			if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				sent = time.Unix(0, ns)
			}
		}
	}
	seq, _ := strconv.ParseInt(req.Header.Get("X-Lerian-Sequence"), 10, 64)
	id := req.Header.Get("X-Lerian-Event-Id")
	first := r.rec.received(r.class, r.tenant, id, seq, now, sent)

	wait := r.latency.draw()
	status := http.StatusNoContent
	switch r.class {
	case Hung:
		wait = r.hang
	case Failing:
		status = http.StatusInternalServerError
	default:
		fail, slow := r.mishaps.draw()
		if slow {
			wait = r.slow
		}
		if fail {
			status = http.StatusInternalServerError
		}
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done(): // the hub gave up (its timeout) or the bench is ending
			return
		case <-r.stop:
			return
		}
	}
	w.WriteHeader(status)
	if status < 300 && req.Context().Err() == nil {
		lat := time.Duration(-1)
		if !sent.IsZero() {
			lat = now.Sub(sent)
		}
		r.rec.answered(r.class, id, time.Now(), lat, first)
	}
}

// recorder counts what the receivers saw, by class.
type recorder struct {
	mu      sync.Mutex
	events  map[string]uint8 // bitmask of seenReceived, seenDelivered
	classes [numClasses]classStats
	lastSeq map[int]int64 // per tenant, the sequence of its latest first receipt
	late    map[int]int   // per tenant, first receipts with a lower sequence than an earlier one
	reached map[int]bool  // tenants whose receiver has had a request

	// Latency (send -> receipt of the request answered 2xx) of delivered
	// events: firstTry of those whose first attempt was the one, retried of
	// those that needed more; window holds the firstTry samples since the
	// last takeWindow.
	firstTry, retried, window []time.Duration
}

const (
	seenReceived uint8 = 1 << iota
	seenDelivered
)

type classStats struct {
	attempts, received, delivered, duplicates, outOfOrder int
	latencies                                             []time.Duration // produce -> first receipt
	firstLate                                             string          // the first out-of-order receipt, for a look in the database
	firstOK, lastOK                                       time.Time
}

func newRecorder(events int) *recorder {
	return &recorder{events: make(map[string]uint8, events), lastSeq: map[int]int64{}, late: map[int]int{}, reached: map[int]bool{}}
}

// received counts a request; it says whether it is the event's first.
func (rc *recorder) received(c Class, tenant int, id string, seq int64, now, sent time.Time) (first bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := &rc.classes[c]
	s.attempts++
	rc.reached[tenant] = true
	if rc.events[id]&seenReceived != 0 {
		return false
	}
	rc.events[id] |= seenReceived
	s.received++
	if !sent.IsZero() {
		s.latencies = append(s.latencies, now.Sub(sent))
	}
	if seq > 0 {
		if prev := rc.lastSeq[tenant]; seq < prev {
			s.outOfOrder++
			rc.late[tenant]++
			if s.firstLate == "" {
				s.firstLate = fmt.Sprintf("%s: event %s (sequence %d) after sequence %d", tenantName(tenant), id, seq, prev)
			}
		} else {
			rc.lastSeq[tenant] = seq
		}
	}
	return true
}

// answered counts a 2xx answer given while the hub waited; lat is the
// event's send -> this request's receipt (negative: unknown), first
// whether this request was the event's first.
func (rc *recorder) answered(c Class, id string, now time.Time, lat time.Duration, first bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := &rc.classes[c]
	if rc.events[id]&seenDelivered != 0 {
		s.duplicates++
		return
	}
	rc.events[id] |= seenDelivered
	s.delivered++
	if s.firstOK.IsZero() {
		s.firstOK = now
	}
	s.lastOK = now
	switch {
	case lat < 0:
	case first:
		rc.firstTry = append(rc.firstTry, lat)
		rc.window = append(rc.window, lat)
	default:
		rc.retried = append(rc.retried, lat)
	}
}

// takeWindow returns the first-attempt latencies since the last call,
// sorted.
func (rc *recorder) takeWindow() []time.Duration {
	rc.mu.Lock()
	w := rc.window
	rc.window = nil
	rc.mu.Unlock()
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	return w
}

// latencies returns the first-attempt and retried latencies, sorted.
func (rc *recorder) latencies() (firstTry, retried []time.Duration) {
	rc.mu.Lock()
	firstTry = append([]time.Duration(nil), rc.firstTry...)
	retried = append([]time.Duration(nil), rc.retried...)
	rc.mu.Unlock()
	sort.Slice(firstTry, func(i, j int) bool { return firstTry[i] < firstTry[j] })
	sort.Slice(retried, func(i, j int) bool { return retried[i] < retried[j] })
	return firstTry, retried
}

// lateAt counts the out-of-order first receipts of these tenants.
func (rc *recorder) lateAt(tenants []int) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, t := range tenants {
		n += rc.late[t]
	}
	return n
}

// isDelivered says whether the event was answered 2xx.
func (rc *recorder) isDelivered(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.events[id]&seenDelivered != 0
}

func (rc *recorder) delivered(c Class) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.classes[c].delivered
}

// reachedAll says whether each of these tenants' receivers has had a
// request.
func (rc *recorder) reachedAll(tenants []int) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, t := range tenants {
		if !rc.reached[t] {
			return false
		}
	}
	return true
}

// totals is what progress lines show: deliveries of every class, and
// attempts at receivers that are not healthy.
func (rc *recorder) totals() (delivered, unhealthyAttempts int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for c := range rc.classes {
		delivered += rc.classes[c].delivered
		if Class(c) != Healthy {
			unhealthyAttempts += rc.classes[c].attempts
		}
	}
	return delivered, unhealthyAttempts
}

// class summarises one class; lastProduce dates the drain.
func (rc *recorder) class(c Class, tenants, expected int, lastProduce time.Time) ClassResult {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := &rc.classes[c]
	lat := append([]time.Duration(nil), s.latencies...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res := ClassResult{
		Class: c, Tenants: tenants, Expected: expected,
		Delivered: s.delivered, Received: s.received, Attempts: s.attempts,
		Duplicates: s.duplicates, OutOfOrder: s.outOfOrder, FirstLate: s.firstLate,
		P50: quantile(lat, 0.50), P95: quantile(lat, 0.95), P99: quantile(lat, 0.99),
	}
	if len(lat) > 0 {
		res.Max = lat[len(lat)-1]
	}
	if span := s.lastOK.Sub(s.firstOK).Seconds(); span > 0 {
		res.DeliveryRate = float64(s.delivered) / span
	}
	if !s.lastOK.IsZero() && !lastProduce.IsZero() {
		res.LastAfterProduce = s.lastOK.Sub(lastProduce)
	}
	return res
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// span is the first and last delivery of a class.
func (rc *recorder) span(c Class) (first, last time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.classes[c].firstOK, rc.classes[c].lastOK
}
