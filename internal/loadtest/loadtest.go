// Package loadtest runs the whole delivery path on one machine and measures
// it: an embedded Kafka broker, the hub (ingest, match, dispatch) on
// PostgreSQL or SQLite, and a local HTTP sink. It backs `streaming-hub bench`.
package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/webhook"
)

// Options shape one run.
type Options struct {
	Events      int           // events to produce
	Tenants     int           // tenants (one subscription each), spread over partitions
	Partitions  int           // partitions of the topic
	Rate        int           // events per second; 0 produces as fast as possible
	PayloadSize int           // bytes of each event body
	DatabaseURL string        // postgres://... (a fresh schema is used) or "" for a temp SQLite file
	Workers     int           // STREAMING_HUB_DISPATCH_WORKERS
	ClaimBatch  int           // STREAMING_HUB_DISPATCH_CLAIM_BATCH
	Timeout     time.Duration // give up after this long
	Progress    time.Duration // progress line interval; 0 for none
}

// Result is what a run measured.
type Result struct {
	Events, Delivered, Duplicates int
	Database                      string
	IngestRate                    float64 // events/s from the first produce to the last event in the inbox
	DeliveryRate                  float64 // unique deliveries/s from the first to the last
	P50, P95, P99, Max            time.Duration
	PeakRSS                       int64 // bytes (VmHWM)
	Elapsed                       time.Duration
}

const topic = "lerian.streaming.ledger_transaction.posted"

// Run runs one load and reports progress to out.
func Run(ctx context.Context, o Options, out io.Writer) (Result, error) {
	o = defaults(o)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	db, cleanup, err := database(ctx, o.DatabaseURL)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()

	s := newSink(o.Events)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	defer srv.Close()

	vars := map[string]string{
		"STREAMING_HUB_HTTP_ADDR":                 "127.0.0.1:0",
		"STREAMING_HUB_DEV_KAFKA_ADDR":            "127.0.0.1:0",
		"STREAMING_HUB_DATABASE_URL":              db,
		"STREAMING_HUB_DISPATCH_WORKERS":          strconv.Itoa(o.Workers),
		"STREAMING_HUB_DISPATCH_CLAIM_BATCH":      strconv.Itoa(o.ClaimBatch),
		"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "50",
		"STREAMING_HUB_LOG_LEVEL":                 "error",
		// The hub gets its own secrets, as internal/devhub gives them: dev
		// mode would otherwise keep generated ones on disk.
		"STREAMING_HUB_KEK":         base64.StdEncoding.EncodeToString(randomBytes(32)),
		"STREAMING_HUB_ADMIN_TOKEN": "bench_" + hex.EncodeToString(randomBytes(24)),
	}
	cfg, err := config.Load(config.Dev, func(k string) string { return vars[k] })
	if err != nil {
		return Result{}, err
	}
	h := &app.Hub{Config: cfg, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	if err := h.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Shutdown(sctx)
	}()
	if err := h.Broker.CreateTopic(topic, int32(o.Partitions), nil); err != nil && !strings.Contains(err.Error(), "exists") {
		return Result{}, fmt.Errorf("create topic: %w", err)
	}
	tenants, err := setup(ctx, h, o.Tenants, "http://"+ln.Addr().String()+"/hook")
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(out, "bench: %d events over %d tenants and %d partitions, %s, rate %s, %d workers, claim batch %d\n",
		o.Events, o.Tenants, o.Partitions, describeDB(db), rate(o.Rate), o.Workers, o.ClaimBatch)

	prod, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.MaxBufferedRecords(50_000))
	if err != nil {
		return Result{}, err
	}
	defer prod.Close()

	start := time.Now()
	var produced atomic.Int64
	var produceErr atomic.Value
	go func() {
		if err := produce(ctx, prod, o, tenants, &produced); err != nil {
			produceErr.Store(err)
		}
	}()

	var lastIngest, lastPrint time.Time
	tick := time.NewTicker(100 * time.Millisecond) // measurement; printing follows o.Progress
	defer tick.Stop()
	ingestedEvents := func() int64 { return int64(counterValue(h.Metrics.InboxEvents)) }
	for {
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("bench: %w after %v: %d of %d delivered", ctx.Err(), time.Since(start).Round(time.Second), s.unique(), o.Events)
		case <-tick.C:
		}
		if v := produceErr.Load(); v != nil {
			return Result{}, v.(error)
		}
		if lastIngest.IsZero() && ingestedEvents() >= int64(o.Events) {
			lastIngest = time.Now()
		}
		el := time.Since(start)
		if o.Progress > 0 && time.Since(lastPrint) >= o.Progress {
			lastPrint = time.Now()
			fmt.Fprintf(out, "  %6.1fs  produced %7d  ingested %7d  delivered %7d  (%6.0f/s)  rss %4d MB\n",
				el.Seconds(), produced.Load(), ingestedEvents(), s.unique(), float64(s.unique())/el.Seconds(), peakRSS()>>20)
		}
		if s.unique() >= o.Events {
			break
		}
	}
	if lastIngest.IsZero() {
		lastIngest = time.Now()
	}
	res := s.result(o.Events)
	res.Database = describeDB(db)
	res.IngestRate = float64(o.Events) / lastIngest.Sub(start).Seconds()
	res.Elapsed = time.Since(start)
	res.PeakRSS = peakRSS()
	return res, nil
}

func defaults(o Options) Options {
	if o.Events <= 0 {
		o.Events = 100_000
	}
	if o.Tenants <= 0 {
		o.Tenants = 100
	}
	if o.Partitions <= 0 {
		o.Partitions = 8
	}
	if o.PayloadSize <= 0 {
		o.PayloadSize = 512
	}
	if o.Workers <= 0 {
		o.Workers = 64
	}
	if o.ClaimBatch <= 0 {
		o.ClaimBatch = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	return o
}

func rate(r int) string {
	if r <= 0 {
		return "unbounded"
	}
	return fmt.Sprintf("%d/s", r)
}

// database returns the URL to run on: a temp SQLite file, or a fresh schema
// of the given PostgreSQL database, removed afterwards.
func database(ctx context.Context, raw string) (string, func(), error) {
	if raw == "" || strings.HasPrefix(raw, "sqlite://") {
		if raw != "" {
			return raw, func() {}, nil
		}
		dir, err := os.MkdirTemp("", "streaming-hub-bench-")
		if err != nil {
			return "", nil, err
		}
		return "sqlite://" + filepath.Join(dir, "bench.db"), func() { os.RemoveAll(dir) }, nil
	}
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return "", nil, fmt.Errorf("bench database: %w", err)
	}
	defer conn.Close(ctx)
	schema := "bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("bench database: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		c, err := pgx.Connect(context.Background(), raw)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	}, nil
}

func describeDB(u string) string {
	if strings.HasPrefix(u, "sqlite://") {
		return "SQLite"
	}
	return "PostgreSQL"
}

// setup creates the tenants, each with one verified subscription to the
// sink.
func setup(ctx context.Context, h *app.Hub, n int, sinkURL string) ([]string, error) {
	tenants := make([]string, n)
	secret := webhook.NewSecret()
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant-%03d", i)
		if _, err := h.Store.CreateTenant(ctx, storeTenant(tenants[i])); err != nil {
			return nil, err
		}
		sub := hub.Subscription{
			ID: hub.NewID("sub", time.Now()), TenantID: tenants[i], Name: "bench",
			EventTypes:  []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
			Destination: hub.Destination{Type: "webhook", URL: sinkURL},
			MaxInFlight: 1, Enabled: true, VerificationState: hub.VerificationActive,
		}
		if err := webhook.SealSecrets(h.Keyring, &sub, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: secret}}}); err != nil {
			return nil, err
		}
		if _, err := h.Store.CreateSubscription(ctx, sub); err != nil {
			return nil, err
		}
	}
	return tenants, nil
}

// produce sends the events, round-robin over tenants (key = tenant), paced
// at o.Rate when set. Each body carries its send time for latency.
func produce(ctx context.Context, cl *kgo.Client, o Options, tenants []string, produced *atomic.Int64) error {
	pad := strings.Repeat("x", max(o.PayloadSize-48, 0))
	var firstErr atomic.Value
	var tick *time.Ticker
	perTick := o.Events
	if o.Rate > 0 {
		tick = time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		perTick = max(o.Rate/100, 1)
	}
	for i := 0; i < o.Events; {
		if tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
		for j := 0; j < perTick && i < o.Events; j, i = j+1, i+1 {
			tenant := tenants[i%len(tenants)]
			id := fmt.Sprintf("bench-%08d", i)
			body := fmt.Sprintf(`{"sent_ns":%d,"pad":"%s"}`, time.Now().UnixNano(), pad)
			r := &kgo.Record{Topic: topic, Key: []byte(tenant), Value: []byte(body), Headers: []kgo.RecordHeader{
				{Key: "ce-specversion", Value: []byte("1.0")}, {Key: "ce-id", Value: []byte(id)},
				{Key: "ce-source", Value: []byte("//bench")}, {Key: "ce-type", Value: []byte("studio.lerian.transaction.posted")},
				{Key: "ce-time", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))}, {Key: "ce-tenantid", Value: []byte(tenant)},
				{Key: "ce-schemaversion", Value: []byte("1.0.0")}, {Key: "content-type", Value: []byte("application/json")},
			}}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				produced.Add(1)
			})
			if v := firstErr.Load(); v != nil {
				return fmt.Errorf("produce: %w", v.(error))
			}
		}
	}
	return cl.Flush(ctx)
}

// sink counts unique deliveries and their end-to-end latency: from the
// producer's send to the sink's receipt.
type sink struct {
	mu        sync.Mutex
	seen      map[string]bool
	latencies []time.Duration
	dups      int
	first     time.Time
	last      time.Time
}

func newSink(n int) *sink {
	return &sink{seen: make(map[string]bool, n), latencies: make([]time.Duration, 0, n)}
}

var sentKey = []byte(`"sent_ns":`)

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	var lat time.Duration
	if i := bytes.Index(body, sentKey); i >= 0 {
		rest := body[i+len(sentKey):]
		if j := bytes.IndexByte(rest, ','); j > 0 {
			if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				lat = now.Sub(time.Unix(0, ns))
			}
		}
	}
	id := r.Header.Get("X-Lerian-Event-Id")
	s.mu.Lock()
	if s.seen[id] {
		s.dups++
	} else {
		s.seen[id] = true
		s.latencies = append(s.latencies, lat)
		if s.first.IsZero() {
			s.first = now
		}
		s.last = now
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *sink) unique() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *sink) result(events int) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	lat := append([]time.Duration(nil), s.latencies...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	res := Result{Events: events, Delivered: len(s.seen), Duplicates: s.dups, P50: q(0.50), P95: q(0.95), P99: q(0.99)}
	if len(lat) > 0 {
		res.Max = lat[len(lat)-1]
	}
	if span := s.last.Sub(s.first).Seconds(); span > 0 {
		res.DeliveryRate = float64(len(s.seen)) / span
	}
	return res
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func storeTenant(id string) store.CreateTenantParams {
	return store.CreateTenantParams{ID: id, Name: id}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return b
}
