package consumer

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts the hub's signing secrets: whsec_<base64 key>.
const SecretPrefix = "whsec_"

// PublicKeyPrefix starts the public keys of v1a (Ed25519) subscriptions:
// whpk_<base64 of the 32-byte public key>, the subscription's
// signing_public_key.
const PublicKeyPrefix = "whpk_"

// keys are what a request is verified against: HMAC keys for v1
// signatures, Ed25519 public keys for v1a.
type keys struct {
	hmac [][]byte
	ed   []ed25519.PublicKey
}

// decodeKeys decodes secrets and public keys; at least one must be given.
func decodeKeys(secrets, publicKeys []string) (keys, error) {
	var k keys
	if len(secrets) == 0 && len(publicKeys) == 0 {
		return k, fmt.Errorf("%w: no secret or public key given", ErrInvalidSecret)
	}
	if len(secrets) > 0 {
		hk, err := decodeSecrets(secrets)
		if err != nil {
			return k, err
		}
		k.hmac = hk
	}
	for i, pk := range publicKeys {
		key, err := decodePublicKey(pk)
		if err != nil {
			if len(publicKeys) > 1 {
				return k, fmt.Errorf("public key %d of %d: %w", i+1, len(publicKeys), err)
			}
			return k, err
		}
		k.ed = append(k.ed, key)
	}
	return k, nil
}

// decodePublicKey decodes a whpk_ public key (the prefix optional).
func decodePublicKey(pk string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(pk, PublicKeyPrefix))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: not %s<base64 of 32 bytes>", ErrInvalidPublicKey, PublicKeyPrefix)
	}
	return ed25519.PublicKey(raw), nil
}

// decodeSecret returns the HMAC key of a secret. Like the Standard Webhooks
// libraries it accepts the base64 key without its whsec_ prefix too. Errors
// never quote the secret: they end up in logs.
func decodeSecret(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, SecretPrefix)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64 after %s", ErrInvalidSecret, SecretPrefix)
	}
	return key, nil
}

// decodeSecrets decodes every secret, naming the bad one by position.
func decodeSecrets(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret given", ErrInvalidSecret)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		key, err := decodeSecret(s)
		if err != nil {
			if len(secrets) > 1 {
				return nil, fmt.Errorf("secret %d of %d: %w", i+1, len(secrets), err)
			}
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// signature is the base64 HMAC-SHA256 of id.timestamp.body under key,
// without its "v1," prefix.
func signature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the webhook-signature value, "v1,<base64>", the hub would
// send for body under secret. It exists so receivers can build signed
// requests in their own tests; a receiver never signs in production.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + signature(key, id, strconv.FormatInt(timestamp, 10), body), nil
}
