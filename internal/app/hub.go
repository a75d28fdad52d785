package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/housekeeping"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/reconciler"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// Hub is one running hub process.
type Hub struct {
	Config    config.Config
	Logger    *slog.Logger
	Out       io.Writer // where dev mode prints what to do next; nil for none
	NoMigrate bool      // serve --no-migrate: check the schema, change nothing
	// Now is the clock of the store, the dispatcher and the API; nil means
	// time.Now. Tests move it to drive retries without waiting.
	Now func() time.Time
	// realClock: Now was left nil, so heartbeats are compared with the
	// database's clock (store.Options.DatabaseClock).
	realClock bool
	// Telemetry is what the OTEL_* variables say (telemetry.FromEnv); the
	// zero value exports no span.
	Telemetry telemetry.Config
	// OnStatement, when set, is told of every PostgreSQL statement (the
	// bench's statement counts; store.Options.OnStatement).
	OnStatement func(sql string, took time.Duration)

	Store   store.Store
	Metrics *metrics.Metrics
	Keyring *envelope.Keyring
	// Destinations is the one send path to every destination type
	// (webhook, rabbitmq, kafka, nats, pubsub), for dispatch and the API.
	Destinations *destination.Registry
	Broker       *kfake.Cluster // dev mode's embedded Kafka
	Consumer     *ingest.Consumer
	DLQ          *ingest.DLQConsumer // the producers' DLQ topics (docs/lerian-platform.md)
	Dispatcher   *dispatch.Dispatcher
	// Writer is the process's one writer (docs/architecture.md, "The
	// writer"): ingest's records and the dispatcher's results and births
	// go through it.
	Writer     *writer.Writer
	writerDone chan struct{}
	Breakers   *dispatch.Breakers // this process's circuit breakers (delivery roles)
	Waiters    *api.Waiters       // long-polling pulls, woken by this process's ingest
	// Housekeeper runs retention and job counts; every role has one, and
	// one replica at a time runs a pass.
	Housekeeper *housekeeping.Housekeeper
	Tracing     *telemetry.Provider // spans of ingest, attempts and the API
	// Manifests fetches producer manifests (MANIFEST_SOURCES), one replica
	// at a time.
	Manifests *manifest.Refresher
	// Reconciler is the topic-drift check (RECONCILER_ENABLED), one
	// replica at a time; nil in a role that does not ingest, or disabled.
	Reconciler       *reconciler.Reconciler
	reconcilerClient *kgo.Client

	ln     net.Listener
	http   *http.Server
	cancel context.CancelFunc // stops ingest and housekeeping
	// abandon ends the dispatcher's drain when the shutdown deadline passes.
	abandon context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
	failed  chan struct{}
	// draining is set by Drain: /readyz answers 503 from then on.
	draining atomic.Bool

	// sqsEndpoint is the operator's SQS endpoint (AWS_ENDPOINT_URL_SQS or
	// AWS_ENDPOINT_URL), "" for AWS's: the only other host an AWS
	// destination's queue URL may name (docs/aws.md).
	sqsEndpoint string
}

// Start brings every part up and returns once the HTTP API listens.
func (h *Hub) Start(ctx context.Context) (err error) {
	cfg := &h.Config
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	if h.Now == nil {
		h.Now = time.Now
		h.realClock = true
	}
	h.failed = make(chan struct{})
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	// The address is taken before anything else starts, so a bad or busy
	// one fails the start at once (docs/configuration.md).
	if h.ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return &config.Error{Var: "HTTP_ADDR", Problem: err.Error()}
	}
	if cfg.KEK == nil && cfg.KEKSource.Fetched() {
		if cfg.KEK, err = ResolveKEK(ctx, cfg.KEKSource); err != nil {
			return err
		}
	}
	givenKEK := cfg.KEK != nil // not dev's own, generated and kept
	secrets, err := h.startDev()
	if err != nil {
		return err
	}
	h.Metrics = metrics.New()
	if err := h.openStore(ctx); err != nil {
		return err
	}
	if h.Tracing, err = telemetry.New(ctx, h.Telemetry, hub.Version, h.Logger.With("component", "telemetry")); err != nil {
		return err
	}
	h.Waiters = api.NewWaiters()
	if err := h.openKeyring(ctx, givenKEK, secrets); err != nil {
		return err
	}
	if h.Destinations, h.sqsEndpoint, err = newDestinations(*cfg, h.Logger); err != nil {
		return err
	}
	ready := map[string]func(context.Context) error{"store": h.Store.Ping}
	if err := h.newWriter(); err != nil {
		return err
	}
	if err := h.newDispatcher(); err != nil {
		return err
	}
	if h.Dispatcher != nil {
		ready["results"] = h.Dispatcher.Unwritten
	}
	if err := h.newIngest(ready); err != nil {
		return err
	}
	if err := h.newBackground(); err != nil {
		return err
	}
	if err := h.newServer(ready); err != nil {
		return err
	}
	h.run(ctx)
	h.announce(secrets)
	return nil
}

// goRun runs fn until it returns; an error from any part fails the hub.
func (h *Hub) goRun(name string, fn func() error) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := fn(); err != nil {
			h.errOnce.Do(func() {
				h.err = fmt.Errorf("%s: %w", name, err)
				close(h.failed)
			})
		}
	}()
}

// Failed is closed when a part of the hub stops with an error; Err says which.
func (h *Hub) Failed() <-chan struct{} { return h.failed }

// Err is the error that stopped a part, if any.
func (h *Hub) Err() error { return h.err }

// HTTPAddr is the address the API listens on (useful with port 0).
func (h *Hub) HTTPAddr() string {
	if h.ln == nil {
		return ""
	}
	return h.ln.Addr().String()
}

// KafkaAddrs are the brokers the hub consumes from.
func (h *Hub) KafkaAddrs() []string { return h.Config.Ingest.Brokers }

// Drain is the pre-stop drain (STREAMING_HUB_PRE_STOP_DRAIN_TIMEOUT): from
// now on /readyz answers 503, so load balancers and Kubernetes stop
// sending requests, while everything (the API, ingest, delivery) keeps
// running for d, or until ctx ends. Shutdown comes after it.
func (h *Hub) Drain(ctx context.Context, d time.Duration) {
	h.draining.Store(true)
	if d <= 0 {
		return
	}
	h.Logger.Info("draining: /readyz answers 503; serving on until the stop", "for", d.String())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Stop is what a SIGTERM does: Drain for drain, then Shutdown within
// timeout.
func (h *Hub) Stop(drain, timeout time.Duration) error {
	h.Drain(context.Background(), drain)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.Shutdown(ctx)
}

// Shutdown stops gracefully within ctx, in the order of docs/operations.md:
// dispatch stops claiming first; open long polls are answered at once and the
// API stops taking requests; the attempts in flight finish and their results
// are written, while the consumer finishes its transactions and commits the
// offsets they persisted; then the store and the embedded broker close. When
// ctx ends first, what is still running is abandoned: at least once, those
// jobs are delivered again after their leases expire.
func (h *Hub) Shutdown(ctx context.Context) error {
	var errs []error
	if h.Dispatcher != nil {
		if err := h.Dispatcher.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if h.http != nil {
		// Its OnShutdown hook releases the long polls.
		if err := h.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	// Offsets are committed while the attempts finish, not after: a slow
	// receiver must not use up the time the commit needs.
	if h.cancel != nil {
		h.cancel()
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		// Ingest and dispatch are done: the writer writes what they left
		// (the statistics gathered) and stops.
		if h.Writer != nil {
			if err := h.Writer.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("shutdown: %w", ctx.Err()))
	}
	// The spans of the work that just finished are exported before exit.
	if err := h.Tracing.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("telemetry: %w", err))
	}
	h.Close()
	return errors.Join(errs...)
}

// Close releases what Start opened, without waiting for anything.
func (h *Hub) Close() {
	if h.cancel != nil {
		h.cancel()
		h.abandon()
	}
	if h.http != nil {
		h.http.Close()
	} else if h.ln != nil {
		h.ln.Close()
	}
	if h.Store != nil {
		h.Store.Close()
	}
	if h.Destinations != nil {
		h.Destinations.Close()
	}
	if h.Broker != nil {
		h.Broker.Close()
	}
	if h.reconcilerClient != nil {
		h.reconcilerClient.Close()
	}
	if h.Tracing != nil {
		// Without waiting: spans not exported yet are dropped.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		h.Tracing.Shutdown(ctx)
	}
}

// breakerState is what GET /v1/subscriptions/{id} shows as breaker_state:
// this process's breaker for the destination. A process that does not
// deliver has none and reports closed.
func (h *Hub) breakerState(tenantID, url string) string {
	if h.Breakers == nil {
		return dispatch.BreakerClosed
	}
	return h.Breakers.State(tenantID, url)
}

// destinationLimit is what a subscription's health answer shows as its
// destination_concurrency: this process's adaptive limit for the
// receiver host; none in a process that does not deliver.
func (h *Hub) destinationLimit(address string) (api.DestinationLimit, bool) {
	if h.Dispatcher == nil {
		return api.DestinationLimit{}, false
	}
	l, ok := h.Dispatcher.HostLimit(address)
	return api.DestinationLimit{Limit: l.Limit, InFlight: l.InFlight, Ceiling: l.Ceiling,
		RecentLatency: l.RecentLatency, BestLatency: l.BestLatency}, ok
}

// verified is what a passing verification probe does to delivery: this
// process's breaker for the destination closes, and the subscription's
// waiting jobs are due now (docs/breakers.md).
func (h *Hub) verified(ctx context.Context, sub hub.Subscription) error {
	if h.Dispatcher != nil {
		return h.Dispatcher.Verified(ctx, sub)
	}
	_, err := h.Store.WakeJobs(ctx, []string{sub.ID})
	return err
}

// wakeDispatcher is the API's in-process wake-up after it created jobs
// (replays): they do not wait for the idle poll.
func (h *Hub) wakeDispatcher() {
	if h.Dispatcher != nil {
		h.Dispatcher.Wake()
	}
}

func seedDefaultTenant(ctx context.Context, s store.Store) error {
	_, err := s.CreateTenant(ctx, store.CreateTenantParams{ID: "default", Name: "Default tenant"})
	if err != nil && hub.ErrorCode(err) != hub.ECONFLICT {
		return fmt.Errorf("seed tenant default: %w", err)
	}
	return nil
}

// ensureServedTenant creates a single-tenant hub's tenant unless it exists
// (replicas starting together may all try: docs/operations.md,
// "Single-tenant mode"); a multi-tenant hub does nothing.
func (h *Hub) ensureServedTenant(ctx context.Context) error {
	id := h.Config.Tenancy.Served()
	if id == "" {
		return nil
	}
	t, err := store.EnsureTenant(ctx, h.Store, id)
	if err != nil {
		return fmt.Errorf("single-tenant mode: creating tenant %q: %w", id, err)
	}
	h.Logger.Info("single-tenant mode: serving one tenant; records of any other ce-tenantid are rejected as "+hub.ReasonTenantNotServed, "tenant", t.ID)
	if t.Status != hub.TenantActive {
		h.Logger.Warn("single-tenant mode: the served tenant is inactive; its records are discarded until it is active again", "tenant", t.ID)
	}
	return nil
}
