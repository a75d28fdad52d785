package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const oauthSecret = "client-SECRET-oauth-321"

// oauthSub is a create body of a webhook to url authenticating with a
// token from tokenURL; auth adds fields to the auth object.
func oauthSub(url, tokenURL, auth string) string {
	return `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"` + url +
		`","auth":{"type":"oauth2_client_credentials","token_url":"` + tokenURL + `","client_id":"hub","client_secret":"` +
		oauthSecret + `"` + auth + `}}}`
}

func TestSubscriptions_OAuth2ValidationNamesTheField(t *testing.T) {
	sub := func(auth string) string {
		return `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"oauth2_client_credentials"` + auth + `}}}`
	}
	cases := []struct{ body, want string }{
		{sub(`,"client_id":"c","client_secret":"s"`), "destination.auth.token_url: required"},
		{sub(`,"token_url":"https://auth.example.com/token","client_secret":"s"`), "destination.auth.client_id: required"},
		{sub(`,"token_url":"https://auth.example.com/token","client_id":"c"`), "destination.auth.client_secret: required"},
		{sub(`,"token_url":"ftp://auth.example.com/token","client_id":"c","client_secret":"s"`), "destination.auth.token_url: must be an absolute http(s) URL"},
		{sub(`,"token_url":"/token","client_id":"c","client_secret":"s"`), "destination.auth.token_url: must be an absolute http(s) URL"},
		{sub(`,"token_url":"http://auth.example.com/token","client_id":"c","client_secret":"s"`), "destination.auth.token_url: must be https"},
		{sub(`,"token_url":"https://169.254.169.254/token","client_id":"c","client_secret":"s"`), "destination.auth.token_url: private destinations are not allowed"},
		{sub(`,"token_url":"https://u:p@auth.example.com/token","client_id":"c","client_secret":"s"`), "destination.auth.token_url: credentials in the URL"},
		{sub(`,"token_url":"https://auth.example.com/token","client_id":"c","client_secret":"s","client_auth":"jwt"`), "destination.auth.client_auth: must be basic or body"},
		{sub(`,"token_url":"https://auth.example.com/token","client_id":"c","client_secret":"s","token":"t"`), "destination.auth.token: not a field of the oauth2_client_credentials type"},
		{sub(`,"token_url":"https://auth.example.com/token","client_id":"c","client_secret":"s\u0000"`), "destination.auth.client_secret: must be valid UTF-8 without control characters"},
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for _, c := range cases {
			status, _, body := acme.do("POST", "/v1/subscriptions", c.body)
			var e struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(body, &e)
			if status != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("body %s\n got %d %s\nwant 400 naming %q", c.body, status, body, c.want)
			}
		}
		if subs, _ := h.store.ListSubscriptions(context.Background(), listAll("acme")); len(subs) != 0 {
			t.Fatalf("invalid requests stored %d subscriptions", len(subs))
		}
	})
}

// The answer shows token_url, client_id, scope, audience and client_auth,
// never the client secret; the verification probe and the test event
// carry the token; a PATCH of the settings makes the next send fetch a new
// token with them.
func TestSubscriptions_OAuth2ProbeAndTestEventCarryTheTokenAndTheSecretIsNeverShown(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		var mu sync.Mutex
		var forms []string
		tokens := 0
		tokenURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			mu.Lock()
			defer mu.Unlock()
			user, pass, _ := r.BasicAuth()
			forms = append(forms, r.PostForm.Encode()+" basic="+user+":"+pass)
			tokens++
			fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":600}`, tokens)
		}))
		t.Cleanup(tokenURL.Close)
		rc := newReceiver(t)

		var created map[string]any
		acme.json("POST", "/v1/subscriptions", oauthSub(rc.URL, tokenURL.URL+"/token", `,"scope":"a b","audience":"aud"`), 201, &created)
		id := created["id"].(string)
		auth := fmt.Sprint(created["destination"].(map[string]any)["auth"])
		if want := "map[audience:aud client_auth:basic client_id:hub scope:a b token_url:" + tokenURL.URL + "/token type:oauth2_client_credentials]"; auth != want {
			t.Fatalf("auth shown as %s\nwant %s", auth, want)
		}
		acme.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, nil)
		req, _ := rc.last()
		if a := req.Header.Get("Authorization"); a != "Bearer tok-1" {
			t.Fatalf("the probe carried Authorization %q", a)
		}
		var res struct {
			StatusCode int `json:"status_code"`
		}
		acme.json("POST", "/v1/subscriptions/"+id+"/test", "", 200, &res)
		if req, _ := rc.last(); res.StatusCode != 200 || req.Header.Get("Authorization") != "Bearer tok-1" || rc.count() != 2 {
			t.Fatalf("test event: %d, %q after %d requests", res.StatusCode, req.Header.Get("Authorization"), rc.count())
		}
		mu.Lock()
		if len(forms) != 1 || forms[0] != "audience=aud&grant_type=client_credentials&scope=a+b basic=hub:"+oauthSecret {
			t.Fatalf("token requests %q", forms)
		}
		mu.Unlock()

		// Another scope: the cached token is not for it.
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"destination":{"auth":{"type":"oauth2_client_credentials","token_url":"`+
			tokenURL.URL+`/token","client_id":"hub","client_secret":"`+oauthSecret+`","scope":"c","client_auth":"body"}}}`, 200, nil)
		acme.json("POST", "/v1/subscriptions/"+id+"/test", "", 200, &res)
		if req, _ := rc.last(); req.Header.Get("Authorization") != "Bearer tok-2" {
			t.Fatalf("after a PATCH the test event carried %q", req.Header.Get("Authorization"))
		}
		mu.Lock()
		if len(forms) != 2 || forms[1] != "client_id=hub&client_secret="+oauthSecret+"&grant_type=client_credentials&scope=c basic=:" {
			t.Fatalf("token requests %q", forms)
		}
		mu.Unlock()

		var seen strings.Builder
		for _, path := range []string{"/v1/subscriptions/" + id, "/v1/subscriptions", "/v1/subscriptions/" + id + "/deliveries"} {
			_, _, b := acme.do("GET", path, "")
			seen.Write(b)
		}
		_, _, b := acme.do("PATCH", "/v1/subscriptions/"+id, `{"name":"x"}`)
		seen.Write(b)
		seen.WriteString(h.logs.String())
		stored, err := h.store.GetSubscription(context.Background(), "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(stored.Secrets)
		for _, s := range []string{oauthSecret, "tok-1", "tok-2"} {
			if strings.Contains(seen.String(), s) {
				t.Errorf("%q is visible in an answer, the log or the stored row", s)
			}
		}
	})
}

// A token is for the destination it was fetched for: after a PATCH of
// destination.url the new host never receives the old token, but one
// fetched for it; any other change of the destination (a header) fetches
// a new one too (docs/receivers.md#oauth-20-client-credentials).
func TestSubscriptions_OAuth2TokenIsBoundToItsDestination(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		var mu sync.Mutex
		tokens := 0
		tokenURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			tokens++
			fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":600}`, tokens)
		}))
		t.Cleanup(tokenURL.Close)
		first, second := newReceiver(t), newReceiver(t)

		var created struct{ ID string }
		acme.json("POST", "/v1/subscriptions", oauthSub(first.URL, tokenURL.URL+"/token", ""), 201, &created)
		test := func(rc *receiver, want string) {
			t.Helper()
			var res struct {
				StatusCode int `json:"status_code"`
			}
			acme.json("POST", "/v1/subscriptions/"+created.ID+"/test", "", 200, &res)
			req, _ := rc.last()
			if res.StatusCode != 200 || req == nil || req.Header.Get("Authorization") != "Bearer "+want {
				got := "nothing"
				if req != nil {
					got = req.Header.Get("Authorization")
				}
				t.Fatalf("test event answered %d; the receiver got %s, want Bearer %s", res.StatusCode, got, want)
			}
		}
		test(first, "tok-1")
		test(first, "tok-1") // cached

		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"url":"`+second.URL+`"}}`, 200, nil)
		test(second, "tok-2")
		if first.count() != 2 {
			t.Fatalf("the first host got %d requests after the PATCH", first.count()-2)
		}
		test(second, "tok-2")

		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"headers":{"X-Env":"prod"}}}`, 200, nil)
		test(second, "tok-3")
	})
}
