package destination

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"
)

// The published Standard Webhooks test vector.
func TestSign_StandardWebhooksVector(t *testing.T) {
	got, err := Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
}

func TestSign_OneSignaturePerSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	got, err := Sign([]string{a, b}, "id", 1, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(got, " ")
	ka, _ := SecretKey(a)
	kb, _ := SecretKey(b)
	if len(parts) != 2 || parts[0] != Signature(ka, "id", 1, []byte("x")) || parts[1] != Signature(kb, "id", 1, []byte("x")) {
		t.Fatalf("header = %q", got)
	}
}

func TestSign_RefusesToSignWithoutAValidSecret(t *testing.T) {
	if _, err := Sign(nil, "id", 1, nil); err == nil {
		t.Fatal("signed with no secret")
	}
	if _, err := Sign([]string{"whsec_***"}, "id", 1, nil); err == nil {
		t.Fatal("signed with a malformed secret")
	}
	if _, err := SecretKey("whsec_"); err == nil {
		t.Fatal("empty secret accepted")
	}
}

func TestNewSecret_Is32RandomBytes(t *testing.T) {
	s := NewSecret()
	k, err := SecretKey(s)
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(k) != 32 || NewSecret() == s {
		t.Fatalf("secret %q: %d bytes, %v", s, len(k), err)
	}
}

// A whsk_ private key signs v1a (Ed25519 over id.timestamp.body), beside
// a whsec_ secret's v1 during a change, and its whpk_ public key verifies.
func TestSign_V1aWithAPrivateKey(t *testing.T) {
	priv, pub := NewKeyPair()
	if got, err := PublicKeyOf(priv); err != nil || got != pub {
		t.Fatalf("PublicKeyOf = %q, %v; want %q", got, err, pub)
	}
	secret := NewSecret()
	header, err := Sign([]string{priv, secret}, "msg_1", 1614265330, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	sigs := strings.Fields(header)
	if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1a,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("header %q", header)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sigs[0], "v1a,"))
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(pub, PublicKeyPrefix))
	if !ed25519.Verify(ed25519.PublicKey(key), []byte(`msg_1.1614265330.{"a":1}`), raw) {
		t.Fatal("the v1a signature does not verify with the public key")
	}
	if _, err := Sign([]string{"whsk_AAAA"}, "msg_1", 1, nil); err == nil {
		t.Fatal("a malformed private key signed")
	}
}
