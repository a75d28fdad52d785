package config

import (
	"strings"
	"testing"
)

// STREAMING_HUB_EGRESS_PROXY (or its _FILE) is an http(s) proxy URL with
// optional credentials; a bad one stops the start naming the variable,
// never the value (which may hold a password). Unset, there is none.
func TestLoad_EgressProxy(t *testing.T) {
	if c, err := Load(Serve, env(serveEnv())); err != nil || c.EgressProxy != nil || Defaults(Serve).EgressProxy != nil {
		t.Fatalf("default: %v, %v", c.EgressProxy, err)
	}
	e := serveEnv()
	e["STREAMING_HUB_EGRESS_PROXY"] = "http://hub:s3cret@proxy.internal:3128"
	c, err := Load(Serve, env(e))
	if err != nil || c.EgressProxy == nil || c.EgressProxy.Host != "proxy.internal:3128" || c.EgressProxy.User.Username() != "hub" {
		t.Fatalf("from the variable: %v, %v", c.EgressProxy, err)
	}
	e = serveEnv()
	e["STREAMING_HUB_EGRESS_PROXY_FILE"] = writeSecret(t, "proxy", "https://hub:s3cret@proxy.internal\n")
	if c, err = Load(Serve, env(e)); err != nil || c.EgressProxy == nil || c.EgressProxy.String() != "https://hub:s3cret@proxy.internal" {
		t.Fatalf("from the file: %v, %v", c.EgressProxy, err)
	}
	for _, bad := range []string{"socks5://hub:s3cret@proxy:1080", "proxy:3128", "http://hub:s3cret@proxy:3128/path", "http://hub:s3cret@proxy:99999"} {
		e = serveEnv()
		e["STREAMING_HUB_EGRESS_PROXY"] = bad
		_, err := Load(Serve, env(e))
		if err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_EGRESS_PROXY") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
