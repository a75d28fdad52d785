package destination

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// IANA's special-purpose address registries, written out here apart from
// the code: every entry, IPv4 and IPv6
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry), with
// the other space no destination is in (multicast, IPv6 outside global
// unicast). Entries that carry an IPv4 address are in embeddingForms.
var specialRegistry = []struct{ prefix, name string }{
	{"0.0.0.0/8", "this network"},
	{"0.0.0.0/32", "this host on this network"},
	{"10.0.0.0/8", "private-use"},
	{"100.64.0.0/10", "shared address space"},
	{"127.0.0.0/8", "loopback"},
	{"169.254.0.0/16", "link local"},
	{"172.16.0.0/12", "private-use"},
	{"192.0.0.0/24", "IETF protocol assignments"},
	{"192.0.0.0/29", "IPv4 service continuity prefix"},
	{"192.0.0.8/32", "IPv4 dummy address"},
	{"192.0.0.9/32", "port control protocol anycast"},
	{"192.0.0.10/32", "traversal using relays around NAT anycast"},
	{"192.0.0.170/32", "NAT64/DNS64 discovery"},
	{"192.0.0.171/32", "NAT64/DNS64 discovery"},
	{"192.0.2.0/24", "documentation (TEST-NET-1)"},
	{"192.31.196.0/24", "AS112-v4"},
	{"192.52.193.0/24", "AMT"},
	{"192.88.99.0/24", "deprecated (6to4 relay anycast)"},
	{"192.168.0.0/16", "private-use"},
	{"192.175.48.0/24", "direct delegation AS112 service"},
	{"198.18.0.0/15", "benchmarking"},
	{"198.51.100.0/24", "documentation (TEST-NET-2)"},
	{"203.0.113.0/24", "documentation (TEST-NET-3)"},
	{"240.0.0.0/4", "reserved"},
	{"255.255.255.255/32", "limited broadcast"},
	{"224.0.0.0/4", "multicast"},

	{"::1/128", "loopback address"},
	{"::/128", "unspecified address"},
	{"100::/64", "discard-only address block"},
	{"100:0:0:1::/64", "dummy IPv6 prefix"},
	{"2001::/23", "IETF protocol assignments"},
	{"2001:1::1/128", "port control protocol anycast"},
	{"2001:1::2/128", "traversal using relays around NAT anycast"},
	{"2001:1::3/128", "DNS-SD service registration protocol anycast"},
	{"2001:2::/48", "benchmarking"},
	{"2001:3::/32", "AMT"},
	{"2001:4:112::/48", "AS112-v6"},
	{"2001:10::/28", "deprecated (previously ORCHID)"},
	{"2001:20::/28", "ORCHIDv2"},
	{"2001:30::/28", "drone remote ID protocol entity tags"},
	{"2001:db8::/32", "documentation"},
	{"2620:4f:8000::/48", "direct delegation AS112 service"},
	{"3fff::/20", "documentation"},
	{"5f00::/16", "segment routing (SRv6) SIDs"},
	{"fc00::/7", "unique-local"},
	{"fe80::/10", "link-local unicast"},
	{"fec0::/10", "site-local (deprecated, outside global unicast)"},
	{"ff00::/8", "multicast"},
	{"4000::/3", "unassigned (outside global unicast)"},
}

// embeddingForms carry an IPv4 address: each is judged by the address it
// carries, written here as a function of it.
var embeddingForms = []struct {
	name  string
	embed func(v4 [4]byte) string
}{
	{"IPv4-mapped ::ffff:0:0/96", func(a [4]byte) string { return "::ffff:" + v4(a) }},
	{"IPv4-translated ::ffff:0:0:0/96", func(a [4]byte) string { return "::ffff:0:" + v4(a) }},
	{"IPv4-compatible ::/96", func(a [4]byte) string { return "::" + v4(a) }},
	{"NAT64 64:ff9b::/96", func(a [4]byte) string { return "64:ff9b::" + v4(a) }},
	{"local-use NAT64 64:ff9b:1::/48, /96 form", func(a [4]byte) string { return "64:ff9b:1::" + v4(a) }},
	{"6to4 2002::/16", func(a [4]byte) string { return "2002:" + hex16(a[0], a[1]) + ":" + hex16(a[2], a[3]) + "::1" }},
	{"Teredo 2001::/32 (client)", func(a [4]byte) string {
		// A public server (8.8.4.4); the client XOR-obfuscated.
		return "2001:0:808:404:0:fbff:" + hex16(^a[0], ^a[1]) + ":" + hex16(^a[2], ^a[3])
	}},
	{"Teredo 2001::/32 (server)", func(a [4]byte) string {
		// A public client (8.8.4.4, obfuscated).
		return "2001:0:" + hex16(a[0], a[1]) + ":" + hex16(a[2], a[3]) + ":0:fbff:f7f7:fbfb"
	}},
}

func v4(a [4]byte) string { return netip.AddrFrom4(a).String() }

func hex16(hi, lo byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[hi>>4], digits[hi&15], digits[lo>>4], digits[lo&15]})
}

// firstMiddleLast are three addresses of p.
func firstMiddleLast(p netip.Prefix) []netip.Addr {
	first := p.Masked().Addr()
	b := first.AsSlice()
	last := make([]byte, len(b))
	middle := make([]byte, len(b))
	copy(last, b)
	copy(middle, b)
	for i := p.Bits(); i < len(b)*8; i++ {
		last[i/8] |= 0x80 >> (i % 8)
	}
	if p.Bits() < len(b)*8 {
		middle[p.Bits()/8] |= 0x80 >> (p.Bits() % 8)
		middle[len(b)-1] |= 1
	}
	l, _ := netip.AddrFromSlice(last)
	m, _ := netip.AddrFromSlice(middle)
	return []netip.Addr{first, m, l}
}

func TestPublicAddr_RefusesEveryRangeOfTheSpecialPurposeRegistries(t *testing.T) {
	for _, e := range specialRegistry {
		for _, a := range firstMiddleLast(netip.MustParsePrefix(e.prefix)) {
			if PublicAddr(a) {
				t.Errorf("%s (%s, %s): public", a, e.prefix, e.name)
			}
		}
	}
	// The first addresses past some of them are public.
	for _, s := range []string{"1.0.0.1", "9.255.255.255", "11.0.0.0", "100.128.0.0", "172.32.0.0", "192.0.1.1",
		"192.88.100.1", "198.20.0.0", "223.255.255.255", "8.8.8.8",
		"2001:200::1", "2001:db9::1", "2620:4f:8001::1", "3fff:1000::1", "2606:4700::1111", "2a00:1450:4001::1"} {
		if !PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s: refused", s)
		}
	}
}

func TestPublicAddr_JudgesEveryIPv4EmbeddingFormByTheAddressItCarries(t *testing.T) {
	private := [][4]byte{{127, 0, 0, 1}, {169, 254, 169, 254}, {10, 0, 0, 1}, {192, 168, 1, 1}, {100, 64, 0, 1},
		{192, 88, 99, 1}, {0, 0, 0, 0}, {224, 0, 0, 1}, {255, 255, 255, 255}, {192, 0, 0, 170}}
	for _, f := range embeddingForms {
		for _, a := range private {
			s := f.embed(a)
			if PublicAddr(netip.MustParseAddr(s)) {
				t.Errorf("%s: %s carries %s, judged public", f.name, s, v4(a))
			}
		}
		s := f.embed([4]byte{93, 184, 216, 34})
		if !PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s: %s carries 93.184.216.34, refused", f.name, s)
		}
	}
	// 64:ff9b:1::/48 in any other form is the local network's layout:
	// it cannot be judged, and is refused.
	for _, s := range []string{"64:ff9b:1:5db8:d8:2200::", "64:ff9b:1:1::5db8:d822", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"} {
		if PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s: public", s)
		}
	}
	// A zone does not take an address out of its range.
	if PublicAddr(netip.MustParseAddr("fe80::1%eth0")) || PublicAddr(netip.MustParseAddr("2001:db8::1%eth0")) {
		t.Error("a zoned special address judged public")
	}
}

// The literals a security test found accepted, refused at create time and
// at dial time; with private sinks allowed, accepted as before.
func TestSpecialPurposeLiterals_RefusedAtCreateAndAtDial(t *testing.T) {
	hosts := []string{"[::ffff:0:7f00:1]", "[::ffff:0:a9fe:a9fe]", "[fec0::1]", "[feff::1]", "[2001:10::1]", "[3fff::1]", "[5f00::1]", "192.88.99.1"}
	for _, h := range hosts {
		if err := ValidateURL("https://"+h+"/hook", false); err == nil || !strings.Contains(err.Error(), "private destinations are not allowed") {
			t.Errorf("create %s: %v", h, err)
		}
		if err := ValidateHost("destination.brokers", strings.Trim(h, "[]"), false); err == nil {
			t.Errorf("broker host %s: accepted", h)
		}
		if err := ValidateURL("https://"+h+"/hook", true); err != nil {
			t.Errorf("create %s with private sinks allowed: %v", h, err)
		}
		// At dial time: written literally, and as what a name resolves to.
		d := NewDialer(DialOptions{Resolver: resolveTo(strings.Trim(h, "[]"))})
		for _, addr := range []string{h + ":443", "evil.example:443"} {
			conn, err := d.DialContext(context.Background(), "tcp", addr)
			if conn != nil {
				conn.Close()
			}
			if _, ok := errors.AsType[*RefusedError](err); !ok {
				t.Errorf("dial %s (%s): %v, want it refused", addr, h, err)
			}
		}
	}
}

type resolveTo string

func (r resolveTo) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr(string(r))}, nil
}
