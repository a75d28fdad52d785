package console_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func mintJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// docs/lerian-platform.md: the console's sign-in takes a JWT that the access
// manager authorizes; its session ends at the token's exp at the latest.
func TestSignIn_AccessManagerJWTEndsAtExp(t *testing.T) {
	testkit.Long(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var mu sync.Mutex
		var asked []map[string]any
		authorized := true
		am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &body)
			mu.Lock()
			asked = append(asked, body)
			ok := authorized
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]bool{"authorized": ok})
		}))
		t.Cleanup(am.Close)
		h := newHub(t, d, options{auth: config.Auth{Enabled: true, Address: am.URL, Timeout: testkit.Scaled(5 * time.Second),
			Keys: []*rsa.PublicKey{&key.PublicKey}}})
		h.tenant("acme")
		exp := h.clock.Now().Add(90 * time.Minute)
		claims := func(extra map[string]any) map[string]any {
			c := map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice", "exp": exp.Unix()}
			for k, v := range extra {
				c[k] = v
			}
			return c
		}

		// An operator token: signed in, asked tenants/get once.
		b := h.signIn(mintJWT(t, key, claims(nil)))
		mu.Lock()
		if len(asked) != 1 || asked[0]["sub"] != "lerian/alice" || asked[0]["resource"] != "tenants" || asked[0]["action"] != "get" {
			t.Fatalf("asked %v", asked)
		}
		asked = nil
		mu.Unlock()
		if got := b.get("/console/"); got.status != 200 {
			t.Fatalf("operator session: %d", got.status)
		}
		// Each page is asked again (session_access_test.go): not counted here.
		mu.Lock()
		asked = nil
		mu.Unlock()
		// A tenant token: subscriptions/get, a session on that tenant.
		tb := h.signIn(mintJWT(t, key, claims(map[string]any{"tenantId": "acme"})))
		mu.Lock()
		if len(asked) != 1 || asked[0]["resource"] != "subscriptions" {
			t.Fatalf("tenant asked %v", asked)
		}
		mu.Unlock()
		if got := tb.get("/console/"); got.status != 200 {
			t.Fatalf("tenant session: %d", got.status)
		}
		// The session ends at exp, used or not (the 12 h maximum is later).
		h.clock.Advance(89 * time.Minute)
		if got := b.get("/console/"); got.status != 200 {
			t.Fatalf("a minute before exp: %d", got.status)
		}
		h.clock.Advance(time.Minute)
		for name, br := range map[string]*browser{"operator": b, "tenant": tb} {
			if got := br.get("/console/"); got.status != 303 || got.header.Get("Location") != "/console/signin" {
				t.Errorf("%s session at exp: %d %s", name, got.status, got.header.Get("Location"))
			}
		}

		// Refusals: expired 401, not authorized 403, unknown tenant 403.
		exp = h.clock.Now().Add(time.Hour)
		for name, tc := range map[string]struct {
			token  string
			allow  bool
			status int
		}{
			"expired":        {mintJWT(t, key, claims(map[string]any{"exp": h.clock.Now().Add(-time.Second).Unix()})), true, 401},
			"not authorized": {mintJWT(t, key, claims(nil)), false, 403},
			"unknown tenant": {mintJWT(t, key, claims(map[string]any{"tenantId": "nobody"})), true, 403},
		} {
			mu.Lock()
			authorized = tc.allow
			mu.Unlock()
			br := h.browser()
			if p := br.submit("/console/signin", "/console/signin", url.Values{"token": {tc.token}}); p.status != tc.status {
				t.Errorf("%s: sign-in %d, want %d", name, p.status, tc.status)
			}
		}
	})
}
