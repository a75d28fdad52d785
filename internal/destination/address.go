package destination

import (
	"net/netip"
	"net/url"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// ValidateURL checks a destination URL: absolute http(s) with a host, https
// unless private sinks are allowed, and no literal private address then.
// Hostnames are checked again at dial time, after DNS.
func ValidateURL(raw string, allowPrivate bool) error {
	return ValidateHTTPURL("destination.url", raw, allowPrivate)
}

// ValidateHTTPURL is ValidateURL for any URL the hub sends to (field names
// it in the error): a webhook's, or its OAuth 2.0 token URL.
func ValidateHTTPURL(field, raw string, allowPrivate bool) error {
	if len(raw) > hub.MaxURLBytes {
		return hub.Errorf(hub.EINVALID, "%s: at most %d bytes", field, hub.MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return hub.Errorf(hub.EINVALID, "%s: must be an absolute http(s) URL", field)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return hub.Errorf(hub.EINVALID, "%s: must be https", field)
		}
	default:
		return hub.Errorf(hub.EINVALID, "%s: must be an absolute http(s) URL", field)
	}
	if u.User != nil {
		return hub.Errorf(hub.EINVALID, "%s: credentials in the URL are not allowed; use destination.auth", field)
	}
	if u.Fragment != "" {
		return hub.Errorf(hub.EINVALID, "%s: must not have a fragment", field)
	}
	if !allowPrivate && !publicHost(u.Hostname()) {
		return hub.Errorf(hub.EINVALID, "%s: private destinations are not allowed", field)
	}
	return nil
}

// ValidateHost checks a broker host (field names it in the error): not a
// private name or address literal unless private sinks are allowed. Like a
// webhook's, the name is checked again at dial time, after DNS.
func ValidateHost(field, host string, allowPrivate bool) error {
	if host == "" {
		return hub.Errorf(hub.EINVALID, "%s: a host is required", field)
	}
	if !allowPrivate && !publicHost(host) {
		return hub.Errorf(hub.EINVALID, "%s: private destinations are not allowed", field)
	}
	return nil
}

// publicHost reports whether a URL's host may name a public destination
// before DNS: not localhost (with or without the trailing dot), not a private
// address literal in any of the forms resolvers accept (127.1, 2130706433,
// 0x7f000001, 0177.0.0.1, 0, [::127.0.0.1], [2002:7f00:1::], ...). A host
// made of numbers alone is an address, never a name, so one that is not a
// plain public IPv4 is refused whatever it would mean.
func publicHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return PublicAddr(ip)
	}
	if ip, numeric := looseIPv4(h); numeric {
		return ip.IsValid() && PublicAddr(ip)
	}
	return true
}

// looseIPv4 reads host as inet_aton does: one to four parts, each decimal,
// octal (leading 0) or hexadecimal (0x), the last filling the remaining
// bytes. numeric reports whether every part looked like a number at all;
// ip is invalid when they did but overflowed.
func looseIPv4(host string) (ip netip.Addr, numeric bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, allNumeric(parts)
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, true
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, true
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func allNumeric(parts []string) bool {
	for _, p := range parts {
		if _, ok := parseNumber(p); !ok {
			return false
		}
	}
	return true
}

// parseNumber reads a decimal, 0-octal or 0x-hex number; an overlong one
// still counts as a number (ok) but saturates.
func parseNumber(p string) (uint64, bool) {
	base, digits := 10, p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if p == "" || (digits == "" && base != 16) {
		return 0, false
	}
	var v uint64
	for _, c := range digits {
		d := strings.IndexRune("0123456789abcdef", c)
		if d < 0 || d >= base {
			return 0, false
		}
		if v < 1<<40 {
			v = v*uint64(base) + uint64(d)
		}
	}
	return v, true
}

// embeddedIPv4 returns the IPv4 address that an IPv6 address carries and
// that routers act on: 6to4 (2002::/16) and the deprecated IPv4-compatible
// form (::a.b.c.d).
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || ip.Is4In6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	if b[0] == 0x20 && b[1] == 0x02 {
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	for _, x := range b[:12] {
		if x != 0 {
			return netip.Addr{}, false
		}
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
}

// PublicAddr reports whether ip may be dialed as a webhook destination: not
// loopback, private, link-local, CGNAT, unspecified, multicast, cloud
// metadata or another special-purpose range.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if v4, ok := embeddedIPv4(ip); ok {
		ip = v4
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range specialPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var specialPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",          // "this network"
		"100.64.0.0/10",      // CGNAT
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // TEST-NET-1
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // TEST-NET-2
		"203.0.113.0/24",     // TEST-NET-3
		"240.0.0.0/4",        // reserved, and broadcast
		"64:ff9b::/96",       // NAT64 can reach IPv4 private space
		"64:ff9b:1::/48",     // local-use NAT64
		"100::/64",           // discard
		"2001::/32",          // Teredo: an obfuscated IPv4 inside
		"2001:db8::/32",      // documentation
		"fd00:ec2::254/128",  // AWS metadata over IPv6 (also inside fc00::/7)
		"169.254.169.254/32", // cloud metadata (also link-local)
		"168.63.129.16/32",   // Azure wire server
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()
