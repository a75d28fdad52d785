package console_test

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/console"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const adminToken = "console-test-admin-token"

// hub is an API and its console over a real store, on a fake clock.
type hub struct {
	t     *testing.T
	url   string
	store store.Store
	clock *testkit.Clock
	logs  *testkit.Buffer
}

type options struct {
	authLimit      int
	frameAncestors string
	// adminToken is the hub's admin token; "" is adminToken.
	adminToken string
	// sessionMaxAge is the sessions' absolute lifetime; 0 is the default.
	sessionMaxAge time.Duration
	// auth is Lerian's access manager (docs/lerian-platform.md); off by default.
	auth config.Auth
	// servedTenant makes the hub single-tenant, serving it.
	servedTenant string
	// replay reads a rejected record again (ingest.Consumer.Replay); nil:
	// a process that reads no Kafka.
	replay func(context.Context, hubpkg.Rejection) (api.ReplayResult, error)
	// breakerState is the API's breaker for a destination; nil: closed.
	breakerState func(tenantID, url string) string
	// destinationLimit is the dispatcher's limit for a receiver host; nil:
	// a process that does not deliver.
	destinationLimit func(address string) (api.DestinationLimit, bool)
}

func newHub(t *testing.T, d testkit.Driver, o options) *hub {
	t.Helper()
	clock := testkit.NewClock()
	s := d.Open(t, store.Options{Now: clock.Now})
	return serve(t, s, clock, o)
}

// serve starts an API and console over s: twice over one store is a
// restart (or a second replica).
func serve(t *testing.T, s store.Store, clock *testkit.Clock, o options) *hub {
	t.Helper()
	keyring, err := envelope.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	probes := destination.NewRegistry(testkit.Patience, map[string]destination.Driver{
		hubpkg.DestinationWebhook: webhook.New(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))})
	defaults := config.Defaults(config.Serve)
	if o.authLimit == 0 {
		o.authLimit = 1 << 30
	}
	logs := &testkit.Buffer{}
	m := metrics.New()
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	srv, err := api.New(api.Deps{
		Store: s, Metrics: m, Logger: logger, AdminToken: cmp.Or(o.adminToken, adminToken), Keyring: keyring,
		Destinations: probes, AllowPrivateSinks: true, Now: clock.Now, Pull: defaults.Pull,
		AuthFailureLimit: o.authLimit, HealthWindow: defaults.Housekeeping.HealthWindow, Auth: o.auth,
		ServedTenant: o.servedTenant, Replay: o.replay, BreakerState: o.breakerState,
		DestinationLimit: o.destinationLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.New(console.Deps{API: srv, Store: s, Metrics: m, Logger: logger, Now: clock.Now, FrameAncestors: o.frameAncestors,
		SessionMaxAge: o.sessionMaxAge})
	if err != nil {
		t.Fatal(err)
	}
	srv.Mount(console.Prefix, con.Handler())
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &hub{t: t, url: hs.URL, store: s, clock: clock, logs: logs}
}

// browser is a client with cookies that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (h *hub) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: h.t, base: h.url, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(body)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	return b.do(req)
}

// post sends a form as a same-origin browser would (Origin and
// Sec-Fetch-Site of the console's own site).
func (b *browser) post(path string, form url.Values, headers ...string) page {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token in a page's forms.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s: %d, no CSRF token in\n%s", path, p.status, p.body)
	}
	return m[1]
}

// submit posts a form of a page with that page's CSRF token.
func (b *browser) submit(from, action string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf(from))
	return b.post(action, form)
}

// signIn signs in with token and wants the overview.
func (h *hub) signIn(token string) *browser {
	h.t.Helper()
	b := h.browser()
	p := b.submit("/console/signin", "/console/signin", url.Values{"token": {token}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		h.t.Fatalf("sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	return b
}

// openPortal opens a portal link as a person does: its page, then the
// page's Continue button. It returns the POST's answer.
func (b *browser) openPortal(link string) page {
	b.t.Helper()
	return b.submit(link, link, nil)
}

// apiCall calls the API with the admin token.
func (h *hub) apiCall(method, path, body, tenant string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if tenant != "" {
		req.Header.Set("X-Tenant-Id", tenant)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var fieldRE = func(name string) *regexp.Regexp { return regexp.MustCompile(`"` + name + `":"([^"]*)"`) }

// field is a string field of a JSON answer.
func field(body, name string) string {
	m := fieldRE(name).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// tenant creates a tenant and a key; it returns the key.
func (h *hub) tenant(id string) string {
	h.t.Helper()
	if st, b := h.apiCall("POST", "/v1/tenants", `{"id":"`+id+`"}`, ""); st != 201 {
		h.t.Fatalf("create tenant: %d %s", st, b)
	}
	st, b := h.apiCall("POST", "/v1/tenants/"+id+"/keys", "", "")
	if st != 201 {
		h.t.Fatalf("create key: %d %s", st, b)
	}
	return field(b, "key")
}

// receiver answers probes with their challenge and everything else with
// body.
func receiver(t *testing.T, body string) *httptest.Server {
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		if m := regexp.MustCompile(`"challenge":"([^"]+)"`).FindStringSubmatch(buf.String()); m != nil {
			w.Write([]byte(m[1]))
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// subscription creates and verifies a subscription of tenant to url.
func (h *hub) subscription(tenant, name, target string) string {
	h.t.Helper()
	st, b := h.apiCall("POST", "/v1/subscriptions", `{"name":"`+name+`","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+target+`"}}`, tenant)
	if st != 201 {
		h.t.Fatalf("create subscription: %d %s", st, b)
	}
	id := field(b, "id")
	if st, b := h.apiCall("POST", "/v1/subscriptions/"+id+"/verify", "", tenant); st != 200 {
		h.t.Fatalf("verify: %d %s", st, b)
	}
	return id
}
