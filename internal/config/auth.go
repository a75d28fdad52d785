package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Auth is Lerian's access manager (lib-auth's plugin-auth,
// docs/lerian-platform.md). Its variables are read under lib-auth's names,
// and also with the STREAMING_HUB_ prefix: the prefixed one wins.
type Auth struct {
	// Enabled (PLUGIN_AUTH_ENABLED) sends JWT bearers to the access manager.
	Enabled bool
	// Address (PLUGIN_AUTH_ADDRESS) is the access manager's http(s) URL.
	Address string
	// Keys (AUTH_JWT_VERIFY_CERT or AUTH_JWT_VERIFY_CERT_PATH) verify a
	// JWT's RS256 signature; none: the signature is the access manager's
	// to check.
	Keys []*rsa.PublicKey
	// Issuer (AUTH_JWT_ISSUER), when set, must be a JWT's iss.
	Issuer string
	// Timeout (AUTH_TIMEOUT) bounds one call to the access manager.
	Timeout time.Duration
	// CacheTTL (AUTH_CACHE_TTL) keeps decisions; 0 keeps none.
	CacheTTL time.Duration
	// Required (AUTH_REQUIRED; true by default with ENV=production): set
	// explicitly to true, serve refuses to start without
	// PLUGIN_AUTH_ENABLED=true; by default it only warns at start, so a
	// production hub that never used the access manager keeps starting.
	Required bool
	// RequiredSet says AUTH_REQUIRED was given rather than defaulted.
	RequiredSet bool
	// TrustedProxies (TRUSTED_PROXIES) are the proxies whose
	// X-Forwarded-For hops are skipped to find the client's address.
	TrustedProxies []*net.IPNet
}

// MaxAuthCacheTTL bounds AUTH_CACHE_TTL.
const MaxAuthCacheTTL = 60 * time.Second

// authRaw reads a lib-auth variable: STREAMING_HUB_<name> wins over <name>.
func (r *reader) authRaw(name string) (string, bool) {
	if v, ok := r.raw(name); ok {
		return v, true
	}
	v := strings.TrimSpace(r.getenv(name))
	if v != "" {
		if r.bare == nil {
			r.bare = make(map[string]bool)
		}
		r.bare[name] = true
	}
	return v, v != ""
}

func (r *reader) auth(c *Config) {
	a := &c.Auth
	a.Required = strings.EqualFold(c.Env, envProduction)
	if s, ok := r.authRaw("PLUGIN_AUTH_ENABLED"); ok {
		r.parseBool("PLUGIN_AUTH_ENABLED", s, &a.Enabled)
	}
	if s, ok := r.authRaw("AUTH_REQUIRED"); ok {
		r.parseBool("AUTH_REQUIRED", s, &a.Required)
		a.RequiredSet = true
	}
	if s, ok := r.authRaw("PLUGIN_AUTH_ADDRESS"); ok {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.fail("PLUGIN_AUTH_ADDRESS", "must be an http(s) URL, got %q", s)
		} else {
			a.Address = strings.TrimRight(s, "/")
		}
	} else if a.Enabled {
		r.fail("PLUGIN_AUTH_ADDRESS", "required with PLUGIN_AUTH_ENABLED=true (the access manager's http(s) URL)")
	}
	cert, hasCert := r.authRaw("AUTH_JWT_VERIFY_CERT")
	path, hasPath := r.authRaw("AUTH_JWT_VERIFY_CERT_PATH")
	switch {
	case hasCert && hasPath:
		r.fail("AUTH_JWT_VERIFY_CERT", "and AUTH_JWT_VERIFY_CERT_PATH are both set: set only one of them")
	case hasCert:
		keys, err := ParseVerifyKeys([]byte(strings.ReplaceAll(cert, `\n`, "\n")))
		if err != nil {
			r.fail("AUTH_JWT_VERIFY_CERT", "%s", err)
		}
		a.Keys = keys
	case hasPath:
		b, err := os.ReadFile(path)
		if err != nil {
			r.fail("AUTH_JWT_VERIFY_CERT_PATH", "cannot read %q: %s", path, err)
			break
		}
		keys, err := ParseVerifyKeys(b)
		if err != nil {
			r.fail("AUTH_JWT_VERIFY_CERT_PATH", "%q: %s", path, err)
		}
		a.Keys = keys
	}
	if s, ok := r.authRaw("AUTH_JWT_ISSUER"); ok {
		a.Issuer = s
	}
	if s, ok := r.authRaw("AUTH_TIMEOUT"); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			r.fail("AUTH_TIMEOUT", "must be a positive Go duration such as 5s, got %q", s)
		} else {
			a.Timeout = d
		}
	}
	if s, ok := r.authRaw("AUTH_CACHE_TTL"); ok {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil || d < 0:
			r.fail("AUTH_CACHE_TTL", "must be a Go duration from 0 (off) to 60s, got %q", s)
		case d > MaxAuthCacheTTL:
			r.fail("AUTH_CACHE_TTL", "must be at most 60s, got %s", d)
		default:
			a.CacheTTL = d
		}
	}
	if s, ok := r.authRaw("TRUSTED_PROXIES"); ok {
		nets, err := ParseTrustedProxies(s)
		if err != nil {
			r.fail("TRUSTED_PROXIES", "%s", err)
		}
		a.TrustedProxies = nets
	}
}

// checkAuth: AUTH_REQUIRED=true, given explicitly, makes serve refuse to
// start without the access manager. Its default under ENV=production only
// warns (AuthWarning), so an upgrade never stops a running production hub.
func (c Config) checkAuth(r *reader) {
	if c.Mode == Serve && c.Auth.Required && c.Auth.RequiredSet && !c.Auth.Enabled && !r.bad["PLUGIN_AUTH_ENABLED"] && !r.bad["AUTH_REQUIRED"] {
		r.fail("AUTH_REQUIRED", "is true but PLUGIN_AUTH_ENABLED is not: set PLUGIN_AUTH_ENABLED=true and PLUGIN_AUTH_ADDRESS, or AUTH_REQUIRED=false")
	}
}

// AuthWarning is what serve logs at start when AUTH_REQUIRED is true by
// default (ENV=production) but the access manager is off; "" otherwise.
func (c Config) AuthWarning() string {
	if c.Mode == Serve && c.Auth.Required && !c.Auth.RequiredSet && !c.Auth.Enabled {
		return "ENV=production and PLUGIN_AUTH_ENABLED is not true: only the hub's own admin token and API keys are accepted; set PLUGIN_AUTH_ENABLED=true with PLUGIN_AUTH_ADDRESS, or AUTH_REQUIRED=false to silence this (AUTH_REQUIRED=true refuses to start without it)"
	}
	return ""
}

// AuthVerifyNotice is the line serve logs at start when the access manager
// is on without a verify certificate: JWT signatures are then the access
// manager's to check, and a token's claims count only for a request it
// authorized with that token (docs/lerian-platform.md#lerians-access-manager).
// "" when a certificate is set or the access manager is off.
func (c Config) AuthVerifyNotice() string {
	if !c.Auth.Enabled || len(c.Auth.Keys) > 0 {
		return ""
	}
	return "PLUGIN_AUTH_ENABLED=true without AUTH_JWT_VERIFY_CERT (or AUTH_JWT_VERIFY_CERT_PATH): JWT signatures are left to the access manager; a token's claims are used only for requests it authorized with that very token"
}

func (r *reader) parseBool(name, s string, v *bool) {
	switch strings.ToLower(s) {
	case "true", "1", "t", "yes":
		*v = true
	case "false", "0", "f", "no":
		*v = false
	default:
		r.fail(name, "must be true or false, got %q", s)
	}
}

// ParseVerifyKeys reads PEM blocks: certificates, PKIX public keys or
// PKCS#1 RSA public keys, several for a rotation. Every key must be RSA.
func ParseVerifyKeys(b []byte) ([]*rsa.PublicKey, error) {
	var keys []*rsa.PublicKey
	for n := 1; ; n++ {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		var pub any
		var err error
		switch block.Type {
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = cert.PublicKey
			}
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		default:
			return nil, fmt.Errorf("PEM block %d is a %q: want CERTIFICATE, PUBLIC KEY or RSA PUBLIC KEY", n, block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %s", n, err)
		}
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("PEM block %d is not an RSA key (RS256 only)", n)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no PEM certificate or public key found")
	}
	return keys, nil
}

// ParseTrustedProxies reads comma-separated CIDRs, none broader than /8
// (IPv4) or /48 (IPv6).
func ParseTrustedProxies(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		_, n, err := net.ParseCIDR(e)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", e)
		}
		ones, bits := n.Mask.Size()
		if bits == 32 && ones < 8 || bits == 128 && ones < 48 {
			return nil, fmt.Errorf("%q is broader than /8 (IPv4) or /48 (IPv6)", e)
		}
		out = append(out, n)
	}
	return out, nil
}
