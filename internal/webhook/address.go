package webhook

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
	if len(raw) > hub.MaxURLBytes {
		return hub.Errorf(hub.EINVALID, "destination.url: at most %d bytes", hub.MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return hub.Errorf(hub.EINVALID, "destination.url: must be an absolute http(s) URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return hub.Errorf(hub.EINVALID, "destination.url: must be https")
		}
	default:
		return hub.Errorf(hub.EINVALID, "destination.url: must be an absolute http(s) URL")
	}
	if u.User != nil {
		return hub.Errorf(hub.EINVALID, "destination.url: credentials in the URL are not allowed; use destination.auth")
	}
	if u.Fragment != "" {
		return hub.Errorf(hub.EINVALID, "destination.url: must not have a fragment")
	}
	if !allowPrivate {
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
			return hub.Errorf(hub.EINVALID, "destination.url: private destinations are not allowed")
		}
		if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
			return hub.Errorf(hub.EINVALID, "destination.url: private destinations are not allowed")
		}
	}
	return nil
}

// PublicAddr reports whether ip may be dialed as a webhook destination: not
// loopback, private, link-local, CGNAT, unspecified, multicast, cloud
// metadata or another special-purpose range.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
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
		"2001:db8::/32",      // documentation
		"fd00:ec2::254/128",  // AWS metadata over IPv6 (also inside fc00::/7)
		"169.254.169.254/32", // cloud metadata (also link-local)
		"168.63.129.16/32",   // Azure wire server
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()
