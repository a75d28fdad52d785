package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --client-cert, --client-key and --ca-certs send the files' PEM as the
// destination's mutual TLS fields, --tls-min-version the version; on
// update "none" clears them.
func TestSubscriptionsMutualTLSFlags(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body = nil
		json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"sub_1","name":"bank","event_types":[],"destination":{"type":"webhook","url":"https://bank.example/hook"}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	files := map[string]string{"cert.pem": "CERT PEM\n", "key.pem": "KEY PEM\n", "ca.pem": "CA PEM\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := newCLI(t, srv.URL, "tok")
	c.ok("subscriptions", "create", "--name", "bank", "--event-type", "transaction.posted@1", "--url", "https://bank.example/hook",
		"--client-cert", filepath.Join(dir, "cert.pem"), "--client-key", filepath.Join(dir, "key.pem"),
		"--ca-certs", filepath.Join(dir, "ca.pem"), "--tls-min-version", "1.3")
	d, _ := body["destination"].(map[string]any)
	if d["client_certificate"] != "CERT PEM\n" || d["client_key"] != "KEY PEM\n" || d["ca_certificates"] != "CA PEM\n" || d["tls_min_version"] != "1.3" {
		t.Fatalf("create sent %v", d)
	}
	c.ok("subscriptions", "update", "sub_1", "--client-cert", "none", "--ca-certs", "none", "--tls-min-version", "none")
	d, _ = body["destination"].(map[string]any)
	for _, f := range []string{"client_certificate", "ca_certificates", "tls_min_version"} {
		if v, ok := d[f]; !ok || v != nil {
			t.Fatalf("update sent %s = %v, want null (%v)", f, v, d)
		}
	}
	if errOut := c.fail(exitUsage, "subscriptions", "update", "sub_1", "--tls-min-version", "1.1"); !strings.Contains(errOut, "--tls-min-version") {
		t.Fatalf("a bad --tls-min-version: %s", errOut)
	}
}
