package destination

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// ProxyError is a failure of the egress proxy (STREAMING_HUB_EGRESS_PROXY;
// docs/security.md#fixed-egress): it could not be reached, or it refused
// or failed the tunnel, or it does not speak what its URL says (TLS or
// plain). Error, for the server's log, names the proxy by its host:port
// (never by its credentials) and says all that went wrong; what a tenant
// reads (Explain, TenantText) names neither the proxy's address nor the
// address it was asked for.
type ProxyError struct {
	Addr   string // the proxy's host:port
	Target string // the address the tunnel was asked for, when it was
	Status string // the proxy's answer to CONNECT when not 200
	Code   int    // its status code
	Err    error  // why it could not be reached or did not answer
	// Mismatch is set when the proxy does not speak what its URL says:
	// mismatchTLS, a TLS proxy under an http:// URL; mismatchPlain, a
	// plain one under https:// (it answered something other than TLS);
	// mismatchSilent, a proxy under https:// that did not answer the TLS
	// handshake at all, as a plain one does.
	Mismatch string
}

const (
	mismatchTLS    = "tls"
	mismatchPlain  = "plain"
	mismatchSilent = "silent"
)

func (e *ProxyError) Error() string {
	to := ""
	if e.Target != "" {
		to = " to " + e.Target
	}
	switch {
	case e.Mismatch == mismatchTLS:
		return "egress proxy " + e.Addr + " speaks TLS but its URL is http:// (use https://)" + errText(e.Err)
	case e.Mismatch == mismatchPlain:
		return "egress proxy " + e.Addr + " does not speak TLS but its URL is https:// (use http://)" + errText(e.Err)
	case e.Mismatch == mismatchSilent:
		return "egress proxy " + e.Addr + " did not answer the TLS handshake: its URL is https://, is it a plain proxy (http://)?" + errText(e.Err)
	case e.Status != "":
		return "egress proxy " + e.Addr + " refused the tunnel" + to + ": " + e.Status
	}
	return "egress proxy " + e.Addr + errText(e.Err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func (e *ProxyError) Unwrap() error { return e.Err }

// TenantText is what a tenant reads of e: what failed at the egress
// proxy, without its address or credentials, nor the address asked for.
func (e *ProxyError) TenantText() string {
	var (
		dns     *net.DNSError
		record  tls.RecordHeaderError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		ne      net.Error
	)
	err := e.Err
	switch {
	case e.Mismatch == mismatchTLS:
		return "the egress proxy speaks TLS but the hub's proxy URL is http:// (the operator must use https://)"
	case e.Mismatch == mismatchPlain:
		return "the egress proxy does not speak TLS but the hub's proxy URL is https:// (the operator must use http://)"
	case e.Mismatch == mismatchSilent:
		return "the egress proxy did not answer the TLS handshake: the hub's proxy URL is https://, and a plain proxy (http://) stays silent"
	case e.Code != 0:
		return fmt.Sprintf("the egress proxy refused the tunnel (%d)", e.Code)
	case e.Status != "":
		return "the egress proxy refused the tunnel"
	case err == nil:
		return "the egress proxy failed"
	case errors.As(err, &dns):
		return "the egress proxy is unreachable (its name does not resolve)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the egress proxy is unreachable (connection refused)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the egress proxy is unreachable (no route)"
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid), errors.As(err, &verify):
		return "the egress proxy's TLS certificate is not trusted"
	case errors.As(err, &record):
		return "the egress proxy does not speak TLS but the hub's proxy URL is https:// (the operator must use http://)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "the egress proxy did not answer in time"
	case errors.Is(err, context.Canceled):
		return "canceled: the hub stopped the attempt"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the egress proxy closed the connection without answering"
	}
	return "the egress proxy failed"
}

// proxy tunnels connections through an HTTP(S) proxy with CONNECT.
type proxy struct {
	// roots verify an https proxy's certificate: nil, the system's (a
	// test's own CA otherwise).
	roots *x509.CertPool
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
	raw, err := p.net.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, &ProxyError{Addr: p.addr, Err: err}
	}
	// The proxy's answer must come within the attempt's time.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	var conn net.Conn = raw
	if p.https {
		// A TLS proxy answers a ClientHello at once; a plain one waits
		// in silence for the rest of a request. The first byte has
		// proxyFirstByteTimeout, well within an attempt's time, so that
		// silence is named before the attempt's own deadline (which the
		// HTTP client answers with a bare timeout); the handshake
		// proxyHandshakeTimeout.
		handshakeEnd := time.Now().Add(proxyHandshakeTimeout)
		if dl, ok := ctx.Deadline(); ok && dl.Before(handshakeEnd) {
			handshakeEnd = dl
		}
		counted := &countingConn{Conn: raw, answered: func() { raw.SetDeadline(handshakeEnd) }}
		raw.SetDeadline(minTime(handshakeEnd, time.Now().Add(proxyFirstByteTimeout)))
		tc := tls.Client(counted, &tls.Config{ServerName: p.host, MinVersion: tls.VersionTLS12, RootCAs: p.roots})
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			pe := &ProxyError{Addr: p.addr, Err: ctxErr(ctx, err)}
			var record tls.RecordHeaderError
			var ne net.Error
			switch {
			case errors.As(err, &record):
				// It answered, in something other than TLS.
				pe.Mismatch = mismatchPlain
			case counted.read.Load() == 0 && !errors.Is(ctx.Err(), context.Canceled) && errors.As(err, &ne) && ne.Timeout():
				// A plain proxy reads a ClientHello as the start of a
				// request and waits for the rest: silence (tinyproxy).
				pe.Mismatch = mismatchSilent
			}
			return nil, pe
		}
		conn = tc
		if dl, ok := ctx.Deadline(); ok {
			raw.SetDeadline(dl)
		} else {
			raw.SetDeadline(time.Time{})
		}
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if p.auth != "" {
		req += "Proxy-Authorization: " + p.auth + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Target: target, Err: ctxErr(ctx, err)}
	}
	br := bufio.NewReader(conn)
	if !p.https {
		// A TLS proxy answers plain text with an alert (or a handshake):
		// records of content type 21 or 22, version 3.x.
		if b, err := br.Peek(2); err == nil && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03 {
			conn.Close()
			return nil, &ProxyError{Addr: p.addr, Target: target, Mismatch: mismatchTLS}
		}
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		pe := &ProxyError{Addr: p.addr, Target: target, Err: ctxErr(ctx, err)}
		if !p.https && ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) &&
			p.speaksTLS(ctx) {
			// Hung up on plain text (Go's TLS servers do, on CONNECT):
			// a TLS handshake tells whether it was a TLS proxy.
			pe.Mismatch = mismatchTLS
		}
		return nil, pe
	}
	if resp.StatusCode != http.StatusOK {
		// Some TLS servers answer plain HTTP in kind: 400, saying so.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		conn.Close()
		pe := &ProxyError{Addr: p.addr, Target: target, Status: resp.Status, Code: resp.StatusCode}
		if !p.https && resp.StatusCode == http.StatusBadRequest && strings.Contains(strings.ToLower(string(body)), "https") {
			pe.Mismatch = mismatchTLS
		}
		return nil, pe
	}
	resp.Body.Close()
	if !stop() && ctx.Err() != nil {
		conn.Close()
		return nil, &ProxyError{Addr: p.addr, Target: target, Err: ctx.Err()}
	}
	raw.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The destination spoke first, in the same read as the answer.
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// speaksTLS reports whether the proxy answers a TLS handshake: a server
// hello, whether or not its certificate would be trusted (nothing is sent
// over the connection, which is closed at once).
func (p *proxy) speaksTLS(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	raw, err := p.net.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	err = tls.Client(raw, &tls.Config{ServerName: p.host, MinVersion: tls.VersionTLS12, RootCAs: p.roots}).HandshakeContext(ctx)
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		alert   tls.AlertError
		op      *net.OpError
	)
	return err == nil || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &op) && op.Op == "remote error"
}

// The TLS handshake with an https:// proxy: its first byte, and the whole.
const (
	proxyFirstByteTimeout = 3 * time.Second
	proxyHandshakeTimeout = 10 * time.Second
)

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// countingConn counts the bytes read (whether a proxy answered at all),
// and calls answered once the first arrive.
type countingConn struct {
	net.Conn
	read     atomic.Int64
	answered func()
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.read.Add(int64(n)) == int64(n) && c.answered != nil {
		c.answered()
	}
	return n, err
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
