package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// nodeVerifiesV1a reports whether Node's crypto (OpenSSL's Ed25519, an
// implementation other than the hub's) verifies one of the v1a
// signatures of header over id.ts.body under the whpk_ key.
func nodeVerifiesV1a(t *testing.T, key, id, ts, header string, body []byte) bool {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node is not installed: the hub's v1a signatures are checked by the consumer package only")
		return true
	}
	const script = `
const crypto = require('crypto');
const [key, id, ts, header] = process.argv.slice(1);
const body = require('fs').readFileSync(0);
const x = Buffer.from(key.replace(/^whpk_/, ''), 'base64').toString('base64url');
const pub = crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
const msg = Buffer.concat([Buffer.from(id + '.' + ts + '.'), body]);
const ok = header.split(' ').some(s => { const [v, sig] = s.split(','); return v === 'v1a' && crypto.verify(null, msg, pub, Buffer.from(sig, 'base64')); });
process.exit(ok ? 0 : 1);`
	cmd := exec.Command(node, "-e", script, key, id, ts, header)
	cmd.Stdin = bytes.NewReader(body)
	return cmd.Run() == nil
}

// v1aReceiver records every request and verifies it with
// consumer.Middleware against the public keys it is given, answering
// probes as the middleware does.
type v1aReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	headers []http.Header
	bodies  [][]byte
}

func newV1aReceiver(t *testing.T, now func() time.Time) *v1aReceiver {
	rc := &v1aReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		keys := rc.keys
		rc.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.mu.Lock()
		rc.headers, rc.bodies = append(rc.headers, r.Header.Clone()), append(rc.bodies, body)
		rc.mu.Unlock()
		mw, err := consumer.Middleware(consumer.Options{PublicKeys: keys, Now: now})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		})).ServeHTTP(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *v1aReceiver) trust(keys ...string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.keys = keys
}

func (rc *v1aReceiver) last() (http.Header, []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.headers) == 0 {
		return nil, nil
	}
	return rc.headers[len(rc.headers)-1], rc.bodies[len(rc.bodies)-1]
}

// A v1a subscription answers its public key (whpk_) and no secret; its
// probe and test events are signed v1a and verify with that key alone
// (with the consumer package and with Node's crypto); after a rotation
// the attempts carry one signature per key, each verifying with its own.
// The private key is never in an answer or the log.
func TestSubscriptions_V1aSignsWithEd25519AndShowsOnlyThePublicKey(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newV1aReceiver(t, h.clock.Now) // the hub signs at its (fake) time
		var created struct {
			ID               string
			SigningSecret    *string `json:"signing_secret"`
			SigningPublicKey string  `json:"signing_public_key"`
			Signature        struct{ Scheme string }
		}
		var seen strings.Builder
		status, _, b := acme.do("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],
			"destination":{"url":"`+rc.URL+`"},"signature":{"scheme":"v1a"}}`)
		if status != 201 {
			t.Fatalf("create: %d %s", status, b)
		}
		seen.Write(b)
		decodeInto(t, b, &created)
		if created.SigningSecret != nil || created.Signature.Scheme != "v1a" || !strings.HasPrefix(created.SigningPublicKey, "whpk_") {
			t.Fatalf("created %+v: want scheme v1a, a whpk_ key and no signing_secret", created)
		}
		oldKey := created.SigningPublicKey
		rc.trust(oldKey)
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/verify", "", 200, nil)
		hdr, body := rc.last()
		if hdr == nil || !strings.HasPrefix(hdr.Get("webhook-signature"), "v1a,") || strings.Contains(hdr.Get("webhook-signature"), " ") {
			t.Fatalf("the probe carried %q, want one v1a signature", hdr.Get("webhook-signature"))
		}
		if !nodeVerifiesV1a(t, oldKey, hdr.Get("webhook-id"), hdr.Get("webhook-timestamp"), hdr.Get("webhook-signature"), body) {
			t.Fatal("Node's crypto does not verify the probe's v1a signature")
		}

		var rotated struct {
			SigningSecret    *string `json:"signing_secret"`
			SigningPublicKey string  `json:"signing_public_key"`
		}
		status, _, b = acme.do("POST", "/v1/subscriptions/"+created.ID+"/rotate-secret", `{"overlap":"1h"}`)
		seen.Write(b)
		decodeInto(t, b, &rotated)
		if status != 200 || rotated.SigningSecret != nil || !strings.HasPrefix(rotated.SigningPublicKey, "whpk_") || rotated.SigningPublicKey == oldKey {
			t.Fatalf("rotate: %d %s", status, b)
		}
		newKey := rotated.SigningPublicKey
		var got struct {
			SigningPublicKey string `json:"signing_public_key"`
		}
		status, _, b = acme.do("GET", "/v1/subscriptions/"+created.ID, "")
		seen.Write(b)
		decodeInto(t, b, &got)
		if got.SigningPublicKey != newKey {
			t.Fatalf("after the rotation the subscription shows %q, want the new key", got.SigningPublicKey)
		}

		// Each key alone verifies the attempt during the overlap.
		for _, key := range []string{oldKey, newKey} {
			rc.trust(key)
			var res struct {
				StatusCode int `json:"status_code"`
			}
			acme.json("POST", "/v1/subscriptions/"+created.ID+"/test", "", 200, &res)
			hdr, body := rc.last()
			if res.StatusCode != 204 || len(strings.Fields(hdr.Get("webhook-signature"))) != 2 {
				t.Fatalf("test event with only key %s trusted: %d, signatures %q", key, res.StatusCode, hdr.Get("webhook-signature"))
			}
			if !nodeVerifiesV1a(t, key, hdr.Get("webhook-id"), hdr.Get("webhook-timestamp"), hdr.Get("webhook-signature"), body) {
				t.Fatalf("Node's crypto does not verify a test event with %s", key)
			}
		}

		// The scheme is chosen at create.
		status, _, b = acme.do("PATCH", "/v1/subscriptions/"+created.ID, `{"signature":{"scheme":"v1"}}`)
		wantError(t, status, b, 400, "invalid")
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"signature":{"scheme":"v1a"},"name":"same scheme"}`, 200, nil)
		status, _, b = acme.do("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],
			"destination":{"url":"`+rc.URL+`"},"signature":{"scheme":"v2"}}`)
		wantError(t, status, b, 400, "invalid")

		for _, path := range []string{"/v1/subscriptions", "/v1/subscriptions/" + created.ID + "/deliveries"} {
			_, _, b := acme.do("GET", path, "")
			seen.Write(b)
		}
		seen.WriteString(h.logs.String())
		keyring, err := envelope.NewKeyring(bytes.Repeat([]byte{7}, 32))
		if err != nil {
			t.Fatal(err)
		}
		stored, err := h.store.GetSubscription(context.Background(), "acme", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := destination.OpenSecrets(keyring, stored)
		if err != nil || len(sec.Signing) != 2 {
			t.Fatalf("stored signing keys %d, %v; want the new and the old", len(sec.Signing), err)
		}
		for _, k := range sec.Signing {
			if !strings.HasPrefix(k.Secret, "whsk_") {
				t.Fatalf("a v1a subscription holds a %.6s... signing secret", k.Secret)
			}
			if strings.Contains(seen.String(), strings.TrimPrefix(k.Secret, "whsk_")) || strings.Contains(seen.String(), "whsk_") {
				t.Fatal("a private key is visible in an answer or the log")
			}
		}
		// A v1 subscription shows its scheme and no public key.
		var v1 map[string]any
		acme.json("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"`+rc.URL+`"}}`, 201, &v1)
		if v1["signing_public_key"] != nil || !strings.HasPrefix(v1["signing_secret"].(string), "whsec_") || v1["signature"].(map[string]any)["scheme"] != "v1" {
			t.Fatalf("a v1 subscription: %v", v1)
		}
	})
}
