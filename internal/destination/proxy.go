package destination

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// ProxyError is a failure of the egress proxy (STREAMING_HUB_EGRESS_PROXY;
// docs/security.md#fixed-egress): it could not be reached, or it refused
// or failed the tunnel. It names the proxy by its host:port, never by its
// credentials.
type ProxyError struct {
	Addr   string // the proxy's host:port
	Status string // the proxy's answer to CONNECT when not 200
	Err    error  // why it could not be reached or did not answer
}

func (e *ProxyError) Error() string { return Describe(e) }
func (e *ProxyError) Unwrap() error { return e.Err }

func (e *ProxyError) describe() string {
	if e.Status != "" {
		return "egress proxy " + e.Addr + " refused the tunnel: " + e.Status
	}
	return "egress proxy " + e.Addr + ": " + Describe(e.Err)
}

// proxy tunnels connections through an HTTP(S) proxy with CONNECT.
type proxy struct {
	https bool
	addr  string // host:port
	host  string // for the TLS to an https proxy
	auth  string // the Proxy-Authorization value; "" for none
	net   net.Dialer
}

func newProxy(u *url.URL) *proxy {
	p := &proxy{https: u.Scheme == "https", host: u.Hostname(),
		net: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
	port := u.Port()
	if port == "" {
		port = "80"
		if p.https {
			port = "443"
		}
	}
	p.addr = net.JoinHostPort(p.host, port)
	if u.User != nil {
		pass, _ := u.User.Password()
		p.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	}
	return p
}

// dial opens a tunnel to target (an address the dialer checked, as
// ip:port) through the proxy. The proxy itself is the operator's: it is
// dialed without the SSRF check (it is often on a private address).
func (p *proxy) dial(ctx context.Context, target string) (net.Conn, error) {
	conn, err := p.net.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, &ProxyError{Addr: p.addr, Err: err}
	}
	// The proxy's answer must come within the attempt's time.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if p.https {
		tc := tls.Client(conn, &tls.Config{ServerName: p.host, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, &ProxyError{Addr: p.addr, Err: err}
		}
		conn = tc
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if p.auth != "" {
		req += "Proxy-Authorization: " + p.auth + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Err: ctxErr(ctx, err)}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Err: ctxErr(ctx, err)}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Status: resp.Status}
	}
	if !stop() && ctx.Err() != nil {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Err: ctx.Err()}
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The destination spoke first, in the same read as the answer.
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// ctxErr is ctx's error when it ended (the deadline set from it cut the
// exchange short), else err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

// bufferedConn is a tunnel whose first bytes were read with the proxy's
// answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
