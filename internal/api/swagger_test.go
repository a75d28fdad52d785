package api_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// get asks path with the Authorization header auth ("" for none).
func get(t *testing.T, base, method, path, auth string) (int, http.Header, []byte) {
	t.Helper()
	c := client{t, base, ""}
	if auth == "" {
		return c.do(method, path, "")
	}
	return c.do(method, path, "", "Authorization", auth)
}

func basic(password string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth("anyone", password)
	return req.Header.Get("Authorization")
}

// STREAMING_HUB_SWAGGER_ENABLED=true serves the API reference at /swagger
// behind the API's own credentials: as a bearer token, or as the password
// of HTTP Basic, which a browser asks for when the page answers 401 with
// its challenge. The page, its renderer and the document it renders are
// all behind them; the document is the API's own.
func TestSwagger_ServesTheReferenceBehindTheAPIsCredentials(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{swagger: true})
		key := h.tenant("acme").token

		for _, path := range []string{"/swagger", "/swagger/", "/swagger/app.js", "/swagger/app.css", "/swagger/openapi.json"} {
			for _, auth := range []string{"", "Bearer wrong-token-0123456789", basic("wrong-token-0123456789"), "Basic !!"} {
				st, hd, body := get(t, h.url, "GET", path, auth)
				if st != http.StatusUnauthorized || !strings.Contains(strings.Join(hd.Values("WWW-Authenticate"), ","), `Basic realm="streaming-hub API reference"`) {
					t.Fatalf("GET %s with %q: %d %v, want 401 with a Basic challenge", path, auth, st, hd.Values("WWW-Authenticate"))
				}
				if bytes.Contains(body, []byte("<html")) || bytes.Contains(body, []byte("openapi")) {
					t.Fatalf("GET %s with %q showed the reference: %s", path, auth, body)
				}
			}
		}

		_, _, want := get(t, h.url, "GET", "/v1/openapi.json", "")
		for _, auth := range []string{"Bearer " + adminToken, basic(adminToken), "Bearer " + key, basic(key)} {
			st, hd, body := get(t, h.url, "GET", "/swagger", auth)
			if st != 200 || hd.Get("Content-Type") != "text/html; charset=utf-8" || !bytes.Contains(body, []byte(`<script src="/swagger/app.js"`)) {
				t.Fatalf("GET /swagger with %.12q: %d %s %s", auth, st, hd.Get("Content-Type"), body)
			}
			if csp := hd.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
				t.Fatalf("CSP %q lets outside scripts in", csp)
			}
			st, hd, body = get(t, h.url, "GET", "/swagger/openapi.json", auth)
			if st != 200 || hd.Get("Content-Type") != "application/json" || !bytes.Equal(body, want) {
				t.Fatalf("GET /swagger/openapi.json: %d %s, not the API's document", st, hd.Get("Content-Type"))
			}
		}
		for path, ctype := range map[string]string{"/swagger/app.js": "text/javascript; charset=utf-8", "/swagger/app.css": "text/css; charset=utf-8"} {
			if st, hd, body := get(t, h.url, "GET", path, basic(adminToken)); st != 200 || hd.Get("Content-Type") != ctype || len(body) < 500 {
				t.Fatalf("GET %s: %d %s, %d bytes", path, st, hd.Get("Content-Type"), len(body))
			}
		}
		if st, _, _ := get(t, h.url, "GET", "/swagger/nothing", basic(adminToken)); st != 404 {
			t.Fatalf("GET /swagger/nothing: %d", st)
		}
		if st, hd, _ := get(t, h.url, "POST", "/swagger", basic(adminToken)); st != 405 || hd.Get("Allow") != "GET, HEAD" {
			t.Fatalf("POST /swagger: %d, Allow %q", st, hd.Get("Allow"))
		}
	})
}

// Off by default: nothing at /swagger.
func TestSwagger_OffByDefault(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{})
	if st, _, _ := get(t, h.url, "GET", "/swagger", "Bearer "+adminToken); st != 404 {
		t.Fatalf("GET /swagger without STREAMING_HUB_SWAGGER_ENABLED: %d, want 404", st)
	}
}

// The page is self-contained: nothing in it names another origin, so it
// renders with no network but the hub's (and the CSP would refuse more).
func TestSwagger_AssetsNameNoOtherOrigin(t *testing.T) {
	for _, f := range []string{"swagger/index.html", "swagger/app.js", "swagger/app.css"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{"://", `"//`, "'//", "(//"} { // absolute and protocol-relative URLs
			if bytes.Contains(b, []byte(other)) {
				t.Errorf("%s names another origin (%s)", f, other)
			}
		}
		for _, bad := range []string{"@import", "<iframe", "eval(", "innerHTML"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
}
