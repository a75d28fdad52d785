package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// claimWatch records which tenants the API looked up and which
// idempotency keys it claimed.
type claimWatch struct {
	store.Store
	mu      sync.Mutex
	tenants []string
	claims  []string
}

func (w *claimWatch) GetTenant(ctx context.Context, id string) (hub.Tenant, error) {
	w.mu.Lock()
	w.tenants = append(w.tenants, id)
	w.mu.Unlock()
	return w.Store.GetTenant(ctx, id)
}

func (w *claimWatch) ClaimIdempotencyKey(ctx context.Context, c store.IdempotencyClaim) (store.IdempotencyRecord, bool, error) {
	w.mu.Lock()
	w.claims = append(w.claims, c.Principal)
	w.mu.Unlock()
	return w.Store.ClaimIdempotencyKey(ctx, c)
}

func (w *claimWatch) reset() ([]string, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, c := w.tenants, w.claims
	w.tenants, w.claims = nil, nil
	return t, c
}

// unsigned is a JWT with alg "none" and no signature.
func unsigned(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// Without a verify certificate a JWT's claims are anybody's to write: the
// hub uses them (tenantId, sub) only for a request the access manager
// authorized with that very token. An access manager that refuses
// unsigned tokens leaves nothing of one used: no tenant looked up or
// scoped, nothing created, no idempotency key claimed, no identity logged
// (docs/lerian-platform.md#lerians-access-manager).
func TestAccessManager_UnsignedTokensClaimsAreNeverUsed(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		am := newAccessManager(t)
		// The access manager checks signatures: alg none is refused.
		am.set(func(w http.ResponseWriter, r *http.Request) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
			ok := !strings.Contains(string(hdr), `"none"`)
			json.NewEncoder(w).Encode(map[string]bool{"authorized": ok})
		})
		var watch *claimWatch
		h := newHubAPI(t, d, apiOptions{allowPrivate: true,
			auth: config.Auth{Enabled: true, Address: am.srv.URL, Timeout: testkit.Scaled(2 * time.Second)},
			wrap: func(s store.Store) store.Store { watch = &claimWatch{Store: s}; return watch }})
		h.tenant("victim")
		logStart := len(h.logs.String())
		watch.reset()
		exp := h.clock.Now().Add(time.Hour).Unix()

		sub := `{"name":"stolen","event_types":[{"type":"transaction.posted","schema_major":1}],"destination":{"type":"webhook","url":"https://sink.example/x"}}`
		for name, c := range map[string]struct {
			claims      map[string]any
			path, body  string
			unscopedGet string
		}{
			"tenant token": {map[string]any{"type": "normal-user", "owner": "evilcorp", "sub": "mallory", "tenantId": "victim", "exp": exp},
				"/v1/subscriptions", sub, "/v1/subscriptions"},
			"operator token": {map[string]any{"type": "normal-user", "owner": "evilcorp", "sub": "mallory", "exp": exp},
				"/v1/tenants", `{"id":"newco"}`, "/v1/tenants"},
		} {
			tok := unsigned(c.claims)
			status, _, body := h.keyed(tok, "I", c.path, c.body)
			if status != 403 {
				t.Fatalf("%s: POST %s = %d %s, want 403", name, c.path, status, body)
			}
			if got := h.fromVia("198.51.100.10", "", tok); got != 403 {
				t.Fatalf("%s: GET = %d, want 403", name, got)
			}
			tenants, claims := watch.reset()
			if len(tenants) != 0 || len(claims) != 0 {
				t.Errorf("%s: the unsigned token's claims were used: tenants looked up %v, idempotency keys claimed %v", name, tenants, claims)
			}
		}
		if st, _, _ := h.admin.do("GET", "/v1/tenants/newco", ""); st != 404 {
			t.Errorf("the unsigned operator token made a tenant: %d", st)
		}
		list, err := h.store.ListSubscriptions(context.Background(), store.ListSubscriptionsParams{TenantID: "victim", Limit: 10})
		if err != nil || len(list) != 0 {
			t.Errorf("victim's subscriptions: %d, %v", len(list), err)
		}
		logged := h.logs.String()[logStart:]
		for _, who := range []string{"mallory", "evilcorp", "victim"} {
			if strings.Contains(logged, who) {
				t.Errorf("the log names %q from the unsigned token:\n%s", who, logged)
			}
		}
		if got := len(am.calls()); got != 4 {
			t.Errorf("the access manager was asked %d times, want 4 (every request is its to decide)", got)
		}
	})
}
