package webhook

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// loopback resolves every name to 127.0.0.1 only.
type loopback struct{}

func (loopback) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func portOf(t *testing.T, rawURL string) int {
	u, _ := url.Parse(rawURL)
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func proxiedSend(t *testing.T, proxy string, allowPrivate bool, d hub.Destination, key string) destination.Result {
	t.Helper()
	u, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	r := destination.NewRegistry(5*time.Second, map[string]destination.Driver{hub.DestinationWebhook: New(
		destination.NewDialer(destination.DialOptions{AllowPrivate: allowPrivate, Resolver: loopback{}, Proxy: u}))})
	t.Cleanup(func() { r.Close() })
	d.Type = hub.DestinationWebhook
	return r.Send(context.Background(), destination.Target{Destination: d, ClientKey: key, Secrets: []string{destination.NewSecret()}},
		destination.Message{ID: "evt-1", ContentType: "application/json", Body: []byte(`{}`), Time: time.Now(), Headers: http.Header{}})
}

// With an egress proxy, an http and an https (mutual TLS, private CA)
// destination are both reached through a CONNECT tunnel to the address
// the hub resolved, while the Host header and the TLS server name keep
// the destination's name; the proxy's credentials are sent to it.
func TestEgressProxy_WebhooksGoThroughTinyproxyByCONNECT(t *testing.T) {
	pki := testkit.NewPKI(t)
	var hosts []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts = append(hosts, r.Host)
		w.WriteHeader(http.StatusNoContent)
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewUnstartedServer(handler)
	secure.Config.ErrorLog = log.New(io.Discard, "", 0)
	secure.TLS = pki.ServerTLS(true)
	secure.StartTLS()
	defer secure.Close()
	pp, sp := portOf(t, plain.URL), portOf(t, secure.URL)
	tp := testkit.StartTinyproxy(t, testkit.TinyproxyOptions{ConnectPorts: []int{pp, sp}, User: "hub", Pass: "s3cret"})

	proxy := "http://hub:s3cret@" + tp.Addr
	res := proxiedSend(t, proxy, true, hub.Destination{URL: "http://localhost:" + strconv.Itoa(pp) + "/hook"}, "")
	if res.Err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("http through the proxy: %+v", res)
	}
	res = proxiedSend(t, proxy, true, hub.Destination{URL: "https://localhost:" + strconv.Itoa(sp) + "/hook",
		ClientCertificate: string(pki.Client.CertPEM), CACertificates: string(pki.CA.CertPEM)}, string(pki.Client.KeyPEM))
	if res.Err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("https (mutual TLS) through the proxy: %+v", res)
	}
	if n, m := tp.CONNECTs("127.0.0.1:"+strconv.Itoa(pp)), tp.CONNECTs("127.0.0.1:"+strconv.Itoa(sp)); n != 1 || m != 1 {
		t.Fatalf("the proxy logged %d CONNECTs to the http destination and %d to the https one, want 1 each", n, m)
	}
	if len(hosts) != 2 || hosts[0] != "localhost:"+strconv.Itoa(pp) || hosts[1] != "localhost:"+strconv.Itoa(sp) {
		t.Fatalf("Host headers %v", hosts)
	}

	// Wrong credentials: the proxy refuses (tinyproxy answers CONNECT
	// with 401), the attempt says so, naming neither the proxy nor them;
	// the log's detail names the proxy.
	res = proxiedSend(t, "http://hub:wrong@"+tp.Addr, true, hub.Destination{URL: plain.URL}, "")
	if res.Err == nil || !strings.HasPrefix(res.Err.Error(), "the egress proxy refused the tunnel (40") || strings.Contains(res.Err.Error(), "wrong") ||
		!strings.Contains(destination.Detail(res.Err), "egress proxy "+tp.Addr+" refused the tunnel") || strings.Contains(destination.Detail(res.Err), "wrong") {
		t.Fatalf("wrong proxy credentials: %v (detail %s)", res.Err, destination.Detail(res.Err))
	}
	// A port the proxy does not allow CONNECT to.
	other := httptest.NewServer(handler)
	defer other.Close()
	res = proxiedSend(t, proxy, true, hub.Destination{URL: other.URL}, "")
	if res.Err == nil || res.Err.Error() != "the egress proxy refused the tunnel (403)" || len(hosts) != 2 {
		t.Fatalf("CONNECT to a port the proxy forbids: %v (delivered %d)", res.Err, len(hosts))
	}
}

// A proxy that refuses CONNECT, or is not there at all, fails the attempt
// with an error naming the proxy (never its credentials).
func TestEgressProxy_AFailingProxyFailsTheAttemptNamingIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
			}()
		}
	}()
	res := proxiedSend(t, "http://hub:s3cret@"+ln.Addr().String(), true, hub.Destination{URL: "http://example.test/hook"}, "")
	if want := "the egress proxy refused the tunnel (403)"; res.Err == nil || res.Err.Error() != want {
		t.Fatalf("got %v, want %q", res.Err, want)
	}
	if want := "egress proxy " + ln.Addr().String() + " refused the tunnel to 127.0.0.1:80: 403 Forbidden"; destination.Detail(res.Err) != want {
		t.Fatalf("the log's detail %q, want %q", destination.Detail(res.Err), want)
	}
	closed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	res = proxiedSend(t, "http://hub:s3cret@"+closed, true, hub.Destination{URL: "https://example.test/hook"}, "")
	if want := "the egress proxy is unreachable (connection refused)"; res.Err == nil || res.Err.Error() != want {
		t.Fatalf("got %v, want %q", res.Err, want)
	}
	if want := "egress proxy " + closed + ": dial tcp " + closed + ": connect: connection refused"; destination.Detail(res.Err) != want {
		t.Fatalf("the log's detail %q, want %q", destination.Detail(res.Err), want)
	}
}

// What a tenant reads of the egress proxy's failures names what failed,
// never the proxy's address (nor its credentials, nor the address the
// tunnel was for): a refusal with its status, a proxy that is down, and a
// proxy that does not speak what its URL says, TLS or plain, named as
// such rather than as a bare timeout. The server's log has it all.
func TestEgressProxy_TenantsReadWhatFailedNeverWhere(t *testing.T) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer sink.Close()
	sp := portOf(t, sink.URL)
	tp := testkit.StartTinyproxy(t, testkit.TinyproxyOptions{ConnectPorts: []int{sp}, User: "hub", Pass: "s3cret"})
	// A TLS server where a proxy is expected (Go's: it answers plain
	// text with a 400 saying so), and one that answers with a TLS alert.
	tlsProxy := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsProxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsProxy.StartTLS()
	defer tlsProxy.Close()
	alert, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer alert.Close()
	go func() {
		for {
			c, err := alert.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x0a}) // alert: unexpected_message
			c.Close()
		}
	}()
	closed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	dest := hub.Destination{URL: "http://localhost:" + strconv.Itoa(sp) + "/hook"}
	for _, c := range []struct{ proxy, want string }{
		{"http://hub:wrong@" + tp.Addr, "the egress proxy refused the tunnel (401)"},
		{"http://hub:s3cret@" + closed, "the egress proxy is unreachable (connection refused)"},
		{"http://hub:s3cret@" + tlsProxy.Listener.Addr().String(), "the egress proxy speaks TLS but the hub's proxy URL is http:// (the operator must use https://)"},
		{"http://hub:s3cret@" + alert.Addr().String(), "the egress proxy speaks TLS but the hub's proxy URL is http:// (the operator must use https://)"},
		// A plain proxy given a ClientHello mostly waits for a request
		// line; when the hello's random bytes hold a newline, tinyproxy
		// answers it with an HTTP error instead. Either answer names the fix.
		{"https://hub:s3cret@" + tp.Addr, "the egress proxy did not answer the TLS handshake: the hub's proxy URL is https://, and a plain proxy (http://) stays silent" +
			"|the egress proxy does not speak TLS but the hub's proxy URL is https:// (the operator must use http://)"},
	} {
		res := proxiedSend(t, c.proxy, true, dest, "")
		u, _ := url.Parse(c.proxy)
		if res.Err == nil || !slices.Contains(strings.Split(c.want, "|"), res.Err.Error()) {
			t.Errorf("proxy %s: the tenant reads %v, want %q", c.proxy, res.Err, c.want)
			continue
		}
		detail := destination.Detail(res.Err)
		for _, secret := range []string{u.Host, u.Port(), "127.0.0.1", "s3cret", "wrong"} {
			if strings.Contains(res.Err.Error(), secret) {
				t.Errorf("proxy %s: the tenant reads %q, naming %q", c.proxy, res.Err, secret)
			}
		}
		if !strings.Contains(detail, "egress proxy "+u.Host) || strings.Contains(detail, "s3cret") || strings.Contains(detail, "wrong") {
			t.Errorf("proxy %s: the log's detail %q", c.proxy, detail)
		}
		t.Logf("%s: the tenant reads %q; the log %q", c.proxy, res.Err, detail)
	}
}

// The SSRF rule holds with a proxy: a destination that resolves to a
// private address is refused by the hub itself, and the proxy is never
// asked.
func TestEgressProxy_SSRFStillRefusesPrivateDestinations(t *testing.T) {
	var asked atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			asked.Add(1)
			c.Close()
		}
	}()
	res := proxiedSend(t, "http://"+ln.Addr().String(), false, hub.Destination{URL: "http://internal.example/hook"}, "")
	if res.Err == nil || !strings.Contains(res.Err.Error(), "resolves to a private address (blocked)") || asked.Load() != 0 {
		t.Fatalf("got %v; the proxy was asked %d times", res.Err, asked.Load())
	}
}
