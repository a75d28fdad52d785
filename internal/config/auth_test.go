package config_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

func pemKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func authServeEnv() map[string]string {
	e := production()
	delete(e, "STREAMING_HUB_ENV")
	delete(e, "STREAMING_HUB_AUTH_REQUIRED")
	return e
}

func loadRaw(mode config.Mode, env map[string]string) (config.Config, error) {
	return config.Load(mode, func(k string) string { return env[k] })
}

func TestLoad_AccessManager(t *testing.T) {
	// Defaults: off, 5s, no cache, not required outside production.
	c, err := loadRaw(config.Serve, authServeEnv())
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.Enabled || c.Auth.Timeout != 5*time.Second || c.Auth.CacheTTL != 0 || c.Auth.Required {
		t.Fatalf("defaults: %+v", c.Auth)
	}
	// lib-auth's names, unprefixed; the prefixed one wins.
	two := pemKey(t) + pemKey(t)
	env := authServeEnv()
	env["PLUGIN_AUTH_ENABLED"] = "true"
	env["PLUGIN_AUTH_ADDRESS"] = "http://wrong:4000"
	env["STREAMING_HUB_PLUGIN_AUTH_ADDRESS"] = "https://auth.internal:4000/"
	env["AUTH_JWT_VERIFY_CERT"] = two
	env["AUTH_JWT_ISSUER"] = "https://issuer"
	env["AUTH_TIMEOUT"] = "2s"
	env["AUTH_CACHE_TTL"] = "30s"
	env["TRUSTED_PROXIES"] = "10.0.0.0/8, fd00::/48"
	c, err = loadRaw(config.Serve, env)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Auth
	if !a.Enabled || a.Address != "https://auth.internal:4000" || len(a.Keys) != 2 || a.Issuer != "https://issuer" ||
		a.Timeout != 2*time.Second || a.CacheTTL != 30*time.Second || len(a.TrustedProxies) != 2 {
		t.Fatalf("read: %+v", a)
	}
	// The certificate from a file.
	path := filepath.Join(t.TempDir(), "cert.pem")
	os.WriteFile(path, []byte(pemKey(t)), 0o600)
	env = authServeEnv()
	env["AUTH_JWT_VERIFY_CERT_PATH"] = path
	if c, err = loadRaw(config.Serve, env); err != nil || len(c.Auth.Keys) != 1 {
		t.Fatalf("cert path: %v %d", err, len(c.Auth.Keys))
	}
	// Production requires it by default, but only warns: an explicit
	// AUTH_REQUIRED=true refuses to start without it.
	prod := production()
	delete(prod, "STREAMING_HUB_AUTH_REQUIRED")
	c, err = loadRaw(config.Serve, prod)
	if err != nil || !c.Auth.Required || !strings.Contains(c.AuthWarning(), "PLUGIN_AUTH_ENABLED is not true") {
		t.Fatalf("production without the access manager, AUTH_REQUIRED by default: %v %q", err, c.AuthWarning())
	}
	prod["STREAMING_HUB_AUTH_REQUIRED"] = "true"
	if _, err := loadRaw(config.Serve, prod); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_AUTH_REQUIRED: is true") {
		t.Fatalf("production without the access manager, AUTH_REQUIRED=true: %v", err)
	}
	delete(prod, "STREAMING_HUB_AUTH_REQUIRED")
	prod["PLUGIN_AUTH_ENABLED"] = "true"
	prod["PLUGIN_AUTH_ADDRESS"] = "http://auth:4000"
	if c, err := loadRaw(config.Serve, prod); err != nil || !c.Auth.Required {
		t.Fatalf("production with it: %v", err)
	}
	// The names are known: no warning for the prefixed ones.
	if w := config.Unknown([]string{"STREAMING_HUB_PLUGIN_AUTH_ENABLED=true", "STREAMING_HUB_TRUSTED_PROXIES=10.0.0.0/8", "STREAMING_HUB_AUTH_CACHE_TTL=1s"}); len(w) != 0 {
		t.Fatalf("unknown: %v", w)
	}
}

func TestLoad_AccessManagerErrors(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"PLUGIN_AUTH_ENABLED": "maybe"}, "PLUGIN_AUTH_ENABLED: must be true or false"},
		{map[string]string{"PLUGIN_AUTH_ENABLED": "true"}, "STREAMING_HUB_PLUGIN_AUTH_ADDRESS: required"},
		{map[string]string{"PLUGIN_AUTH_ADDRESS": "ftp://x"}, "PLUGIN_AUTH_ADDRESS: must be an http(s) URL"},
		{map[string]string{"AUTH_JWT_VERIFY_CERT": "nope"}, "AUTH_JWT_VERIFY_CERT: no PEM"},
		{map[string]string{"AUTH_JWT_VERIFY_CERT": "x", "AUTH_JWT_VERIFY_CERT_PATH": "/x"}, "AUTH_JWT_VERIFY_CERT: and AUTH_JWT_VERIFY_CERT_PATH are both set"},
		{map[string]string{"AUTH_JWT_VERIFY_CERT_PATH": "/nonexistent/cert.pem"}, "AUTH_JWT_VERIFY_CERT_PATH: cannot read"},
		{map[string]string{"AUTH_TIMEOUT": "0s"}, "AUTH_TIMEOUT: must be a positive"},
		{map[string]string{"AUTH_CACHE_TTL": "61s"}, "AUTH_CACHE_TTL: must be at most 60s"},
		{map[string]string{"AUTH_CACHE_TTL": "soon"}, "AUTH_CACHE_TTL: must be a Go duration"},
		{map[string]string{"TRUSTED_PROXIES": "0.0.0.0/0"}, "TRUSTED_PROXIES: \"0.0.0.0/0\" is broader"},
		{map[string]string{"TRUSTED_PROXIES": "fd00::/32"}, "TRUSTED_PROXIES: \"fd00::/32\" is broader"},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.1"}, "TRUSTED_PROXIES: \"10.0.0.1\" is not a CIDR"},
		{map[string]string{"AUTH_REQUIRED": "true"}, "AUTH_REQUIRED: is true"},
		{map[string]string{"STREAMING_HUB_AUTH_REQUIRED": "true"}, "STREAMING_HUB_AUTH_REQUIRED: is true"},
	} {
		env := authServeEnv()
		for k, v := range tc.set {
			env[k] = v
		}
		_, err := loadRaw(config.Serve, env)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want one line starting %q", tc.set, err, tc.want)
		}
	}
}
