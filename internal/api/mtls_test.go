package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// mtlsReceiver is an https receiver of a private CA that demands a client
// certificate of that CA and echoes probe challenges.
func mtlsReceiver(t *testing.T, pki *testkit.PKI) (*httptest.Server, *int) {
	t.Helper()
	var got int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got++
		var p struct{ Challenge string }
		json.NewDecoder(r.Body).Decode(&p)
		w.Write([]byte(p.Challenge))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = pki.ServerTLS(true)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &got
}

// js is s as a JSON string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func leafSHA256(certPEM []byte) string {
	b, _ := pem.Decode(certPEM)
	sum := sha256.Sum256(b.Bytes)
	return hex.EncodeToString(sum[:])
}

type mtlsAnswer struct {
	ID          string `json:"id"`
	Destination struct {
		SHA256    string     `json:"client_certificate_sha256"`
		ExpiresAt *time.Time `json:"client_certificate_expires_at"`
		CAs       string     `json:"ca_certificates"`
		MinVer    string     `json:"tls_min_version"`
	} `json:"destination"`
}

// A subscription with a client certificate: its answer shows the
// certificate's SHA-256 and expiry, never the key (nor is the key stored
// in the clear); the verification probe and the test event reach a
// receiver that demands the certificate; a PATCH that omits the fields
// keeps them and null clears them.
func TestSubscriptionMutualTLS_AnswerProbeTestEventAndPatch(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		pki := testkit.NewPKI(t)
		srv, got := mtlsReceiver(t, pki)
		body := `{"name":"bank","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"` + srv.URL + `","client_certificate":` + js(string(pki.Client.CertPEM)) +
			`,"client_key":` + js(string(pki.Client.KeyPEM)) + `,"ca_certificates":` + js(string(pki.CA.CertPEM)) + `,"tls_min_version":"1.3"}}`
		status, _, raw := acme.do("POST", "/v1/subscriptions", body)
		if status != 201 {
			t.Fatalf("create: %d %s", status, raw)
		}
		var sub mtlsAnswer
		json.Unmarshal(raw, &sub)
		if sub.Destination.SHA256 != leafSHA256(pki.Client.CertPEM) || sub.Destination.ExpiresAt == nil ||
			sub.Destination.CAs != string(pki.CA.CertPEM) || sub.Destination.MinVer != "1.3" {
			t.Fatalf("answer %s", raw)
		}
		if strings.Contains(string(raw), "PRIVATE KEY") || strings.Contains(string(raw), "client_key") || strings.Contains(string(raw), `"client_certificate"`) {
			t.Fatalf("the answer shows the key or the certificate: %s", raw)
		}
		stored, err := h.store.GetSubscription(context.Background(), "acme", sub.ID)
		if err != nil || strings.Contains(string(stored.Secrets), "PRIVATE KEY") || stored.Destination.ClientCertificate == "" {
			t.Fatalf("stored %+v, %v", stored.Destination, err)
		}

		acme.json("POST", "/v1/subscriptions/"+sub.ID+"/verify", "", 200, nil)
		var res struct {
			StatusCode *int    `json:"status_code"`
			Error      *string `json:"error"`
		}
		acme.json("POST", "/v1/subscriptions/"+sub.ID+"/test", "", 200, &res)
		if res.Error != nil || res.StatusCode == nil || *res.StatusCode != 200 || *got != 2 {
			t.Fatalf("test event: %+v, receiver got %d", res, *got)
		}

		var patched mtlsAnswer
		acme.json("PATCH", "/v1/subscriptions/"+sub.ID, `{"name":"bank 2"}`, 200, &patched)
		if patched.Destination.SHA256 != sub.Destination.SHA256 || patched.Destination.MinVer != "1.3" {
			t.Fatalf("a PATCH without the fields changed them: %+v", patched.Destination)
		}
		patched = mtlsAnswer{} // absent fields would keep the last answer's
		acme.json("PATCH", "/v1/subscriptions/"+sub.ID, `{"destination":{"client_certificate":null,"tls_min_version":null}}`, 200, &patched)
		if patched.Destination.SHA256 != "" || patched.Destination.ExpiresAt != nil || patched.Destination.MinVer != "" || patched.Destination.CAs == "" {
			t.Fatalf("after null: %+v", patched.Destination)
		}
		// Without its certificate the receiver refuses the test event.
		acme.json("POST", "/v1/subscriptions/"+sub.ID+"/test", "", 200, &res)
		if res.Error == nil || !strings.Contains(*res.Error, "certificate required") {
			t.Fatalf("test event without the certificate: %+v", res)
		}
		// The key went with its certificate: a new certificate alone is
		// not enough.
		status, _, raw = acme.do("PATCH", "/v1/subscriptions/"+sub.ID, `{"destination":{"client_certificate":`+js(string(pki.Client.CertPEM))+`}}`)
		if status != 400 || !strings.Contains(string(raw), "destination.client_key") {
			t.Fatalf("certificate without key: %d %s", status, raw)
		}
	})
}

// Bad TLS material is a 400 naming the field.
func TestSubscriptionMutualTLS_BadMaterialIs400NamingTheField(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{allowPrivate: true})
	acme := h.tenant("acme")
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	expired := pki.ClientCertValid(t, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	cert, key, ca := js(string(pki.Client.CertPEM)), js(string(pki.Client.KeyPEM)), js(string(pki.CA.CertPEM))
	for name, c := range map[string]struct{ url, fields, want string }{
		"bad certificate PEM": {"https://127.0.0.1:1", `"client_certificate":"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n","client_key":` + key, "destination.client_certificate"},
		"bad key PEM":         {"https://127.0.0.1:1", `"client_certificate":` + cert + `,"client_key":"not a key"`, "destination.client_key"},
		"mismatched key":      {"https://127.0.0.1:1", `"client_certificate":` + cert + `,"client_key":` + js(string(other.Client.KeyPEM)), "destination.client_key: does not match"},
		"expired":             {"https://127.0.0.1:1", `"client_certificate":` + js(string(expired.CertPEM)) + `,"client_key":` + js(string(expired.KeyPEM)), "destination.client_certificate: expired at"},
		"certificate no key":  {"https://127.0.0.1:1", `"client_certificate":` + cert, "destination.client_key"},
		"bad CA bundle":       {"https://127.0.0.1:1", `"ca_certificates":"hello"`, "destination.ca_certificates"},
		"TLS 1.1":             {"https://127.0.0.1:1", `"tls_min_version":"1.1"`, "destination.tls_min_version"},
		"plain http":          {"http://127.0.0.1:1", `"client_certificate":` + cert + `,"client_key":` + key + `,"ca_certificates":` + ca, "only for destinations that speak TLS"},
	} {
		status, _, raw := acme.do("POST", "/v1/subscriptions", `{"name":"bank","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"`+c.url+`",`+c.fields+`}}`)
		if status != 400 || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", name, status, raw, c.want)
		}
		if strings.Contains(string(raw), "PRIVATE KEY") {
			t.Errorf("%s: the error shows the key: %s", name, raw)
		}
	}
}
