package destination

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestValidateURL_RefusesEveryFormOfAPrivateHostAtCreate(t *testing.T) {
	for _, host := range []string{
		"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0", "0x0a000001", "167772161",
		"10.0.0.1", "0x7f.1", "017700000001", "localhost", "localhost.", "LOCALHOST", "api.localhost", "api.localhost.",
		"[::1]", "[2002:7f00:1::]", "[::127.0.0.1]", "[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "[64:ff9b::7f00:1]",
		"169.254.169.254", "0251.0376.0251.0376", "1.2.3.4.5", "99999999999", "[2001::1]", "[fe80::1]",
	} {
		if err := ValidateURL("https://"+host+"/hook", false); err == nil {
			t.Errorf("%s: accepted", host)
		} else if !strings.Contains(err.Error(), "private destinations are not allowed") {
			t.Errorf("%s: %v", host, err)
		}
		if err := ValidateURL("https://"+host+"/hook", true); err != nil {
			t.Errorf("%s with private sinks allowed: %v", host, err)
		}
	}
	for _, host := range []string{"example.com", "example.com.", "93.184.216.34", "[2606:2800:220:1:248:1893:25c8:1946]", "1a.example", "0x.example", "123.example.com"} {
		if err := ValidateURL("https://"+host+"/hook", false); err != nil {
			t.Errorf("%s: refused: %v", host, err)
		}
	}
}

func TestPublicAddr_JudgesEmbeddedIPv4ByTheAddressItCarries(t *testing.T) {
	for s, want := range map[string]bool{
		"2002:7f00:1::":    false, // 6to4 of 127.0.0.1
		"2002:0a00:1::":    false, // 6to4 of 10.0.0.1
		"2002:5db8:d822::": true,  // 6to4 of 93.184.216.34
		"::127.0.0.1":      false, // IPv4-compatible
		"::10.0.0.1":       false,
		"::93.184.216.34":  true,
		"::":               false,
		"::1":              false,
		"2001::1":          false, // Teredo
		"2606:4700::1111":  true,
	} {
		if got := PublicAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestDescribe_ShowsNoResolverOrResolvedAddress: what tenants read about a
// failed request names the problem, never the hub's network.
func TestDescribe_ShowsNoResolverOrResolvedAddress(t *testing.T) {
	refused := &RefusedError{Host: "evil.example", Addrs: []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}}
	cases := map[string]struct {
		err  error
		want string
	}{
		"refused": {refused, "destination evil.example resolves to a private address"},
		"dns not found": {&net.DNSError{Err: "no such host", Name: "0x7f000001", Server: "10.255.255.53:53", IsNotFound: true},
			"dns: no such host 0x7f000001"},
		"dns other":    {&net.DNSError{Err: "server misbehaving", Name: "a.example", Server: "10.255.255.53:53"}, "dns: cannot resolve a.example"},
		"dial":         {&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("93.184.216.34"), Port: 443}, Err: errors.New("some new failure")}, "<address>"},
		"unknown ipv6": {errors.New("dial tcp [2606:2800:220:1::1]:443: odd"), "dial tcp <address>: odd"},
	}
	for name, c := range cases {
		got := Describe(c.err)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to contain %q", name, got, c.want)
		}
		for _, leak := range []string{"10.255.255.53", "127.0.0.1", "93.184.216.34", "2606:2800"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: %q shows %s", name, got, leak)
			}
		}
	}
}
