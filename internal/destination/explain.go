package destination

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Written is a destination as its tenant wrote it: the host of the URL
// they gave (or of their first broker), the port they wrote or the
// scheme's, and every host they wrote. A tenant's error names these and
// nothing else (docs/security.md#what-a-tenants-errors-reveal).
type Written struct {
	Host  string   // example.com, or an address the tenant wrote literally
	Port  string   // "" when neither written nor implied
	Hosts []string // every host written (a Kafka destination's brokers)
}

// WrittenOf is t's destination as its tenant wrote it.
func WrittenOf(t Target) Written {
	var w Written
	add := func(host, port string) {
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if host == "" {
			return
		}
		if w.Host == "" {
			w.Host, w.Port = host, port
		}
		w.Hosts = append(w.Hosts, host)
	}
	for _, raw := range []string{t.URL, t.AWS.QueueURL} {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			add(u.Hostname(), cmpOr(u.Port(), defaultPorts[u.Scheme]))
		}
	}
	for _, b := range t.Brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil {
			host, port = b, "9092"
		}
		add(host, port)
	}
	return w
}

// WrittenURL is an endpoint a tenant wrote as a URL (a token URL), as
// Explain names it.
func WrittenURL(raw string) Written { return WrittenOf(Target{Destination: hub.Destination{URL: raw}}) }

var defaultPorts = map[string]string{"https": "443", "http": "80", "amqp": "5672", "amqps": "5671", "nats": "4222", "tls": "4222"}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// wrote reports whether host (a name or an address, from an error) is one
// the tenant wrote.
func (w Written) wrote(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, h := range w.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// name is how a message names the destination: host when the tenant wrote
// it, else what they wrote (an address their name resolved to, or a name a
// broker advertised, is not theirs to read).
func (w Written) name(host string) string {
	switch {
	case host != "" && (w.wrote(host) || w.Host == ""):
		// Written or, with nothing written known (Describe), the name
		// the error gives.
		return strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	case w.Host != "":
		return w.Host
	}
	return "the destination"
}

func (w Written) hostPort() string {
	if w.Host == "" {
		return "the destination"
	}
	if w.Port == "" {
		return w.Host
	}
	return net.JoinHostPort(w.Host, w.Port)
}

// Explain turns the error of a send to w into the text its tenant reads on
// an attempt, a verification or a test event: what failed, naming the
// destination as the tenant wrote it ("dns: no such host example.invalid",
// "connect: connection refused by example.com:443", "destination
// example.com resolves to a private address (blocked)", "tls: certificate
// signed by unknown authority", "timeout after 15s"). It never carries an
// address a name resolved to, the hub's DNS resolver or a host name the
// tenant did not write: an error it has no words for keeps its own text
// with every address the tenant did not write replaced by <address>.
// timeout is the delivery timeout (0: not known). The whole error is for
// the server's log only (Detail).
func Explain(err error, w Written, timeout time.Duration) string {
	var (
		refused  *RefusedError
		proxyErr *ProxyError
		expired  ExpiredCertificateError
		op       *net.OpError
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		host     x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		ne       net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &expired):
		return expired.Error() // a date, not an address
	case errors.As(err, &proxyErr):
		// The egress proxy is the operator's: the tenant reads that the
		// hub's egress failed and how, never where (its address is in
		// the log).
		return proxyErr.TenantText()
	case errors.As(err, &refused):
		if refused.Host != "" && !w.wrote(refused.Host) && w.Host != "" {
			return "destination " + w.name("") + ": a broker address it gave resolves to a private address (blocked)"
		}
		return "destination " + w.name(refused.Host) + " resolves to a private address (blocked)"
	case errors.As(err, &dns):
		what := "no such host"
		switch {
		case dns.IsTimeout:
			what = "timeout resolving"
		case !dns.IsNotFound:
			what = "cannot resolve"
		}
		if !w.wrote(dns.Name) && w.Host != "" {
			return "dns: " + what + " a name the broker at " + w.Host + " gave"
		}
		return "dns: " + what + " " + w.name(dns.Name)
	case errors.Is(err, context.DeadlineExceeded):
		if timeout > 0 {
			return "timeout after " + timeout.String()
		}
		return "timeout: no answer within the delivery timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout: " + w.hostPort() + " did not answer in time"
	case errors.Is(err, context.Canceled):
		return "canceled: the hub stopped the attempt"
	case errors.As(err, &unknown):
		return "tls: certificate signed by unknown authority"
	case errors.As(err, &host):
		return "tls: certificate is not valid for " + w.name(host.Host)
	case errors.As(err, &invalid):
		return "tls: certificate is not valid (expired, not yet valid or not for this use)"
	case errors.As(err, &verify):
		return "tls: certificate verification failed"
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil:
		// The destination's alert: a client certificate it wants or
		// refuses, a version it does not speak.
		return "tls: the destination refused the handshake (" + op.Err.Error() + ")"
	case errors.As(err, &record):
		return "tls: " + w.hostPort() + " does not speak TLS"
	case errors.As(err, &alert):
		return "tls: handshake failed (" + alert.Error() + ")"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connect: connection refused by " + w.hostPort()
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connect: connection reset by " + w.hostPort()
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "connect: " + w.hostPort() + " is unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return w.hostPort() + " closed the connection without answering"
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return fmt.Sprintf("the destination's response headers exceed %d KiB", MaxResponseHeaderBytes>>10)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its URL may hold a secret in its query
	}
	return scrubAddrs(err.Error(), w)
}

// scrubAddrs replaces every IPv4 or IPv6 address (with or without a port)
// in s that w does not hold with <address>.
func scrubAddrs(s string, w Written) string {
	return addrPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Count(m, ":") < 2 && !strings.Contains(m, ".") {
			return m // "tcp:" or a time, not an address
		}
		host := m
		if ap, err := netip.ParseAddrPort(m); err == nil {
			host = ap.Addr().String()
		} else if h, _, err := net.SplitHostPort(m); err == nil {
			host = h
		}
		if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err != nil {
			return m // digits and colons that are no address: an ARN's ::123456789012:
		}
		if w.wrote(host) {
			return m
		}
		return "<address>"
	})
}

// TenantError is a send's error as its tenant reads it: Error is
// Explain's text; Unwrap, and Detail for the server's log, the whole error.
type TenantError struct {
	Text string
	Err  error
}

func (e *TenantError) Error() string { return e.Text }
func (e *TenantError) Unwrap() error { return e.Err }

// Detail is err whole, for the server's log (operators may read internal
// addresses): the error under a TenantError, else err's own text.
func Detail(err error) string {
	var te *TenantError
	if errors.As(err, &te) {
		return te.Err.Error()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
