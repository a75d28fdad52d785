package api_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// hubAPI is a real HTTP server over a real store, with a fake clock and a
// captured log.
type hubAPI struct {
	t     *testing.T
	url   string
	store store.Store
	clock *testkit.Clock
	logs  *testkit.Buffer
	admin client
	// waiters are the server's long polls; Release them to act as a
	// shutting-down server.
	waiters *api.Waiters
	// handler is the server's, for requests from another client address
	// (RemoteAddr) than the test's own.
	handler http.Handler
}

type apiOptions struct {
	allowPrivate bool
	probeTimeout time.Duration
	resolver     destination.Resolver
	pull         *config.Pull // nil: the default bucket
	authLimit    int          // failed authentications per minute; 0: too many to matter
	// waiters are the long polls' wake-ups (nil: the server's own).
	waiters *api.Waiters
	// pullRecheck, when set, replaces the 1 s between a long poll's looks.
	pullRecheck time.Duration
	// wrap, when set, stands between the server and the store.
	wrap func(store.Store) store.Store
	// drivers send to broker destinations (nil: none).
	drivers map[string]destination.Driver
	// auth is the access manager's configuration (TRUSTED_PROXIES too);
	// off by default.
	auth config.Auth
	// swagger serves the API reference at /swagger.
	swagger bool
	// aws is the setup link's settings and the operator's SQS endpoint.
	aws api.AWS
	// served makes the hub single-tenant, serving that tenant.
	served string
}

func newHubAPI(t *testing.T, d testkit.Driver, o apiOptions) *hubAPI {
	t.Helper()
	clock := testkit.NewClock()
	s := d.Open(t, store.Options{Now: clock.Now})
	keyring, err := envelope.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if o.probeTimeout == 0 {
		o.probeTimeout = testkit.Patience // no answer has to beat a clock
	}
	logs := &testkit.Buffer{}
	defaults := config.Defaults(config.Serve)
	if o.pull == nil {
		o.pull = &defaults.Pull
	}
	drivers := map[string]destination.Driver{hub.DestinationWebhook: webhook.New(
		destination.NewDialer(destination.DialOptions{AllowPrivate: o.allowPrivate, Resolver: o.resolver}))}
	for typ, d := range o.drivers {
		drivers[typ] = d
	}
	waiters := o.waiters
	if waiters == nil {
		waiters = api.NewWaiters()
	}
	served := s
	if o.wrap != nil {
		served = o.wrap(s)
	}
	server, err := api.New(api.Deps{
		Waiters:           waiters,
		Store:             served,
		Metrics:           metrics.New(),
		Logger:            slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AdminToken:        adminToken,
		Keyring:           keyring,
		Destinations:      destination.NewRegistry(o.probeTimeout, drivers),
		AllowPrivateSinks: o.allowPrivate,
		Now:               clock.Now,
		Pull:              *o.pull,
		AuthFailureLimit:  cmp.Or(o.authLimit, 1<<30),
		HealthWindow:      defaults.Housekeeping.HealthWindow,
		Auth:              o.auth,
		Swagger:           o.swagger,
		AWS:               o.aws,
		ServedTenant:      o.served,
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.pullRecheck > 0 {
		api.SetPullRecheck(server, o.pullRecheck)
	}
	handler := server.Handler()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &hubAPI{t: t, url: srv.URL, store: s, clock: clock, logs: logs, admin: client{t, srv.URL, adminToken}, waiters: waiters, handler: handler}
}

// tenant creates a tenant and one API key for it; the client acts as it.
func (h *hubAPI) tenant(id string) client {
	h.t.Helper()
	h.admin.json("POST", "/v1/tenants", `{"id":"`+id+`","name":"`+id+`"}`, 201, nil)
	var k struct{ ID, Key string }
	h.admin.json("POST", "/v1/tenants/"+id+"/keys", "", 201, &k)
	return client{h.t, h.url, k.Key}
}

// subscription creates a subscription to url and returns its id and secret.
func (c client) subscription(url string) (id, secret string) {
	c.t.Helper()
	var s struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	c.json("POST", "/v1/subscriptions", `{"name":"hooks","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+url+`"}}`, 201, &s)
	return s.ID, s.SigningSecret
}

// receiver is a destination that echoes probe challenges (or answers as
// told) and records what it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	answer func(w http.ResponseWriter, challenge string)
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{answer: func(w http.ResponseWriter, c string) { w.Write([]byte(c)) }}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		var p struct{ Challenge string }
		json.Unmarshal(buf.Bytes(), &p)
		rc.mu.Lock()
		rc.got = append(rc.got, r)
		rc.bodies = append(rc.bodies, buf.Bytes())
		answer := rc.answer
		rc.mu.Unlock()
		if answer == nil { // never answer, until the client gives up
			<-r.Context().Done()
			return
		}
		answer(w, p.Challenge)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) last() (*http.Request, []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) == 0 {
		return nil, nil
	}
	return rc.got[len(rc.got)-1], rc.bodies[len(rc.bodies)-1]
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func (rc *receiver) setAnswer(fn func(w http.ResponseWriter, challenge string)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = fn
}

func listAll(tenant string) store.ListSubscriptionsParams {
	return store.ListSubscriptionsParams{TenantID: tenant, Limit: 1000}
}
