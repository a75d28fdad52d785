package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Deps are what the API serves from.
type Deps struct {
	Store      store.Store
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	AdminToken string
	Version    string
	// Keyring seals and opens subscription secrets (STREAMING_HUB_KEK).
	Keyring *envelope.Keyring
	// Destinations is the one send path: verification probes and test
	// events go through it, as dispatch's attempts do.
	Destinations      *destination.Registry
	AllowPrivateSinks bool
	// AWS is the setup link's settings and the operator's SQS endpoint
	// (docs/aws.md).
	AWS AWS
	// BreakerState reports a (tenant, destination) breaker; nil: closed.
	BreakerState func(tenantID, url string) string
	// DestinationLimit reports this process's adaptive limit for a
	// destination address's receiver host; nil: the process does not
	// deliver.
	DestinationLimit func(address string) (DestinationLimit, bool)
	// OnJobs runs after the API created delivery jobs (replays): the
	// dispatcher's in-process wake-up.
	OnJobs func()
	// OnVerified runs after a verification probe passed: it closes the
	// destination's breaker and makes the waiting jobs due now
	// (docs/breakers.md). nil does nothing.
	OnVerified func(ctx context.Context, sub hub.Subscription) error
	// Waiters wake long-polling pulls when ingest stores a tenant's events,
	// and Release answers them all when the server shuts down; nil makes
	// the server its own (woken by no one: pulls re-check every second).
	Waiters *Waiters
	// Pull is the per-tenant token bucket of GET /v1/events.
	Pull config.Pull
	// HealthWindow is the longest health window (STREAMING_HUB_HEALTH_WINDOW).
	HealthWindow time.Duration
	// AuthFailureLimit is how many failed authentications a client address
	// or a key id may make in a minute before it is answered 429.
	AuthFailureLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Ready are the readiness checks by name (store, kafka, ...): /readyz
	// answers 200 only when every one passes.
	Ready map[string]func(context.Context) error
	// Tracer records a SERVER span per request; nil records none.
	Tracer trace.Tracer
	// InboxRetention is how long events are kept
	// (STREAMING_HUB_INBOX_RETENTION): how far back a backfill reaches;
	// 0: the default.
	InboxRetention time.Duration
	// IdempotencyTTL is how long a POST's answer is kept for its
	// Idempotency-Key (STREAMING_HUB_IDEMPOTENCY_TTL); 0: the default.
	IdempotencyTTL time.Duration
	// Auth is Lerian's access manager (docs/lerian-platform.md); AuthClient,
	// when set, is the client that calls it (tests).
	Auth       config.Auth
	AuthClient *http.Client
	// ServedTenant, when set, is the one tenant a single-tenant hub serves
	// (config.Tenancy.Served): an operator's request on a tenant endpoint
	// without X-Tenant-Id acts on it.
	ServedTenant string
	// NoMetrics serves no /metrics route (STREAMING_HUB_METRICS_ENABLED=false).
	NoMetrics bool
	// Swagger serves the API reference at /swagger, behind the API's
	// authentication (STREAMING_HUB_SWAGGER_ENABLED).
	Swagger bool
	// Replay reads a rejected record again at its source and ingests it
	// (ingest.Consumer.Replay); nil in a process that reads no Kafka,
	// where POST /v1/admin/rejections/{id}/replay answers 503.
	Replay func(ctx context.Context, rej hub.Rejection) (ReplayResult, error)
	// Draining, when set and true, makes /readyz answer 503 with the check
	// "shutdown" (STREAMING_HUB_PRE_STOP_DRAIN_TIMEOUT): the process keeps
	// serving while load balancers stop sending it work.
	Draining func() bool
}

// Server routes requests to handlers.
type Server struct {
	deps     Deps
	mux      *http.ServeMux
	routes   []route
	waiters  *Waiters
	limiter  *limiter
	throttle *throttle // failed authentications
	// pullRecheck is how long a long poll waits before looking again
	// without a wake-up; tests lengthen it to prove the wake-up answers.
	pullRecheck time.Duration
	keyUses     keyUses        // when each key's last use was written
	mounts      []mount        // other handlers under a path prefix (the console)
	access      *accessManager // nil unless PLUGIN_AUTH_ENABLED
}

// route is one registered endpoint; the list is what the OpenAPI test
// compares against the document.
type route struct {
	Method, Path string
}

// New builds the server and registers every route.
func New(deps Deps) (*Server, error) {
	ch := config.Check{Of: "api.Deps"}
	ch.Require("Metrics", deps.Metrics != nil)
	config.Positive(&ch, "Pull.Rate", deps.Pull.Rate)
	config.Positive(&ch, "Pull.Burst", deps.Pull.Burst)
	config.Positive(&ch, "AuthFailureLimit", deps.AuthFailureLimit)
	config.Positive(&ch, "HealthWindow", deps.HealthWindow)
	if err := ch.Err(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Waiters == nil {
		deps.Waiters = NewWaiters()
	}
	s := &Server{deps: deps, mux: http.NewServeMux(), waiters: deps.Waiters, pullRecheck: pullRecheck}
	s.limiter = newLimiter(deps.Pull.Rate, deps.Pull.Burst, s.now)
	s.throttle = newThrottle(deps.AuthFailureLimit, s.now)
	if deps.Auth.Enabled {
		if deps.Auth.Address == "" {
			return nil, hub.Errorf(hub.EINVALID, "api.Deps: Auth.Address: required with Auth.Enabled")
		}
		if deps.Auth.Timeout <= 0 {
			deps.Auth.Timeout = config.Defaults(config.Serve).Auth.Timeout
		}
		s.access = newAccessManager(deps.Auth, deps.AuthClient)
	}
	s.plain("GET", "/healthz", http.HandlerFunc(s.healthz))
	s.plain("GET", "/readyz", http.HandlerFunc(s.readyz))
	if !deps.NoMetrics {
		s.plain("GET", "/metrics", deps.Metrics.Handler())
	}
	s.handle("GET", "/v1/openapi.json", s.openAPI)
	if deps.Swagger {
		s.Mount(swaggerPrefix, s.swagger())
	}
	s.handle("GET", "/v1/admin/rejections", s.listRejections)
	s.handle("POST", "/v1/admin/rejections/{id}/replay", s.replayRejection)
	s.handle("GET", "/v1/admin/dlq", s.listDLQ)

	s.handle("POST", "/v1/tenants", s.createTenant)
	s.handle("GET", "/v1/tenants", s.listTenants)
	s.handle("GET", "/v1/tenants/{id}", s.getTenant)
	s.handle("PATCH", "/v1/tenants/{id}", s.updateTenant)
	s.handle("POST", "/v1/tenants/{id}/keys", s.createKey)
	s.handle("DELETE", "/v1/tenants/{id}/keys/{key_id}", s.deleteKey)
	s.handle("POST", "/v1/tenants/{id}/portal-links", s.createPortalLink)
	s.handle("GET", "/v1/tenants/{id}/portal-links", s.listPortalLinks)
	s.handle("DELETE", "/v1/tenants/{id}/portal-links/{link_id}", s.revokePortalLink)

	s.handle("POST", "/v1/subscriptions", s.createSubscription)
	s.handle("GET", "/v1/subscriptions", s.listSubscriptions)
	s.handle("GET", "/v1/subscriptions/{id}", s.getSubscription)
	s.handle("PATCH", "/v1/subscriptions/{id}", s.updateSubscription)
	s.handle("DELETE", "/v1/subscriptions/{id}", s.deleteSubscription)
	s.handle("POST", "/v1/subscriptions/{id}/verify", s.verifySubscription)
	s.handle("POST", "/v1/subscriptions/{id}/rotate-secret", s.rotateSecret)
	s.handle("GET", "/v1/subscriptions/{id}/deliveries", s.listDeliveries)
	s.handle("POST", "/v1/subscriptions/{id}/replay", s.replaySubscription)
	s.handle("GET", "/v1/deliveries/{id}", s.getDelivery)
	s.handle("GET", "/v1/events", s.listEvents)
	s.handle("POST", "/v1/deliveries/{id}/replay", s.replayDelivery)

	// Insight
	// (docs/insight.md).
	s.handle("GET", "/v1/subscriptions/{id}/health", s.subscriptionHealth)
	s.handle("POST", "/v1/subscriptions/{id}/test", s.testSubscription)
	s.handle("POST", "/v1/subscriptions/{id}/transform-preview", s.transformPreview) // docs/filters-and-transforms.md
	s.handle("GET", "/v1/aws/setup", s.awsSetup)                                     // docs/aws.md
	s.handle("GET", "/v1/event-types", s.listEventTypes)
	s.handle("GET", "/v1/events/{id}", s.getEvent)
	s.handle("GET", "/v1/deliveries", s.searchDeliveries)
	s.handle("GET", "/v1/tenants/{id}/keys", s.listKeys)
	s.handle("GET", "/v1/admin/manifests", s.listManifests)
	s.handle("GET", "/v1/admin/health", s.hubHealth)
	s.handle("GET", "/v1/admin/lookup", s.lookup) // docs/console.md
	s.handle("GET", "/v1/admin/disabled-subscriptions", s.listDisabledSubscriptions)
	return s, nil
}

func (s *Server) now() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// Handler returns the server with its middleware.
func (s *Server) Handler() http.Handler {
	var h http.Handler = http.HandlerFunc(s.route)
	if s.deps.Tracer != nil {
		h = withTracing(s.deps.Tracer, h)
	}
	return withRequestLog(s.deps.Logger, h)
}

// plain registers a handler that writes its own answer.
func (s *Server) plain(method, path string, h http.Handler) {
	s.routes = append(s.routes, route{method, path})
	s.mux.Handle(method+" "+path, h)
}

// handle registers a handler that returns an error.
func (s *Server) handle(method, path string, fn func(http.ResponseWriter, *http.Request) error) {
	s.routes = append(s.routes, route{method, path})
	if method == http.MethodPost {
		fn = s.idempotent(fn) // Idempotency-Key (docs/lerian-platform.md)
	}
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			writeError(w, r, s.deps.Logger, err)
		}
	})
}
