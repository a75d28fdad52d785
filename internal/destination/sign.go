package destination

import (
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

// Sign returns the webhook-signature header: one signature per secret,
// space-separated (during a rotation's overlap every valid secret signs).
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("no signing secret: the hub never sends unsigned webhooks")
	}
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		key, err := SecretKey(s)
		if err != nil {
			return "", err
		}
		sigs[i] = Signature(key, id, timestamp, body)
	}
	return strings.Join(sigs, " "), nil
}
