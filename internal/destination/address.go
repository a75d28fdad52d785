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

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries, in
// every form that carries one (docs/security.md#destinations-and-the-ssrf-rule):
// IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96),
// IPv4-compatible (::/96), NAT64 (64:ff9b::/96, and 64:ff9b:1::/48 in its
// /96 form), 6to4 (2002::/16) and Teredo (2001::/32: its server, and its
// client obfuscated by XOR in the last 32 bits). embeds reports whether ip
// is one of those forms; addrs are then what it carries, none when where
// it carries them is the local network's choice (the rest of
// 64:ff9b:1::/48), so that it cannot be judged.
func embeddedIPv4(ip netip.Addr) (addrs []netip.Addr, embeds bool) {
	if !ip.Is6() {
		return nil, false
	}
	b := ip.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case zero(0, 10) && b[10] == 0xff && b[11] == 0xff: // ::ffff:a.b.c.d
		return []netip.Addr{last}, true
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && zero(10, 12): // ::ffff:0:a.b.c.d
		return []netip.Addr{last}, true
	case zero(0, 12): // ::a.b.c.d, :: and ::1 among them
		return []netip.Addr{last}, true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12): // 64:ff9b::a.b.c.d
		return []netip.Addr{last}, true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1: // 64:ff9b:1::/48
		if zero(6, 12) {
			return []netip.Addr{last}, true
		}
		return nil, true
	case b[0] == 0x20 && b[1] == 0x02: // 6to4
		return []netip.Addr{netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}, true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo
		server := netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{server, client}, true
	}
	return nil, false
}

// PublicAddr reports whether ip may be dialed as a destination: an
// address of no range of IANA's IPv4 and IPv6 special-purpose address
// registries (loopback, private, shared, link-local, documentation,
// benchmarking, protocol assignments, reserved, ...), nor multicast or a
// cloud's metadata service; IPv6 only within global unicast (2000::/3); an
// IPv6 address that carries an IPv4 address (embeddedIPv4) judged by the
// IPv4 address it carries.
func PublicAddr(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	// A zone (fe80::1%eth0) would keep the address out of every prefix.
	ip = ip.WithZone("")
	if v4s, embeds := embeddedIPv4(ip); embeds {
		for _, v4 := range v4s {
			if !publicIPv4(v4) {
				return false
			}
		}
		return len(v4s) > 0
	}
	if ip.Is4() {
		return publicIPv4(ip)
	}
	if !globalUnicast.Contains(ip) {
		return false
	}
	for _, p := range specialIPv6 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

func publicIPv4(ip netip.Addr) bool {
	for _, p := range specialIPv4 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// globalUnicast is the only IPv6 space a destination may be in (IANA's
// IPv6 address space registry): the rest is reserved, unique-local,
// link-local, site-local (fec0::/10) or multicast.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// specialIPv4 is IANA's IPv4 special-purpose address registry, every entry
// (the globally reachable anycast services among them: no webhook lives
// there), with multicast and the cloud metadata addresses.
var specialIPv4 = prefixes(
	"0.0.0.0/8",        // "this network" (0.0.0.0/32 "this host" within)
	"10.0.0.0/8",       // private use
	"100.64.0.0/10",    // shared address space (CGNAT)
	"127.0.0.0/8",      // loopback
	"169.254.0.0/16",   // link local (cloud metadata 169.254.169.254 within)
	"172.16.0.0/12",    // private use
	"192.0.0.0/24",     // IETF protocol assignments (its /29 and /32 entries within)
	"192.0.2.0/24",     // documentation (TEST-NET-1)
	"192.31.196.0/24",  // AS112-v4
	"192.52.193.0/24",  // AMT
	"192.88.99.0/24",   // deprecated 6to4 relay anycast
	"192.168.0.0/16",   // private use
	"192.175.48.0/24",  // direct delegation AS112 service
	"198.18.0.0/15",    // benchmarking
	"198.51.100.0/24",  // documentation (TEST-NET-2)
	"203.0.113.0/24",   // documentation (TEST-NET-3)
	"224.0.0.0/4",      // multicast
	"240.0.0.0/4",      // reserved (255.255.255.255 limited broadcast within)
	"168.63.129.16/32", // Azure's wire server
)

// specialIPv6 is IANA's IPv6 special-purpose address registry within
// 2000::/3, less the forms embeddedIPv4 judges (6to4, Teredo). The entries
// outside 2000::/3 (::1, ::, the IPv4 forms, 100::/64, 100:0:0:1::/64,
// 5f00::/16, fc00::/7, fe80::/10) fall to globalUnicast.
var specialIPv6 = prefixes(
	"2001::/23",         // IETF protocol assignments: benchmarking, AMT, AS112, ORCHID, drone ID, anycast services
	"2001:db8::/32",     // documentation
	"2620:4f:8000::/48", // direct delegation AS112 service
	"3fff::/20",         // documentation
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}
