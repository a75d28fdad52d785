// Package console is the hub's web console (docs/console.md): server-rendered
// HTML for operators and tenants, served at /console/ by every role that
// serves the API. It is a client of the API inside the process: every read
// and write goes through the API's own routes, validation and authorization
// (api.Server.Call), so the console has no second copy of the rules. Only its
// sessions and portal links are its own (store.Console).
package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Store is all the console reads and writes itself: its sessions and
// portal links, and the key or tenant a session stands for. What its pages
// show comes from the API.
type Store interface {
	store.Console
	GetAPIKey(ctx context.Context, id string) (hub.APIKey, error)
	GetTenant(ctx context.Context, id string) (hub.Tenant, error)
	ListTenants(ctx context.Context, p store.ListTenantsParams) ([]hub.Tenant, error)
}

// Deps are what the console serves from.
type Deps struct {
	API     *api.Server
	Store   Store
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// FrameAncestors is the CSP frame-ancestors source list
	// (STREAMING_HUB_CONSOLE_FRAME_ANCESTORS); "" means 'none'.
	FrameAncestors string
	// IdleTimeout ends a session unused this long; 0 means 12 h.
	IdleTimeout time.Duration
	// SessionMaxAge ends a session this long after it started, however
	// often it is used (STREAMING_HUB_CONSOLE_SESSION_MAX_AGE); 0 means
	// 12 h.
	SessionMaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Console serves the pages.
type Console struct {
	deps  Deps
	mux   *http.ServeMux
	pages map[string]*template.Template
	rates *rates
	// patterns are those of the pages and forms that need a session.
	patterns []string
}

// New builds the console; mount its Handler at Prefix.
func New(d Deps) (*Console, error) {
	ch := config.Check{Of: "console.Deps"}
	ch.Require("API", d.API != nil)
	ch.Require("Store", d.Store != nil)
	ch.Require("Metrics", d.Metrics != nil)
	if err := ch.Err(); err != nil {
		return nil, err
	}
	if d.FrameAncestors == "" {
		d.FrameAncestors = config.Defaults(config.Serve).Console.FrameAncestors
	}
	if err := config.CheckFrameAncestors(d.FrameAncestors); err != nil {
		return nil, err
	}
	if d.IdleTimeout <= 0 {
		d.IdleTimeout = config.Defaults(config.Serve).Console.IdleTimeout
	}
	if d.SessionMaxAge <= 0 {
		d.SessionMaxAge = config.Defaults(config.Serve).Console.SessionMaxAge
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{deps: d, mux: http.NewServeMux(), rates: newRates()}
	pages, err := parsePages(c.now)
	if err != nil {
		return nil, err
	}
	c.pages = pages
	c.sampleRates()
	c.routes()
	return c, nil
}

func (c *Console) now() time.Time {
	if c.deps.Now != nil {
		return c.deps.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (c *Console) routes() {
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /console/signin", c.signInPage)
	c.mux.HandleFunc("POST /console/signin", c.signIn)
	c.mux.HandleFunc("GET /console/portal/{token}", c.portalPage)
	c.mux.HandleFunc("POST /console/portal/{token}", c.openPortal)

	c.page("GET /console/{$}", c.overview)
	c.action(signOutPattern, c.signOut)
	c.action("POST /console/tenant", c.actAs)

	c.page("GET /console/subscriptions", c.subscriptions)
	c.page("GET /console/subscriptions/new", c.newSubscription)
	c.action("POST /console/subscriptions", c.createSubscription)
	c.page("GET /console/subscriptions/{id}", c.subscription)
	c.page("GET /console/subscriptions/{id}/edit", c.editSubscription)
	c.action("POST /console/subscriptions/{id}", c.updateSubscription)
	c.action("POST /console/subscriptions/{id}/{op}", c.subscriptionAction)

	c.page("GET /console/deliveries", c.deliveries)
	c.page("GET /console/deliveries/{id}", c.delivery)
	c.action("POST /console/deliveries/{id}/replay", c.replayDelivery)

	c.page("GET /console/events", c.events)
	c.page("GET /console/events/{id}", c.event)
	c.page("GET /console/event-types", c.eventTypes)

	c.page("GET /console/tenants", c.tenants)
	c.action("POST /console/tenants", c.createTenant)
	c.page("GET /console/tenants/{id}", c.tenant)
	c.action("POST /console/tenants/{id}/{op}", c.tenantAction)
	c.page("GET /console/rejections", c.rejections)
	c.action("POST /console/rejections/{id}/replay", c.replayRejection)
	c.page("GET /console/dlq", c.dlq)
	c.page("GET /console/manifests", c.manifests)
}

const signOutPattern = "POST /console/signout"

// Handler serves the console with its security headers on every answer.
func (c *Console) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors "+c.deps.FrameAncestors+"; form-action 'self'; base-uri 'none'")
		if c.deps.FrameAncestors == "'none'" {
			h.Set("X-Frame-Options", "DENY")
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusFound)
			return
		}
		if _, pattern := c.mux.Handler(r); pattern == "" {
			c.renderError(w, r, nil, http.StatusNotFound, "No such page.")
			return
		}
		if r.Method == http.MethodPost {
			if msg := badFormText(w, r); msg != "" {
				c.renderError(w, r, nil, http.StatusBadRequest, msg)
				return
			}
		}
		c.mux.ServeHTTP(w, r)
	})
}
