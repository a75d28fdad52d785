package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Resolver looks up a host's addresses; *net.Resolver is one, tests inject
// their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ClientOptions configure NewClient.
type ClientOptions struct {
	Timeout      time.Duration // whole attempt: STREAMING_HUB_DELIVERY_TIMEOUT
	AllowPrivate bool          // STREAMING_HUB_ALLOW_PRIVATE_SINKS
	Resolver     Resolver      // nil means net.DefaultResolver
}

// MaxResponseHeaderBytes bounds the headers of a destination's answer.
const MaxResponseHeaderBytes = 64 << 10

// RefusedError is a destination refused at dial time: every address its
// name resolved to is private or special-purpose.
type RefusedError struct {
	Host  string
	Addrs []netip.Addr
}

func (e *RefusedError) Error() string {
	return Describe(e)
}

// NewClient returns the HTTP client for destinations. It resolves names
// itself and dials only public addresses (unless AllowPrivate), so a name
// that resolves to a private address - at create time or any time after -
// is refused. It never follows redirects and ignores proxy variables.
func NewClient(o ClientOptions) (*http.Client, error) {
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("webhook.ClientOptions: Timeout must be positive, got %v", o.Timeout)
	}
	d := newDialer(o)
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			DialContext:       d.DialContext,
			ForceAttemptHTTP2: true,
			// Workers reuse connections: a busy destination keeps one
			// per concurrent attempt instead of dialing for each.
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			// A receiver flooding headers cannot make the hub hold
			// megabytes per attempt (Go's default is 10 MiB).
			MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// Dialer dials only public addresses (unless AllowPrivate), resolving
// names itself: the SSRF rule of webhooks, for broker destinations too.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewDialer returns the dialer NewClient's requests use (o.Timeout is not
// used).
func NewDialer(o ClientOptions) Dialer { return newDialer(o) }

func newDialer(o ClientOptions) *dialer {
	d := &dialer{allowPrivate: o.AllowPrivate, resolver: o.Resolver}
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
