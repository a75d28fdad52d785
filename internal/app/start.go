package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/console"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/housekeeping"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// The steps of Start, in its order.

// startDev makes dev mode's secrets and, for a role that ingests without
// brokers, its embedded broker; outside dev mode it does nothing.
func (h *Hub) startDev() (devSecretsFile, error) {
	cfg := &h.Config
	var secrets devSecretsFile
	if cfg.Mode != config.Dev {
		return secrets, nil
	}
	secrets, err := ensureDevSecrets(cfg)
	if err != nil {
		return secrets, err
	}
	if cfg.Role.Ingests() && len(cfg.Ingest.Brokers) == 0 {
		if err := h.startBroker(); err != nil {
			return secrets, err
		}
	}
	return secrets, nil
}

// openStore opens, reaches and migrates (or checks) the database, seeds
// dev's default tenant and watches the pool.
func (h *Hub) openStore(ctx context.Context) (err error) {
	cfg := &h.Config
	pool := store.PoolOptions{MaxConns: cfg.DatabaseMaxConns, NoIngest: !cfg.Role.Ingests(), NoDelivery: !cfg.Role.Delivers(),
		OnWait: h.Metrics.ObservePoolWait, MinConns: cfg.DatabaseMinConns, MaxConnLifetime: cfg.DatabaseConnMaxLifetime}
	if h.Store, err = OpenStore(ctx, cfg.DatabaseURL, store.Options{Now: h.Now, DatabaseClock: h.realClock, Pool: pool, OnStatement: h.OnStatement}); err != nil {
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
	if err := h.ensureServedTenant(ctx); err != nil {
		return err
	}
	if p, ok := h.Store.(store.PoolReporter); ok {
		h.Metrics.WatchPool(p)
	}
	return nil
}

// openKeyring makes the keyring of STREAMING_HUB_KEK (and the previous
// KEKs), checks that it opens what the database holds and counts the
// sealed rows.
func (h *Hub) openKeyring(ctx context.Context, givenKEK bool, secrets devSecretsFile) (err error) {
	cfg := &h.Config
	if cfg.KEK == nil {
		return &config.Error{Var: "KEK", Problem: "required: the hub never stores secrets unencrypted"}
	}
	if h.Keyring, err = envelope.NewKeyring(cfg.KEK, cfg.PreviousKEKs...); err != nil {
		return &config.Error{Var: "KEK", Problem: err.Error()}
	}
	// Both modes (docs/security.md): dev on a database sealed under another KEK
	// would start, then fail every attempt.
	if err := CheckKEK(ctx, h.Store, h.Keyring); err != nil {
		if cfg.Mode == config.Dev && !givenKEK {
			return devKEKError(err, secrets.Path)
		}
		return err
	}
	h.countSealed(ctx)
	return nil
}

// newWriter makes the process's one writer (docs/architecture.md, "The
// writer"): every role has one.
func (h *Hub) newWriter() (err error) {
	d := h.Config.Dispatch
	h.Writer, err = writer.New(writer.Config{
		FlushSize: d.FlushSize, FlushInterval: d.FlushInterval, StatsInterval: d.StatsFlushInterval,
		Store: h.Store, Metrics: h.Metrics, Logger: h.Logger.With("component", "writer"), Now: h.Now,
	})
	return err
}

// newDispatcher makes the breakers and the dispatcher, for a role that
// delivers.
func (h *Hub) newDispatcher() (err error) {
	cfg := &h.Config
	if !cfg.Role.Delivers() {
		return nil
	}
	var autoDisable *store.AutoDisable
	if g := cfg.Autodisable; g.Enabled {
		autoDisable = &store.AutoDisable{Window: g.FailureWindow, Spread: g.FailureSpread}
	}
	if h.Breakers, err = dispatch.NewBreakers(cfg.Breaker, h.Now, h.Metrics); err != nil {
		return err
	}
	h.Dispatcher, err = dispatch.New(dispatch.Config{
		Dispatch:     cfg.Dispatch,
		Store:        h.Store,
		Keyring:      h.Keyring,
		Destinations: h.Destinations,
		Metrics:      h.Metrics,
		Logger:       h.Logger.With("component", "dispatch"),
		Now:          h.Now,
		AutoDisable:  autoDisable,
		Breakers:     h.Breakers,
		Tracer:       h.Tracing.Tracer(),
		Writer:       h.Writer,
	})
	return err
}

// newIngest makes the consumer and the DLQ consumer, for a role that
// ingests, and adds the consumer's checks to ready.
func (h *Hub) newIngest(ready map[string]func(context.Context) error) (err error) {
	cfg := &h.Config
	if !cfg.Role.Ingests() {
		return nil
	}
	kafka := cfg.Kafka
	if h.Broker != nil {
		kafka = config.Defaults(cfg.Mode).Kafka // dev's embedded broker is plaintext
	}
	h.Consumer, err = ingest.New(ingest.Config{
		Ingest:       cfg.Ingest,
		Kafka:        kafka,
		ServedTenant: cfg.Tenancy.Served(),
		// Through the writer: one transaction carries several partitions'
		// records with the results and births of the moment.
		Store:   h.Writer,
		Metrics: h.Metrics,
		Logger:  h.Logger.With("component", "ingest"),
		// The store tells the dispatcher of the jobs ingest creates, and
		// hands it those born leased to it (Store.ListenJobs): the one
		// wake-up source.
		OnEvents: h.Waiters.Notify,
		Tracer:   h.Tracing.Tracer(),
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
	return err
}

// replay is the API's replay of a rejected record: the consumer's, in a
// role that ingests; nil otherwise.
func (h *Hub) replay() func(context.Context, hub.Rejection) (api.ReplayResult, error) {
	if h.Consumer == nil {
		return nil
	}
	return func(ctx context.Context, rej hub.Rejection) (api.ReplayResult, error) {
		out, err := h.Consumer.Replay(ctx, rej)
		return api.ReplayResult(out), err
	}
}

// newBackground makes what every role runs in the background:
// housekeeping and the manifests' refresher; and, in a role that ingests,
// the topic-drift check.
func (h *Hub) newBackground() (err error) {
	cfg := &h.Config
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
	return h.newReconciler()
}

// newServer makes the API with the console mounted on it, and the HTTP
// server that serves them.
func (h *Hub) newServer(ready map[string]func(context.Context) error) error {
	cfg := &h.Config
	srv, err := api.New(api.Deps{
		Store:             h.Store,
		Metrics:           h.Metrics,
		Logger:            h.Logger.With("component", "api"),
		AdminToken:        cfg.AdminToken,
		Version:           hub.Version,
		Ready:             ready,
		Keyring:           h.Keyring,
		Destinations:      h.Destinations,
		AllowPrivateSinks: cfg.AllowPrivateSinks,
		AWS:               api.AWS{HubPrincipalARN: cfg.AWS.HubPrincipalARN, SetupTemplateURL: cfg.AWS.SetupTemplateURL, SQSEndpoint: h.sqsEndpoint},
		OnJobs:            h.wakeDispatcher,
		OnVerified:        h.verified,
		BreakerState:      h.breakerState,
		DestinationLimit:  h.destinationLimit,
		Now:               h.Now,
		Waiters:           h.Waiters,
		Pull:              cfg.Pull,
		AuthFailureLimit:  cfg.AuthFailureLimit,
		IdempotencyTTL:    cfg.IdempotencyTTL,
		Tracer:            h.Tracing.Tracer(),
		HealthWindow:      cfg.Housekeeping.HealthWindow,
		InboxRetention:    cfg.Housekeeping.InboxRetention,
		Auth:              cfg.Auth,
		ServedTenant:      cfg.Tenancy.Served(),
		NoMetrics:         !cfg.MetricsEnabled,
		Swagger:           cfg.SwaggerEnabled,
		Draining:          h.draining.Load,
		Replay:            h.replay(),
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
		// What one client may hold (docs/api.md): headers, slow starts, idle
		// keep-alives. No write timeout: long polls answer within 30 s.
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       120 * time.Second,
	}
	// Shutdown answers open long polls at once instead of waiting up to
	// their 30 s.
	h.http.RegisterOnShutdown(h.Waiters.Release)
	return nil
}

// run starts every part made: the HTTP server, ingest, dispatch and the
// background loops. Dispatch has a context of its own, which the shutdown
// deadline abandons.
func (h *Hub) run(ctx context.Context) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	dispatchCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	h.abandon = abandon
	// The writer outlives ingest and dispatch (Shutdown closes it after
	// them); the shutdown's deadline abandons it with the dispatcher.
	h.writerDone = make(chan struct{})
	go func() { defer close(h.writerDone); h.Writer.Run(dispatchCtx) }()
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
	if h.Reconciler != nil {
		h.goRun("reconciler", func() error { h.Reconciler.Run(runCtx); return nil })
	}
	h.goRun("secrets gauge", func() error { h.recountSealed(runCtx); return nil })
}

// announce logs the start (and the auth warnings) and, in dev mode, prints
// the banner.
func (h *Hub) announce(secrets devSecretsFile) {
	cfg := &h.Config
	h.Logger.Info("streaming-hub started", "mode", cfg.Mode, "role", cfg.Role, "http", h.HTTPAddr(), "version", hub.Version)
	if w := cfg.AuthWarning(); w != "" {
		h.Logger.Warn(w)
	}
	if n := cfg.AuthVerifyNotice(); n != "" {
		h.Logger.Warn(n)
	}
	if cfg.Mode == config.Dev && h.Out != nil {
		printDevBanner(h.Out, h, secrets)
	}
}
