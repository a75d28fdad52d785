package dispatch_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const (
	oauthClientID     = "hub-client"
	oauthClientSecret = "s3cr3t-client-value"
)

// tokenEndpoint is a real OAuth 2.0 token endpoint (client credentials
// grant) that checks how the client authenticates and hands out tok-1,
// tok-2, ... valid for expiresIn seconds.
type tokenEndpoint struct {
	*httptest.Server
	clientAuth string // basic or body: how the client must authenticate
	mu         sync.Mutex
	issued     []string
	refused    []string             // why requests were refused
	answer     func() (int, string) // when set, answers instead
	expiresIn  int
}

func newTokenEndpoint(t testing.TB, clientAuth string) *tokenEndpoint {
	te := &tokenEndpoint{clientAuth: clientAuth, expiresIn: 3600}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.mu.Lock()
		defer te.mu.Unlock()
		if te.answer != nil {
			status, body := te.answer()
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			te.refuse(w, "not a form POST")
			return
		}
		f := r.PostForm
		if f.Get("grant_type") != "client_credentials" || f.Get("scope") != "events:write" || f.Get("audience") != "https://receiver.example" {
			te.refuse(w, "grant, scope or audience: "+f.Encode())
			return
		}
		user, pass, basic := r.BasicAuth()
		switch te.clientAuth {
		case hub.OAuth2ClientAuthBasic:
			if !basic || user != oauthClientID || pass != url.QueryEscape(oauthClientSecret) || f.Has("client_secret") {
				te.refuse(w, "basic auth expected")
				return
			}
		case hub.OAuth2ClientAuthBody:
			if basic || f.Get("client_id") != oauthClientID || f.Get("client_secret") != oauthClientSecret {
				te.refuse(w, "body auth expected")
				return
			}
		}
		tok := fmt.Sprintf("tok-%d", len(te.issued)+1)
		te.issued = append(te.issued, tok)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": te.expiresIn})
	}))
	t.Cleanup(te.Close)
	return te
}

func (te *tokenEndpoint) refuse(w http.ResponseWriter, why string) {
	te.refused = append(te.refused, why)
	w.WriteHeader(http.StatusUnauthorized)
	io.WriteString(w, `{"error":"invalid_client"}`)
}

func (te *tokenEndpoint) tokens() (issued, refused []string) {
	te.mu.Lock()
	defer te.mu.Unlock()
	return append([]string(nil), te.issued...), append([]string(nil), te.refused...)
}

func (te *tokenEndpoint) script(fn func() (int, string)) {
	te.mu.Lock()
	defer te.mu.Unlock()
	te.answer = fn
}

// bearerSink answers 200 to a request with a token in valid, else 401.
func bearerSink(t testing.TB, valid func(token string) bool) *sink {
	s := newSink(t)
	s.script(func(_ int, r *http.Request) (int, http.Header, string) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !valid(tok) {
			return http.StatusUnauthorized, nil, "bad token"
		}
		return 200, nil, "ok"
	})
	return s
}

// oauthSubscription stores a verified subscription of acme to sinkURL
// that authenticates with a token from tokenURL.
func (r *rig) oauthSubscription(id, sinkURL, tokenURL, clientAuth string) hub.Subscription {
	r.t.Helper()
	s := storetest.NewSubscription("acme", id)
	s.Destination = hub.Destination{Type: "webhook", URL: sinkURL, AuthType: hub.AuthOAuth2ClientCredentials,
		OAuth2: hub.OAuth2{TokenURL: tokenURL, ClientID: oauthClientID, Scope: "events:write",
			Audience: "https://receiver.example", ClientAuth: clientAuth}}
	s.VerificationState, s.MaxInFlight, s.RetrySchedule = hub.VerificationActive, 4, []string{"10s", "10s", "10s"}
	if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{
		Signing: []hub.SigningSecret{{Secret: r.secret}}, Auth: hub.Credentials{ClientSecret: oauthClientSecret},
	}); err != nil {
		r.t.Fatal(err)
	}
	out, err := r.store.CreateSubscription(r.ctx, s)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// subAttempts are every attempt of sub's jobs.
func (r *rig) subAttempts(sub string) []hub.Attempt {
	r.t.Helper()
	jobs, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: sub, Limit: 100})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []hub.Attempt
	for _, j := range jobs {
		_, as, err := r.store.GetJob(r.ctx, "acme", j.ID)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, as...)
	}
	return out
}

func (r *rig) stepUntil(what string, cond func() bool) {
	r.t.Helper()
	for range 50 {
		if cond() {
			return
		}
		r.step()
	}
	if !cond() {
		r.t.Fatalf("never: %s", what)
	}
}

// A token is fetched once (the endpoint checking HTTP Basic or body client
// authentication as configured) and carried by every delivery until 30 s
// before it expires; then the next delivery fetches a new one.
func TestOAuth_TokenFetchedOnceReusedThenRefetchedAfterExpiry(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		for _, clientAuth := range []string{hub.OAuth2ClientAuthBasic, hub.OAuth2ClientAuthBody} {
			t.Run(clientAuth, func(t *testing.T) {
				r := newRig(t, d, rigOptions{})
				te := newTokenEndpoint(t, clientAuth)
				recv := bearerSink(t, func(tok string) bool {
					issued, _ := te.tokens()
					return len(issued) > 0 && tok == issued[len(issued)-1]
				})
				sub := r.oauthSubscription("sub_oauth", recv.URL, te.URL+"/token", clientAuth)

				for i := range 6 {
					r.publish(event("acme", fmt.Sprintf("e-%d", i)))
				}
				r.stepUntil("six deliveries", func() bool { return len(recv.got()) >= 6 })
				issued, refused := te.tokens()
				if len(issued) != 1 || len(refused) != 0 {
					t.Fatalf("token endpoint issued %v, refused %v; want one token for six deliveries", issued, refused)
				}
				for i, g := range recv.got() {
					if a := g.header.Get("Authorization"); a != "Bearer tok-1" {
						t.Fatalf("delivery %d carried Authorization %q", i, a)
					}
				}
				for _, a := range r.subAttempts(sub.ID) {
					if a.Error != "" || a.RequestHeaders["Authorization"] != hub.Redacted {
						t.Fatalf("attempt %+v: want a success with the token redacted", a)
					}
				}

				// 29 s before expiry the token is still good...
				r.clock.Advance(3600*time.Second - webhook.TokenExpiryMargin - time.Second)
				r.publish(event("acme", "e-late"))
				r.stepUntil("the seventh delivery", func() bool { return len(recv.got()) >= 7 })
				if issued, _ := te.tokens(); len(issued) != 1 {
					t.Fatalf("a token inside its lifetime was fetched again: %v", issued)
				}
				// ...30 s before, a new one is fetched.
				r.clock.Advance(time.Second)
				r.publish(event("acme", "e-expired"))
				r.stepUntil("the eighth delivery", func() bool { return len(recv.got()) >= 8 })
				got := recv.got()
				if issued, _ := te.tokens(); len(issued) != 2 || got[7].header.Get("Authorization") != "Bearer tok-2" {
					t.Fatalf("after expiry: issued %v, delivery carried %q", issued, got[7].header.Get("Authorization"))
				}
			})
		}
	})
}

// A receiver that revokes the token answers 401: that attempt fails, the
// token is dropped, and the retry fetches a new one and lands.
func TestOAuth_ARevokedTokenIsDroppedAndTheRetryGetsANewOne(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		te := newTokenEndpoint(t, hub.OAuth2ClientAuthBody)
		var mu sync.Mutex
		revoked := map[string]bool{}
		recv := bearerSink(t, func(tok string) bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.HasPrefix(tok, "tok-") && !revoked[tok]
		})
		sub := r.oauthSubscription("sub_oauth", recv.URL, te.URL+"/token", hub.OAuth2ClientAuthBody)
		r.publish(event("acme", "e-1"))
		r.stepUntil("the first delivery", func() bool { return len(recv.got()) >= 1 })

		mu.Lock()
		revoked["tok-1"] = true
		mu.Unlock()
		r.publish(event("acme", "e-2"))
		r.stepUntil("the refused attempt", func() bool { return len(recv.got()) >= 2 })
		var failed []hub.Attempt
		for _, a := range r.subAttempts(sub.ID) {
			if a.Error != "" {
				failed = append(failed, a)
			}
		}
		if len(failed) != 1 || failed[0].StatusCode != 401 || !strings.Contains(failed[0].Error, "401") {
			t.Fatalf("failed attempts %+v, want the one 401", failed)
		}
		r.clock.Advance(10 * time.Second) // the retry schedule's step
		r.stepUntil("the retry", func() bool { return len(recv.got()) >= 3 })
		got := recv.got()
		if a := got[2].header.Get("Authorization"); a != "Bearer tok-2" {
			t.Fatalf("the retry carried %q, want a new token", a)
		}
		jobs, _ := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: sub.ID, Limit: 10})
		for _, j := range jobs {
			if j.Status != hub.JobSucceeded {
				t.Fatalf("job %s is %s after the retry", j.ID, j.Status)
			}
		}
		if issued, _ := te.tokens(); len(issued) != 2 {
			t.Fatalf("issued %v, want two tokens", issued)
		}
	})
}

// A token endpoint that fails (500 with its error code, an answer that is
// not JSON, nothing listening) fails the attempt with an error naming
// token_url; the client secret appears in no attempt.
func TestOAuth_TokenEndpointFailuresAreAttemptErrorsNamingTokenURL(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		recv := bearerSink(t, func(string) bool { return true })
		failing := newTokenEndpoint(t, hub.OAuth2ClientAuthBasic)
		failing.script(func() (int, string) { return 500, `{"error":"temporarily_unavailable"}` })
		notJSON := newTokenEndpoint(t, hub.OAuth2ClientAuthBasic)
		notJSON.script(func() (int, string) { return 200, `<html>login</html>` })
		down := newTokenEndpoint(t, hub.OAuth2ClientAuthBasic)
		down.Close()

		cases := []struct{ sub, tokenURL, want string }{
			{"sub_500", failing.URL + "/token?tenant=x", "oauth2: token_url " + failing.URL + "/token answered 500 (temporarily_unavailable)"},
			{"sub_html", notJSON.URL + "/token", "oauth2: token_url " + notJSON.URL + "/token answered 200 without a JSON token"},
			{"sub_down", down.URL + "/token", "oauth2: token_url " + down.URL + "/token: connect: connection refused by " + strings.TrimPrefix(down.URL, "http://")},
		}
		for _, c := range cases {
			r.oauthSubscription(c.sub, recv.URL, c.tokenURL, hub.OAuth2ClientAuthBasic)
		}
		r.publish(event("acme", "e-1"))
		r.stepUntil("an attempt per subscription", func() bool {
			for _, c := range cases {
				if len(r.subAttempts(c.sub)) == 0 {
					return false
				}
			}
			return true
		})
		for _, c := range cases {
			as := r.subAttempts(c.sub)
			if len(as) != 1 || as[0].Error != c.want {
				t.Fatalf("%s: attempts %+v, want one failing with %q", c.sub, as, c.want)
			}
			raw, _ := json.Marshal(as)
			if strings.Contains(string(raw), oauthClientSecret) || strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte(oauthClientID+":"+oauthClientSecret))) {
				t.Fatalf("%s: the client secret is in the stored attempt: %s", c.sub, raw)
			}
			jobs, _ := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: c.sub, Limit: 10})
			if len(jobs) != 1 || jobs[0].Status != hub.JobPending || jobs[0].LastError != c.want {
				t.Fatalf("%s: job %+v, want pending for a retry", c.sub, jobs)
			}
		}
		if len(recv.got()) != 0 {
			t.Fatalf("the receiver got %d requests without a token", len(recv.got()))
		}
	})
}
