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
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/console"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/housekeeping"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
	"github.com/lerianstudio/streaming-hub/internal/webhook"
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
	// Telemetry is what the OTEL_* variables say (telemetry.FromEnv); the
	// zero value exports no span.
	Telemetry telemetry.Config
	// OnStatement, when set, is told of every PostgreSQL statement (the
	// bench's statement counts; store.Options.OnStatement).
	OnStatement func(sql string, took time.Duration)

	Store   store.Store
	Metrics *metrics.Metrics
	Keyring *envelope.Keyring
	Client  *http.Client // the SSRF-safe destination client
	// Senders publish to broker destinations (rabbitmq, kafka, nats), through
	// the same SSRF-safe dialing as Client.
	Senders    map[string]destination.Sender
	Broker     *kfake.Cluster // dev mode's embedded Kafka
	Consumer   *ingest.Consumer
	DLQ        *ingest.DLQConsumer // the producers' DLQ topics (SPEC 27)
	Dispatcher *dispatch.Dispatcher
	Breakers   *dispatch.Breakers // this process's circuit breakers (delivery roles)
	Waiters    *api.Waiters       // long-polling pulls, woken by this process's ingest
	// Housekeeper runs retention and job counts; every role has one, and
	// one replica at a time runs a pass.
	Housekeeper *housekeeping.Housekeeper
	Tracing     *telemetry.Provider // spans of ingest, attempts and the API
	// Manifests fetches producer manifests (MANIFEST_SOURCES), one replica
	// at a time.
	Manifests *manifest.Refresher

	ln     net.Listener
	http   *http.Server
	cancel context.CancelFunc // stops ingest and housekeeping
	// abandon ends the dispatcher's drain when the shutdown deadline passes.
	abandon context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
	failed  chan struct{}
}

// Start brings every part up and returns once the HTTP API listens.
func (h *Hub) Start(ctx context.Context) (err error) {
	cfg := &h.Config
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	h.failed = make(chan struct{})
	defer func() {
		if err != nil {
			h.Close()
		}
	}()

	// The address is taken before anything else starts, so a bad or busy
	// one fails the start at once (SPEC 13).
	if h.ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return &config.Error{Var: "HTTP_ADDR", Problem: err.Error()}
	}

	var secrets devSecretsFile
	givenKEK := cfg.KEK != nil // not dev's own, generated and kept
	if cfg.Mode == config.Dev {
		if secrets, err = ensureDevSecrets(cfg); err != nil {
			return err
		}
		if cfg.Role.Ingests() && len(cfg.Ingest.Brokers) == 0 {
			if err := h.startBroker(); err != nil {
				return err
			}
		}
	}

	if h.Now == nil {
		h.Now = time.Now
	}
	h.Metrics = metrics.New()
	pool := store.PoolOptions{MaxConns: cfg.DatabaseMaxConns, NoIngest: !cfg.Role.Ingests(), NoDelivery: !cfg.Role.Delivers(),
		OnWait: h.Metrics.ObservePoolWait}
	if h.Store, err = OpenStore(ctx, cfg.DatabaseURL, store.Options{Now: h.Now, Pool: pool, OnStatement: h.OnStatement}); err != nil {
		return fmt.Errorf("STREAMING_HUB_DATABASE_URL: cannot open the database: %s", redactPassword(err.Error(), cfg.DatabaseURL))
	}
	if err := h.Store.Ping(ctx); err != nil {
		return fmt.Errorf("STREAMING_HUB_DATABASE_URL: cannot reach the database: %s", redactPassword(err.Error(), cfg.DatabaseURL))
	}
	if h.NoMigrate {
		err = h.Store.CheckSchema(ctx)
	} else {
		err = h.Store.Migrate(ctx)
	}
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if cfg.Mode == config.Dev {
		if err := seedDefaultTenant(ctx, h.Store); err != nil {
			return err
		}
	}

	if p, ok := h.Store.(store.PoolReporter); ok {
		h.Metrics.WatchPool(p)
	}
	if h.Tracing, err = telemetry.New(ctx, h.Telemetry, hub.Version, h.Logger.With("component", "telemetry")); err != nil {
		return err
	}
	tracer := h.Tracing.Tracer()
	h.Waiters = api.NewWaiters()
	ready := map[string]func(context.Context) error{"store": h.Store.Ping}
	if cfg.KEK == nil {
		return &config.Error{Var: "KEK", Problem: "required: the hub never stores secrets unencrypted"}
	}
	if h.Keyring, err = envelope.NewKeyring(cfg.KEK, cfg.PreviousKEKs...); err != nil {
		return &config.Error{Var: "KEK", Problem: err.Error()}
	}
	// Both modes (SPEC 28): dev on a database sealed under another KEK
	// would start, then fail every attempt.
	if err := CheckKEK(ctx, h.Store, h.Keyring); err != nil {
		if cfg.Mode == config.Dev && !givenKEK {
			return devKEKError(err, secrets.Path)
		}
		return err
	}
	h.countSealed(ctx)
	if h.Client, err = webhook.NewClient(webhook.ClientOptions{Timeout: cfg.DeliveryTimeout, AllowPrivate: cfg.AllowPrivateSinks}); err != nil {
		return err
	}
	if h.Senders, err = newSenders(*cfg, h.Logger); err != nil {
		return err
	}
	if cfg.Role.Delivers() {
		var autoDisable *store.AutoDisable
		if g := cfg.Autodisable; g.Enabled {
			autoDisable = &store.AutoDisable{Window: g.FailureWindow, Spread: g.FailureSpread}
		}
		if h.Breakers, err = dispatch.NewBreakers(cfg.Breaker, h.Now, h.Metrics); err != nil {
			return err
		}
		h.Dispatcher, err = dispatch.New(dispatch.Config{
			Dispatch:    cfg.Dispatch,
			Store:       h.Store,
			Keyring:     h.Keyring,
			Client:      h.Client,
			Senders:     h.Senders,
			Metrics:     h.Metrics,
			Logger:      h.Logger.With("component", "dispatch"),
			Now:         h.Now,
			AutoDisable: autoDisable,
			Breakers:    h.Breakers,
			Tracer:      tracer,
		})
		if err != nil {
			return err
		}
	}
	if cfg.Role.Ingests() {
		kafka := cfg.Kafka
		if h.Broker != nil {
			kafka = config.Defaults(cfg.Mode).Kafka // dev's embedded broker is plaintext
		}
		h.Consumer, err = ingest.New(ingest.Config{
			Ingest:  cfg.Ingest,
			Kafka:   kafka,
			Store:   h.Store,
			Metrics: h.Metrics,
			Logger:  h.Logger.With("component", "ingest"),
			// No OnJobs: the store tells the dispatcher of the jobs ingest
			// creates, naming their subscriptions (Store.ListenJobs).
			OnEvents: h.Waiters.Notify,
			Tracer:   tracer,
		})
		if err != nil {
			return err
		}
		ready["kafka"] = h.Consumer.Ready
		ready["ingest"] = h.Consumer.Stalled
		h.DLQ, err = ingest.NewDLQ(ingest.DLQConfig{
			Ingest: cfg.Ingest, Kafka: kafka, Store: h.Store, Metrics: h.Metrics,
			Logger: h.Logger.With("component", "ingest-dlq"),
		})
		if err != nil {
			return err
		}
	}

	h.Housekeeper, err = housekeeping.New(housekeeping.Config{
		Housekeeping: cfg.Housekeeping,
		Store:        h.Store, Metrics: h.Metrics, Logger: h.Logger.With("component", "housekeeping"), Now: h.Now,
	})
	if err != nil {
		return err
	}

	h.Manifests, err = manifest.New(manifest.Config{
		Manifests: cfg.Manifests,
		Store:     h.Store, Metrics: h.Metrics, Logger: h.Logger.With("component", "manifests"), Now: h.Now,
	})
	if err != nil {
		return err
	}

	srv, err := api.New(api.Deps{
		Store:             h.Store,
		Metrics:           h.Metrics,
		Logger:            h.Logger.With("component", "api"),
		AdminToken:        cfg.AdminToken,
		Version:           hub.Version,
		Ready:             ready,
		Keyring:           h.Keyring,
		Client:            h.Client,
		Senders:           h.Senders,
		AllowPrivateSinks: cfg.AllowPrivateSinks,
		OnJobs:            h.wakeDispatcher,
		OnVerified:        h.verified,
		BreakerState:      h.breakerState,
		Now:               h.Now,
		Waiters:           h.Waiters,
		Pull:              cfg.Pull,
		AuthFailureLimit:  cfg.AuthFailureLimit,
		IdempotencyTTL:    cfg.IdempotencyTTL,
		Tracer:            tracer,
		HealthWindow:      cfg.Housekeeping.HealthWindow,
		Auth:              cfg.Auth,
	})
	if err != nil {
		return err
	}
	con, err := console.New(console.Deps{
		API: srv, Store: h.Store, Metrics: h.Metrics, Logger: h.Logger.With("component", "console"),
		FrameAncestors: cfg.Console.FrameAncestors, IdleTimeout: cfg.Console.IdleTimeout,
		SessionMaxAge: cfg.Console.SessionMaxAge, Now: h.Now,
	})
	if err != nil {
		return err
	}
	srv.Mount(console.Prefix, con.Handler())
	h.http = &http.Server{
		Handler: srv.Handler(),
		// What one client may hold (SPEC 11): headers, slow starts, idle
		// keep-alives. No write timeout: long polls answer within 30 s.
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       120 * time.Second,
	}
	// Shutdown answers open long polls at once instead of waiting up to
	// their 30 s.
	h.http.RegisterOnShutdown(h.Waiters.Release)

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	dispatchCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	h.abandon = abandon
	h.goRun("http", func() error {
		if err := h.http.Serve(h.ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if h.Consumer != nil {
		h.goRun("ingest", func() error { return h.Consumer.Run(runCtx) })
	}
	if h.DLQ != nil {
		h.goRun("ingest dlq", func() error { return h.DLQ.Run(runCtx) })
	}
	if h.Dispatcher != nil {
		h.goRun("dispatch", func() error { return h.Dispatcher.Run(dispatchCtx) })
	}
	h.goRun("housekeeping", func() error { h.Housekeeper.Run(runCtx); return nil })
	h.goRun("manifests", func() error { h.Manifests.Run(runCtx); return nil })
	h.goRun("secrets gauge", func() error { h.recountSealed(runCtx); return nil })
	h.Logger.Info("streaming-hub started", "mode", cfg.Mode, "role", cfg.Role, "http", h.HTTPAddr(), "version", hub.Version)
	if w := cfg.AuthWarning(); w != "" {
		h.Logger.Warn(w)
	}
	if cfg.Mode == config.Dev && h.Out != nil {
		printDevBanner(h.Out, h, secrets)
	}
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

// Shutdown stops gracefully within ctx, in the order of SPEC 16: dispatch
// stops claiming first; open long polls are answered at once and the API
// stops taking requests; the attempts in flight finish and their results
// are written, while the consumer finishes its transactions and commits
// the offsets they persisted; then the store and the embedded broker
// close. When ctx ends first, what is still running is abandoned: at
// least once, those jobs are delivered again after their leases expire.
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
	for _, s := range h.Senders {
		s.Close()
	}
	if h.Broker != nil {
		h.Broker.Close()
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

// verified is what a passing verification probe does to delivery: this
// process's breaker for the destination closes, and the subscription's
// waiting jobs are due now (SPEC 8).
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
