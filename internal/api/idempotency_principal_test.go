package api_test

import (
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// keyed sends a POST with Idempotency-Key key as token; it answers the
// status, whether it was a replay, and the body.
func (h *hubAPI) keyed(token, key, path, body string, headers ...string) (int, bool, string) {
	h.t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.RemoteAddr = "198.51.100.10:1"
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Idempotent-Replayed") == "true", rec.Body.String()
}

// A stored answer is replayed only to the principal that made it: the
// admin token, one API key, one JWT subject within its tenant. Another
// principal sending the same Idempotency-Key has its own request done
// (docs/lerian-platform.md#api-idempotency).
func TestIdempotency_AnswersBelongToOnePrincipal(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		am := newAccessManager(t)
		good, _ := testKeys(t)
		h := newHubAPI(t, d, apiOptions{allowPrivate: true, auth: config.Auth{Enabled: true, Address: am.srv.URL,
			Timeout: testkit.Scaled(2 * time.Second), Keys: []*rsa.PublicKey{&good.PublicKey}}})
		exp := h.clock.Now().Add(time.Hour).Unix()
		user := func(sub, tenant string) string {
			c := map[string]any{"type": "normal-user", "owner": "lerian", "sub": sub, "exp": exp}
			if tenant != "" {
				c["tenantId"] = tenant
			}
			return mint(t, good, "RS256", c)
		}
		acmeA := h.tenant("acme").token
		var k struct{ Key string }
		h.admin.json("POST", "/v1/tenants/acme/keys", "", 201, &k)
		acmeB := k.Key

		// Operators: each POST makes its own key, however often the key
		// is sent; the same principal again is a replay.
		const path = "/v1/tenants/acme/keys"
		secrets := map[string]string{}
		for _, c := range []struct{ who, token string }{
			{"admin", adminToken}, {"alice", user("alice", "")}, {"bob", user("bob", "")},
		} {
			status, replayed, body := h.keyed(c.token, "K", path, "")
			if status != 201 || replayed {
				t.Fatalf("%s with the key K: %d replayed %v %s", c.who, status, replayed, body)
			}
			for other, secret := range secrets {
				if strings.Contains(body, secret) {
					t.Fatalf("%s was answered %s's key", c.who, other)
				}
			}
			secrets[c.who] = field(body, "key")
			if status, replayed, body := h.keyed(c.token, "K", path, ""); status != 201 || !replayed || field(body, "key") != secrets[c.who] {
				t.Fatalf("%s again: %d replayed %v (its own answer: %v)", c.who, status, replayed, field(body, "key") == secrets[c.who])
			}
		}

		// Tenants: key A and key B of acme, JWT subjects x and y of acme.
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(rc.Close)
		sub := `{"name":"hooks","event_types":[{"type":"transaction.posted","schema_major":1}],"destination":{"type":"webhook","url":"` + rc.URL + `"}}`
		ids := map[string]string{}
		for _, c := range []struct{ who, token string }{
			{"key A", acmeA}, {"key B", acmeB}, {"subject x", user("x", "acme")}, {"subject y", user("y", "acme")},
		} {
			status, replayed, body := h.keyed(c.token, "T", "/v1/subscriptions", sub)
			if status != 201 || replayed {
				t.Fatalf("%s with the key T: %d replayed %v %s", c.who, status, replayed, body)
			}
			id := field(body, "id")
			for other, seen := range ids {
				if seen == id {
					t.Fatalf("%s was answered %s's subscription", c.who, other)
				}
			}
			ids[c.who] = id
			if _, replayed, body := h.keyed(c.token, "T", "/v1/subscriptions", sub); !replayed || field(body, "id") != id {
				t.Fatalf("%s again: replayed %v, its own answer %v", c.who, replayed, field(body, "id") == id)
			}
		}
	})
}

// field is a string field of a JSON answer ("" when it has none).
func field(body, name string) string {
	var m map[string]any
	json.Unmarshal([]byte(body), &m)
	s, _ := m[name].(string)
	return s
}
