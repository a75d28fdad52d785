package app_test

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The dev banner names the console, and the URL it prints opens the
// sign-in page.
func TestDev_BannerPrintsTheConsoleURL(t *testing.T) {
	h, out := startDev(t, nil)
	m := regexp.MustCompile(`Console\s+(http://\S+/console/)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the banner names no console:\n%s", out)
	}
	if _, port, _ := net.SplitHostPort(h.HTTPAddr()); !strings.Contains(m[1], ":"+port+"/") {
		t.Fatalf("console URL %s is not on the API's port %s", m[1], h.HTTPAddr())
	}
	res, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), "<h1>Sign in</h1>") || res.Request.URL.Path != "/console/signin" {
		t.Fatalf("GET %s: %d at %s\n%s", m[1], res.StatusCode, res.Request.URL, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
}
