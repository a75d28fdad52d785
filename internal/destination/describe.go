package destination

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"
)

// Describe turns a failed request's error into what a tenant may read (on
// an attempt, a probe outcome, last_error): what went wrong, never the hub's
// resolver address, the address a name resolved to, or the URL (whose query
// may hold a secret). "resolves to a private address" is enough.
func Describe(err error) string {
	var (
		refused  *RefusedError
		proxyErr *ProxyError
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		host     x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		ne       net.Error
		op       *net.OpError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &proxyErr):
		return proxyErr.describe()
	case errors.As(err, &refused):
		name := "destination"
		if refused.Host != "" {
			name += " " + refused.Host
		}
		return name + " resolves to a private address: refused (STREAMING_HUB_ALLOW_PRIVATE_SINKS)"
	case errors.As(err, &dns):
		switch {
		case dns.IsNotFound:
			return "cannot resolve " + dns.Name + ": no such host"
		case dns.IsTimeout:
			return "cannot resolve " + dns.Name + ": DNS timeout"
		}
		return "cannot resolve " + dns.Name + ": DNS failure"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout: no answer within the delivery timeout"
	case errors.Is(err, context.Canceled):
		return "canceled: the hub stopped the attempt"
	case errors.As(err, &unknown):
		return "TLS: certificate signed by unknown authority"
	case errors.As(err, &host):
		return "TLS: certificate is not valid for " + host.Host
	case errors.As(err, &invalid):
		return "TLS: certificate is not valid (expired, not yet valid or not for this use)"
	case errors.As(err, &verify):
		return "TLS: certificate verification failed"
	case errors.As(err, &op) && op.Op == "remote error" && op.Err != nil:
		// The destination's alert: a client certificate it wants or
		// refuses, a version it does not speak.
		return "TLS: the destination refused the handshake (" + op.Err.Error() + ")"
	case errors.As(err, &record):
		return "TLS: the destination does not speak TLS"
	case errors.As(err, &alert):
		return "TLS: handshake failed (" + alert.Error() + ")"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by the destination"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "destination unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the destination closed the connection without answering"
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return fmt.Sprintf("the destination's response headers exceed %d KiB", MaxResponseHeaderBytes>>10)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return scrubAddrs(err.Error())
}

// addrPattern finds IPv4 and IPv6 addresses, with or without a port.
var addrPattern = regexp.MustCompile(`\[?[0-9a-fA-F]*:[0-9a-fA-F:.]+\]?(:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`)

// scrubAddrs hides what an error the cases above do not know says of
// addresses.
func scrubAddrs(s string) string {
	return addrPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Count(m, ":") < 2 && !strings.Contains(m, ".") {
			return m // "tcp:" or a time, not an address
		}
		return "<address>"
	})
}

// Described is err with Describe's text, for a tenant to read; errors.As
// and errors.Is still see err.
func Described(err error) error {
	if err == nil {
		return nil
	}
	return describedError{err}
}

type describedError struct{ err error }

func (e describedError) Error() string { return Describe(e.err) }
func (e describedError) Unwrap() error { return e.err }
