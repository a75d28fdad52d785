package consumer_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
)

// v1a signs as Standard Webhooks' asymmetric scheme does:
// "v1a," + base64(Ed25519(id.timestamp.body)).
func v1a(priv ed25519.PrivateKey, id string, ts int64, body string) string {
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(id+"."+strconv.FormatInt(ts, 10)+"."+body)))
}

func whpk(pub ed25519.PublicKey) string { return "whpk_" + base64.StdEncoding.EncodeToString(pub) }

func signed(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifyV1a_WithThePublicKeyOnly(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	ts := int64(1_800_000_000)
	at := time.Unix(ts, 0)
	body := `{"amount":100}`
	sig := v1a(priv, "evt_1", ts, body)

	if err := consumer.VerifyV1aAt(whpk(pub), signed("evt_1", ts, sig), []byte(body), 0, at); err != nil {
		t.Fatalf("a good v1a signature: %v", err)
	}
	bare := strings.TrimPrefix(whpk(pub), consumer.PublicKeyPrefix)
	if err := consumer.VerifyV1aAt(bare, signed("evt_1", ts, "v1,AAAA "+sig), []byte(body), 0, at); err != nil {
		t.Fatalf("without the prefix, beside a v1 signature: %v", err)
	}
	for name, c := range map[string]struct {
		key  string
		h    http.Header
		body string
	}{
		"tampered body":   {whpk(pub), signed("evt_1", ts, sig), `{"amount":999}`},
		"another id":      {whpk(pub), signed("evt_2", ts, sig), body},
		"another key":     {whpk(otherPub), signed("evt_1", ts, sig), body},
		"a v1 signature":  {whpk(pub), signed("evt_1", ts, "v1,"+strings.TrimPrefix(sig, "v1a,")), body},
		"not base64":      {whpk(pub), signed("evt_1", ts, "v1a,!!!"), body},
		"a short garbage": {whpk(pub), signed("evt_1", ts, "v1a,AAAA"), body},
	} {
		if err := consumer.VerifyV1aAt(c.key, c.h, []byte(c.body), 0, at); !errors.Is(err, consumer.ErrNoMatchingSignature) {
			t.Errorf("%s: %v, want ErrNoMatchingSignature", name, err)
		}
	}
	if err := consumer.VerifyV1aAt(whpk(pub), signed("evt_1", ts, sig), []byte(body), 0, at.Add(time.Hour)); !errors.Is(err, consumer.ErrTimestampOutsideTolerance) {
		t.Errorf("an old delivery: %v", err)
	}
	for _, bad := range []string{"whpk_", "whpk_AAAA", "whpk_***", "whsec_" + bare[:10]} {
		if err := consumer.VerifyV1aAt(bad, signed("evt_1", ts, sig), []byte(body), 0, at); !errors.Is(err, consumer.ErrInvalidPublicKey) {
			t.Errorf("public key %q: %v, want ErrInvalidPublicKey", bad, err)
		}
	}

	// During a rotation the hub sends one signature per key; a Verifier
	// with either key passes, and one with both.
	both := signed("evt_1", ts, v1a(otherPriv, "evt_1", ts, body)+" "+sig)
	for _, keys := range [][]string{{whpk(pub)}, {whpk(otherPub)}, {whpk(otherPub), whpk(pub)}} {
		v := consumer.Verifier{PublicKeys: keys, Now: func() time.Time { return at }}
		if err := v.Verify(both, []byte(body)); err != nil {
			t.Errorf("Verifier with %d keys: %v", len(keys), err)
		}
	}
	if err := (consumer.Verifier{}).Verify(both, []byte(body)); !errors.Is(err, consumer.ErrInvalidSecret) {
		t.Errorf("the zero Verifier: %v", err)
	}
}

func TestMiddleware_VerifiesV1aWithPublicKeys(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	ts := int64(1_800_000_000)
	mw, err := consumer.Middleware(consumer.Options{PublicKeys: []string{whpk(pub)}, Now: func() time.Time { return time.Unix(ts, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for sig, want := range map[string]int{v1a(priv, "evt_1", ts, "{}"): 204, v1a(priv, "evt_1", ts, "{ }"): 401} {
		req := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
		req.Header = signed("evt_1", ts, sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("answered %d, want %d", rec.Code, want)
		}
	}
	if _, err := consumer.Middleware(consumer.Options{PublicKeys: []string{"whpk_nope"}}); !errors.Is(err, consumer.ErrInvalidPublicKey) {
		t.Errorf("a bad public key: %v", err)
	}
}

// Signatures made by another Ed25519 implementation (Node's crypto, that
// is OpenSSL) over the Standard Webhooks v1a content verify here.
func TestVerifyV1a_SignaturesOfAnotherImplementation(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	const script = `
const crypto = require('crypto');
const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
const id = 'msg_interop', ts = '1800000000', body = '{"x":"é"}';
const sig = crypto.sign(null, Buffer.from(id + '.' + ts + '.' + body), privateKey).toString('base64');
const x = publicKey.export({ format: 'jwk' }).x;
console.log('whpk_' + Buffer.from(x, 'base64url').toString('base64') + ' v1a,' + sig);`
	out, err := exec.Command(node, "-e", script).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	key, sig, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err := consumer.VerifyV1aAt(key, signed("msg_interop", 1_800_000_000, sig), []byte(`{"x":"é"}`), 0, time.Unix(1_800_000_000, 0)); err != nil {
		t.Fatalf("node's v1a signature (%s, %s): %v", key, sig, err)
	}
}
