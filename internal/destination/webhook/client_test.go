package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// fakeDNS answers fixed addresses, like a resolver an attacker controls.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// sink is a local HTTP server that counts the requests it gets.
func sink(t *testing.T) (port string, hits *atomic.Int64) {
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u.Port(), hits
}

// newClient is the webhook client over a dialer of o, with a timeout of
// its own (in the hub the send path gives the deadline).
func newClient(t *testing.T, o destination.DialOptions, timeout time.Duration) *http.Client {
	t.Helper()
	c := NewClient(destination.NewDialer(o))
	c.Timeout = timeout
	return c
}

func TestClient_RefusesAPublicLookingNameThatResolvesPrivate(t *testing.T) {
	port, hits := sink(t)
	dns := fakeDNS{
		"hooks.example.com":    addrs("127.0.0.1"),
		"internal.example.com": addrs("10.1.2.3", "169.254.169.254"),
		"mapped.example.com":   addrs("::ffff:127.0.0.1"),
	}
	c := newClient(t, destination.DialOptions{Resolver: dns}, 2*time.Second)
	for _, host := range []string{"hooks.example.com", "internal.example.com", "mapped.example.com", "127.0.0.1", "[::1]"} {
		_, err := c.Post("http://"+host+":"+port+"/hook", "application/json", nil)
		var refused *destination.RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s: err = %v, want a refusal", host, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the private sink received %d requests", hits.Load())
	}

	// With private sinks allowed (dev mode) the same name is dialed.
	allowed := newClient(t, destination.DialOptions{Resolver: dns, AllowPrivate: true}, time.Minute) // a safety net, not a speed
	resp, err := allowed.Post("http://hooks.example.com:"+port+"/hook", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("allowed sink got %d requests", hits.Load())
	}
}

func TestClient_DialsOnlyThePublicAddressesOfAMixedAnswer(t *testing.T) {
	// The public address does not answer (this machine has no route out);
	// the only way to succeed would be falling back to the private one.
	port, hits := sink(t)
	c := newClient(t, destination.DialOptions{Resolver: fakeDNS{"mixed.example.com": addrs("1.2.3.4", "127.0.0.1")}}, time.Second)
	if _, err := c.Post("http://mixed.example.com:"+port+"/", "text/plain", nil); err == nil {
		t.Fatal("a mixed answer reached the private address")
	}
	if hits.Load() != 0 {
		t.Fatal("the private address was dialed")
	}
}

func TestClient_NeverFollowsRedirects(t *testing.T) {
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	resp, err := newClient(t, destination.DialOptions{AllowPrivate: true}, time.Minute).Post(redirector.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || followed.Load() {
		t.Fatalf("status %d, followed %v", resp.StatusCode, followed.Load())
	}
}
