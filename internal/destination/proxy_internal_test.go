package destination

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// An https:// proxy that speaks TLS (its certificate trusted) tunnels as
// before: the handshake's deadlines for naming a silent proxy leave a
// proxy that answers alone.
func TestProxy_AnHTTPSProxyTunnels(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	proxy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Header.Get("Proxy-Authorization") != "Basic aHViOnMzY3JldA==" {
			http.Error(w, "no", http.StatusProxyAuthRequired)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		brw.Flush()
		go func() { io.Copy(up, c); up.Close() }()
		io.Copy(c, up)
		c.Close()
	}))
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	proxy.StartTLS()
	defer proxy.Close()
	u, _ := url.Parse("https://hub:s3cret@" + proxy.Listener.Addr().String())
	p := newProxy(u)
	p.roots = proxy.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	p.host = "example.com" // httptest's certificate is for example.com and 127.0.0.1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := p.dial(ctx, echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(proxyFirstByteTimeout + 100*time.Millisecond) // past the handshake's first-byte bound: no deadline left
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}

	// A wrong password: refused, with the status for the tenant.
	u, _ = url.Parse("https://hub:wrong@" + proxy.Listener.Addr().String())
	q := newProxy(u)
	q.roots, q.host = p.roots, p.host
	_, err = q.dial(ctx, echo.Addr().String())
	pe, ok := err.(*ProxyError)
	if !ok || pe.TenantText() != "the egress proxy refused the tunnel (407)" {
		t.Fatalf("got %v", err)
	}
	// Its certificate untrusted: named as such.
	q.roots = nil
	_, err = q.dial(ctx, echo.Addr().String())
	if pe, ok := err.(*ProxyError); !ok || pe.TenantText() != "the egress proxy's TLS certificate is not trusted" {
		t.Fatalf("got %v", err)
	}
}
