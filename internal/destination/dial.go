package destination

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// Resolver looks up a host's addresses; *net.Resolver is one, tests inject
// their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialOptions configure NewDialer.
type DialOptions struct {
	AllowPrivate bool     // STREAMING_HUB_ALLOW_PRIVATE_SINKS
	Resolver     Resolver // nil means net.DefaultResolver
	// Proxy is STREAMING_HUB_EGRESS_PROXY (nil: dial directly): every
	// connection is a CONNECT tunnel through it to the address the
	// dialer resolved and checked, so the SSRF rule holds and the proxy
	// resolves nothing (docs/security.md#fixed-egress).
	Proxy *url.URL
}

// MaxResponseHeaderBytes bounds the headers of a webhook destination's
// answer.
const MaxResponseHeaderBytes = 64 << 10

// RefusedError is a destination refused at dial time: every address its
// name resolved to is private or special-purpose.
type RefusedError struct {
	Host  string
	Addrs []netip.Addr
}

// Error names the host and its addresses, for the server's log; a tenant
// reads Explain's text, which names neither the addresses nor a host they
// did not write.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("destination %s resolves to a private address %v: refused (STREAMING_HUB_ALLOW_PRIVATE_SINKS)", e.Host, e.Addrs)
}

// Dialer dials only public addresses (unless AllowPrivate), resolving
// names itself: the SSRF rule of webhooks, for broker destinations too. It
// is what drivers are given to dial with.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewDialer returns the dialer every driver dials with: the webhook's HTTP
// client and the brokers' connections.
func NewDialer(o DialOptions) Dialer {
	d := &dialer{allowPrivate: o.AllowPrivate, resolver: o.Resolver}
	if o.Proxy != nil {
		d.proxy = newProxy(o.Proxy)
	}
	if d.resolver == nil {
		d.resolver = net.DefaultResolver
	}
	d.net = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: d.control}
	return d
}

type dialer struct {
	allowPrivate bool
	resolver     Resolver
	net          net.Dialer
	proxy        *proxy // nil: direct
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port %q", portStr)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = d.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	var allowed []netip.Addr
	for _, a := range addrs {
		if d.allowPrivate || PublicAddr(a) {
			allowed = append(allowed, a.Unmap())
		}
	}
	if len(allowed) == 0 {
		return nil, &RefusedError{Host: host, Addrs: addrs}
	}
	var errs []error
	for _, a := range allowed {
		if d.proxy != nil {
			// The proxy is asked for the checked address, never the name.
			conn, err := d.proxy.dial(ctx, netip.AddrPortFrom(a, uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if pe, ok := errors.AsType[*ProxyError](err); ok && pe.Status == "" {
				return nil, err // the proxy is down: no other address would do better
			}
			errs = append(errs, err)
			continue
		}
		conn, err := d.net.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// control re-checks the address the socket actually connects to: a second
// line behind DialContext's check.
func (d *dialer) control(_, address string, _ syscall.RawConn) error {
	if d.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddr(ap.Addr()) {
		return &RefusedError{} // the address is not for tenants to see
	}
	return nil
}
