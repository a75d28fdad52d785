package webhook

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// With an egress proxy, an oauth2_client_credentials destination's token
// request leaves through the proxy as the delivery does: the proxy logs a
// CONNECT to the token endpoint's port and to the receiver's, and the
// delivery carries the token as its bearer.
func TestEgressProxy_TheOAuthTokenRequestGoesThroughTheProxyToo(t *testing.T) {
	var mu sync.Mutex
	var tokenAuth, tokenGrant, deliveredAuth []string
	token := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		tokenAuth, tokenGrant = append(tokenAuth, user+":"+pass), append(tokenGrant, r.PostForm.Get("grant_type"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"tok-proxied","token_type":"Bearer","expires_in":3600}`)
	}))
	defer token.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deliveredAuth = append(deliveredAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	tkp, rp := portOf(t, token.URL), portOf(t, receiver.URL)
	tp := testkit.StartTinyproxy(t, testkit.TinyproxyOptions{ConnectPorts: []int{tkp, rp}, User: "hub", Pass: "s3cret"})

	proxy, err := url.Parse("http://hub:s3cret@" + tp.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := destination.NewRegistry(5*time.Second, map[string]destination.Driver{hub.DestinationWebhook: New(
		destination.NewDialer(destination.DialOptions{AllowPrivate: true, Resolver: loopback{}, Proxy: proxy}))})
	t.Cleanup(func() { r.Close() })
	tg := destination.Target{
		SubscriptionID: "sub-1",
		Destination: hub.Destination{Type: hub.DestinationWebhook, URL: "http://localhost:" + strconv.Itoa(rp) + "/hook",
			AuthType: hub.AuthOAuth2ClientCredentials,
			OAuth2: hub.OAuth2{TokenURL: "http://localhost:" + strconv.Itoa(tkp) + "/oauth/token", ClientID: "acme-client",
				ClientAuth: hub.OAuth2ClientAuthBasic}},
		Credentials: hub.Credentials{ClientSecret: "acme-secret"},
		Secrets:     []string{destination.NewSecret()},
	}
	res := r.Send(context.Background(), tg, destination.Message{ID: "evt-1", ContentType: "application/json", Body: []byte(`{}`),
		Time: time.Now(), Headers: http.Header{}})
	if res.Err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("through the proxy: %+v", res)
	}
	if n := tp.CONNECTs("127.0.0.1:" + strconv.Itoa(tkp)); n != 1 {
		t.Errorf("the proxy logged %d CONNECTs to the token endpoint, want 1", n)
	}
	if n := tp.CONNECTs("127.0.0.1:" + strconv.Itoa(rp)); n != 1 {
		t.Errorf("the proxy logged %d CONNECTs to the receiver, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokenAuth) != 1 || tokenAuth[0] != "acme-client:acme-secret" || tokenGrant[0] != "client_credentials" {
		t.Errorf("token requests: client %v, grant_type %v", tokenAuth, tokenGrant)
	}
	if len(deliveredAuth) != 1 || deliveredAuth[0] != "Bearer tok-proxied" {
		t.Errorf("the delivery's Authorization: %v, want Bearer tok-proxied", deliveredAuth)
	}
}
