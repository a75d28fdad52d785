package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The subscription form offers OAuth 2.0 client credentials beside the
// other auth types (its fields shown only when chosen) and the v1a
// signature scheme: what it sends is stored, the client secret never
// shown again, and the created page shows the public key instead of a
// secret.
func TestForms_OAuth2AuthAndV1aSignature(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		tenant := h.signIn(h.tenant("acme"))
		form := tenant.get("/console/subscriptions/new")
		for _, want := range []string{`value="oauth2_client_credentials"`, `class="auth auth-oauth2_client_credentials"`, `name="oauth_token_url"`, `name="signature_scheme"`} {
			if !strings.Contains(form.body, want) {
				t.Fatalf("the form has no %s", want)
			}
		}
		got := tenant.submit("/console/subscriptions/new", "/console/subscriptions", url.Values{
			"name": {"hooks"}, "url": {"https://example.com/hook"}, "event_type": {"transaction.posted"},
			"auth_type": {"oauth2_client_credentials"}, "oauth_token_url": {"https://auth.example.com/token"},
			"oauth_client_id": {"hub"}, "oauth_client_secret": {"form-SECRET-9"}, "oauth_scope": {"events:write"},
			"oauth_client_auth": {"body"}, "signature_scheme": {"v1a"},
		})
		if got.status != http.StatusCreated || !strings.Contains(got.body, "whpk_") || strings.Contains(got.body, "whsec_") {
			t.Fatalf("create: %d\n%s", got.status, got.body)
		}
		st, body := h.apiCall("GET", "/v1/subscriptions", "", "acme")
		var list struct {
			Data []struct {
				ID          string `json:"id"`
				Destination struct {
					Auth map[string]string `json:"auth"`
				} `json:"destination"`
				Signature struct{ Scheme string } `json:"signature"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &list); st != 200 || err != nil || len(list.Data) != 1 {
			t.Fatalf("%d %s", st, body)
		}
		s := list.Data[0]
		if a := s.Destination.Auth; a["type"] != "oauth2_client_credentials" || a["token_url"] != "https://auth.example.com/token" ||
			a["client_id"] != "hub" || a["scope"] != "events:write" || a["client_auth"] != "body" || s.Signature.Scheme != "v1a" {
			t.Fatalf("stored %+v", s)
		}
		for _, path := range []string{"/console/subscriptions/" + s.ID, "/console/subscriptions/" + s.ID + "/edit"} {
			p := tenant.get(path)
			if p.status != 200 || strings.Contains(p.body, "form-SECRET-9") || !strings.Contains(p.body, "https://auth.example.com/token") {
				t.Fatalf("%s: %d\n%s", path, p.status, p.body)
			}
		}
		// A missing client secret is the API's 400, shown on the form.
		got = tenant.submit("/console/subscriptions/new", "/console/subscriptions", url.Values{
			"name": {"hooks2"}, "url": {"https://example.com/hook"}, "event_type": {"transaction.posted"},
			"auth_type": {"oauth2_client_credentials"}, "oauth_token_url": {"https://auth.example.com/token"}, "oauth_client_id": {"hub"},
		})
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, "destination.auth.client_secret: required") {
			t.Fatalf("no client secret: %d\n%s", got.status, got.body)
		}
	})
}
