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

// receiver is one tenant's destination: its own HTTP server on a loopback
// port, so each tenant is its own destination (scheme, host, port) as real
// receivers are.
type receiver struct {
	tenant  int
	class   Class
	latency *latency
	hang    time.Duration
	stop    <-chan struct{}
	rec     *recorder
	srv     *http.Server
	url     string
}

func startReceiver(r *receiver) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.url = "http://" + ln.Addr().String() + "/hook"
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return nil
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
	r.rec.received(r.class, r.tenant, id, seq, now, sent)

	wait := r.latency.draw()
	status := http.StatusNoContent
	switch r.class {
	case Hung:
		wait = r.hang
	case Failing:
		status = http.StatusInternalServerError
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
		r.rec.answered(r.class, id, time.Now())
	}
}

// recorder counts what the receivers saw, by class.
type recorder struct {
	mu      sync.Mutex
	events  map[string]uint8 // bitmask of seenReceived, seenDelivered
	classes [numClasses]classStats
	lastSeq map[int]int64 // per tenant, the sequence of its latest first receipt
	reached map[int]bool  // tenants whose receiver has had a request
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
	return &recorder{events: make(map[string]uint8, events), lastSeq: map[int]int64{}, reached: map[int]bool{}}
}

func (rc *recorder) received(c Class, tenant int, id string, seq int64, now, sent time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	s := &rc.classes[c]
	s.attempts++
	rc.reached[tenant] = true
	if rc.events[id]&seenReceived != 0 {
		return
	}
	rc.events[id] |= seenReceived
	s.received++
	if !sent.IsZero() {
		s.latencies = append(s.latencies, now.Sub(sent))
	}
	if seq > 0 {
		if prev := rc.lastSeq[tenant]; seq < prev {
			s.outOfOrder++
			if s.firstLate == "" {
				s.firstLate = fmt.Sprintf("tenant-%03d: event %s (sequence %d) after sequence %d", tenant, id, seq, prev)
			}
		} else {
			rc.lastSeq[tenant] = seq
		}
	}
}

func (rc *recorder) answered(c Class, id string, now time.Time) {
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
