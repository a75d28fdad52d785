package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
)

func endpoint(t *testing.T, answer string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		time.Sleep(10 * time.Millisecond) // let concurrent callers pile up
		fmt.Fprintf(w, answer, i)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func cfg(sub, url string) webhook.TokenConfig {
	return webhook.TokenConfig{SubscriptionID: sub, ClientSecret: "s",
		OAuth2: hub.OAuth2{TokenURL: url, ClientID: "c", ClientAuth: hub.OAuth2ClientAuthBasic}}
}

// Concurrent attempts of one subscription wait for one fetch.
func TestTokenCache_ConcurrentAttemptsShareOneFetch(t *testing.T) {
	srv, n := endpoint(t, `{"access_token":"tok-%d","expires_in":3600}`)
	c := webhook.NewTokenCache(0)
	now := time.Unix(1_800_000_000, 0)
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			tok, err := c.Token(context.Background(), srv.Client(), cfg("sub_1", srv.URL), now)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	wg.Wait()
	for i, tok := range got {
		if tok != "tok-1" {
			t.Fatalf("caller %d got %q", i, tok)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("%d fetches, want 1", n.Load())
	}
}

// Without expires_in a token is used for DefaultLifetime; a change of the
// settings (a PATCH) replaces the subscription's token rather than adding
// one; the cache never holds more than its bound.
func TestTokenCache_DefaultLifetimeReplacementAndBound(t *testing.T) {
	srv, n := endpoint(t, `{"access_token":"tok-%d"}`)
	c := webhook.NewTokenCache(3)
	now := time.Unix(1_800_000_000, 0)
	token := func(cf webhook.TokenConfig, at time.Time) string {
		tok, err := c.Token(context.Background(), srv.Client(), cf, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a := cfg("sub_a", srv.URL)
	if token(a, now) != "tok-1" || token(a, now.Add(webhook.DefaultTokenLifetime-time.Second)) != "tok-1" {
		t.Fatal("a token was not reused within the default lifetime")
	}
	if token(a, now.Add(webhook.DefaultTokenLifetime)) != "tok-2" {
		t.Fatal("a token was used past the default lifetime")
	}
	a.Scope = "other"
	if token(a, now) != "tok-3" || c.Len() != 1 {
		t.Fatalf("after a change of settings: %d cached", c.Len())
	}
	for i := range 5 {
		token(cfg(fmt.Sprintf("sub_%d", i), srv.URL), now)
	}
	if c.Len() > 3 {
		t.Fatalf("the cache holds %d tokens, bound 3", c.Len())
	}
	if n.Load() != 8 {
		t.Fatalf("%d fetches, want 8", n.Load())
	}
}

// A token is bound to the destination it was fetched for: the same
// settings for another host, or for a changed destination, fetch anew.
func TestTokenCache_ATokenIsForItsDestinationOnly(t *testing.T) {
	srv, n := endpoint(t, `{"access_token":"tok-%d","expires_in":3600}`)
	c := webhook.NewTokenCache(0)
	now := time.Unix(1_800_000_000, 0)
	token := func(cf webhook.TokenConfig) string {
		tok, err := c.Token(context.Background(), srv.Client(), cf, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	a := cfg("sub_a", srv.URL)
	a.Host = webhook.Origin("https://a.example/hook")
	if token(a) != "tok-1" || token(a) != "tok-1" {
		t.Fatal("a token was not reused for its own destination")
	}
	b := a
	b.Host = webhook.Origin("https://b.example/hook")
	if token(b) != "tok-2" {
		t.Fatal("a token was reused for another host")
	}
	b.Destination[0] ^= 1 // anything else of the destination changed
	if token(b) != "tok-3" || n.Load() != 3 {
		t.Fatalf("a token was reused for a changed destination (%d fetches)", n.Load())
	}
	for raw, want := range map[string]string{"https://A.example/x?q": "https://a.example:443", "http://a.example:8080": "http://a.example:8080",
		"https://[::1]/": "https://[::1]:443", "/x": ""} {
		if got := webhook.Origin(raw); got != want {
			t.Errorf("Origin(%q) = %q, want %q", raw, got, want)
		}
	}
}
