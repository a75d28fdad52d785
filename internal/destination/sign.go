package destination

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ + base64 of 32 random
// bytes.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// SecretKey decodes a whsec_ secret into its HMAC key.
func SecretKey(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("signing secret is not whsec_<base64>")
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("signing secret is empty")
	}
	return key, nil
}

// Signature returns one Standard Webhooks signature, "v1,<base64>", of
// id.timestamp.body under key.
func Signature(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Prefixes of a v1a (Ed25519) key pair's halves, as Standard Webhooks
// serializes them: whsk_ + base64 of the private key's 32-byte seed (sealed,
// never shown), whpk_ + base64 of the 32-byte public key.
const (
	PrivateKeyPrefix = "whsk_"
	PublicKeyPrefix  = "whpk_"
)

// NewKeyPair returns a fresh v1a key pair: the private key to seal beside
// the signing secrets, and the public key to show.
func NewKeyPair() (private, public string) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	return PrivateKeyPrefix + base64.StdEncoding.EncodeToString(priv.Seed()),
		PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// privateKey decodes a whsk_ private key.
func privateKey(secret string) (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, PrivateKeyPrefix))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key is not whsk_<base64 of a 32-byte Ed25519 seed>")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKeyOf is the whpk_ public key of a whsk_ private key.
func PublicKeyOf(secret string) (string, error) {
	priv, err := privateKey(secret)
	if err != nil {
		return "", err
	}
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), nil
}

// SignatureV1a returns one Standard Webhooks asymmetric signature,
// "v1a,<base64>": Ed25519 of id.timestamp.body under priv.
func SignatureV1a(priv ed25519.PrivateKey, id string, timestamp int64, body []byte) string {
	msg := make([]byte, 0, len(id)+len(body)+22)
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = strconv.AppendInt(msg, timestamp, 10)
	msg = append(msg, '.')
	msg = append(msg, body...)
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg))
}

// Sign returns the webhook-signature header: one signature per secret,
// space-separated (during a rotation's overlap every valid secret signs):
// v1 for a whsec_ secret, v1a for a whsk_ private key.
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("no signing secret: the hub never sends unsigned webhooks")
	}
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		if strings.HasPrefix(s, PrivateKeyPrefix) {
			priv, err := privateKey(s)
			if err != nil {
				return "", err
			}
			sigs[i] = SignatureV1a(priv, id, timestamp, body)
			continue
		}
		key, err := SecretKey(s)
		if err != nil {
			return "", err
		}
		sigs[i] = Signature(key, id, timestamp, body)
	}
	return strings.Join(sigs, " "), nil
}
