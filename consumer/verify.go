package consumer

import (
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far webhook-timestamp may be from the receiver's
// clock, either way, when no tolerance is given: the Standard Webhooks
// default. It bounds how long a captured request can be replayed.
const DefaultTolerance = 5 * time.Minute

// Verification errors. Each failure wraps exactly one of them, with details
// (which header, how far off) in the message; none ever quotes a secret.
var (
	// ErrMissingHeader: webhook-id, webhook-timestamp or webhook-signature
	// is absent or empty; the message names them.
	ErrMissingHeader = errors.New("consumer: missing webhook header")
	// ErrInvalidTimestamp: webhook-timestamp is not an integer (unix seconds).
	ErrInvalidTimestamp = errors.New("consumer: webhook-timestamp is not an integer")
	// ErrTimestampOutsideTolerance: webhook-timestamp is too old (a replay,
	// or a delivery that sat too long) or too far in the future.
	ErrTimestampOutsideTolerance = errors.New("consumer: webhook-timestamp outside tolerance")
	// ErrNoMatchingSignature: no v1 signature in webhook-signature matches
	// the request under any of the secrets, nor any v1a signature under
	// any of the public keys (wrong secret or key, tampered body, id or
	// timestamp).
	ErrNoMatchingSignature = errors.New("consumer: no matching webhook signature")
	// ErrInvalidSecret: a configured secret is empty or not base64 after
	// whsec_. A configuration error, not the sender's fault.
	ErrInvalidSecret = errors.New("consumer: invalid signing secret")
	// ErrInvalidPublicKey: a configured public key is not whpk_<base64 of
	// 32 bytes>. A configuration error, not the sender's fault.
	ErrInvalidPublicKey = errors.New("consumer: invalid public key")
)

// Verify checks the Standard Webhooks signature of a delivery against the
// receiver's clock. secret is the subscription's signing secret
// (whsec_<base64>, the prefix optional); tolerance <= 0 means
// DefaultTolerance. It returns nil when any v1 signature of the
// webhook-signature header matches, else an error wrapping one of the
// package's sentinel errors.
func Verify(secret string, headers http.Header, body []byte, tolerance time.Duration) error {
	return VerifyAt(secret, headers, body, tolerance, time.Now())
}

// VerifyAt is Verify with the clock given: now is the receiver's time the
// timestamp is checked against.
func VerifyAt(secret string, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	return verifyKeys(keys{hmac: [][]byte{key}}, headers, body, tolerance, now)
}

// VerifyV1a checks the Standard Webhooks asymmetric (v1a, Ed25519)
// signature of a delivery against the receiver's clock. publicKey is the
// subscription's signing_public_key (whpk_<base64>, the prefix optional);
// tolerance <= 0 means DefaultTolerance. It returns nil when any v1a
// signature of the webhook-signature header verifies, else an error
// wrapping one of the package's sentinel errors.
func VerifyV1a(publicKey string, headers http.Header, body []byte, tolerance time.Duration) error {
	return VerifyV1aAt(publicKey, headers, body, tolerance, time.Now())
}

// VerifyV1aAt is VerifyV1a with the clock given.
func VerifyV1aAt(publicKey string, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := decodePublicKey(publicKey)
	if err != nil {
		return err
	}
	return verifyKeys(keys{ed: []ed25519.PublicKey{key}}, headers, body, tolerance, now)
}

// Verifier verifies against several secrets or public keys at once, for a
// receiver in the middle of a rotation: during the overlap the hub signs
// with every valid secret (or private key), and a request passes when any
// signature matches any of them. The zero Verifier rejects everything (no
// secret).
type Verifier struct {
	Secrets []string // whsec_<base64>, the prefix optional: v1 (HMAC) subscriptions
	// PublicKeys are v1a (Ed25519) subscriptions' signing_public_key,
	// whpk_<base64>, the prefix optional.
	PublicKeys []string
	Tolerance  time.Duration    // <= 0 means DefaultTolerance
	Now        func() time.Time // nil means time.Now
}

// Verify checks the signature of one delivery.
func (v Verifier) Verify(headers http.Header, body []byte) error {
	keys, err := decodeKeys(v.Secrets, v.PublicKeys)
	if err != nil {
		return err
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	return verifyKeys(keys, headers, body, v.Tolerance, now())
}

// verifyKeys is the verification proper, on decoded keys so the middleware
// decodes its secrets once. Headers are checked before any HMAC is computed:
// a request that cannot be authentic costs nothing.
func verifyKeys(k keys, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id := header(headers, HeaderWebhookID)
	ts := header(headers, HeaderWebhookTimestamp)
	sigs := strings.Fields(strings.Join(headerValues(headers, HeaderWebhookSignature), " "))
	var missing []string
	if id == "" {
		missing = append(missing, HeaderWebhookID)
	}
	if ts == "" {
		missing = append(missing, HeaderWebhookTimestamp)
	}
	if len(sigs) == 0 {
		missing = append(missing, HeaderWebhookSignature)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingHeader, strings.Join(missing, ", "))
	}

	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidTimestamp, truncate(ts, 32))
	}
	// Sub saturates instead of overflowing, so absurd timestamps stay
	// outside the tolerance.
	switch age := now.Sub(time.Unix(unix, 0)); {
	case age > tolerance:
		return fmt.Errorf("%w: %s too old (tolerance %s)", ErrTimestampOutsideTolerance, age.Truncate(time.Second), tolerance)
	case -age > tolerance:
		return fmt.Errorf("%w: %s in the future (tolerance %s)", ErrTimestampOutsideTolerance, (-age).Truncate(time.Second), tolerance)
	}

	// Compare against the canonical timestamp string the sender signed;
	// ts is used as received, exactly like the Standard Webhooks libraries.
	for _, key := range k.hmac {
		want := []byte(signature(key, id, ts, body))
		for _, s := range sigs {
			version, sig, ok := strings.Cut(s, ",")
			if !ok || version != "v1" {
				continue // another scheme (v1a, v2...): checked below or not ours
			}
			if hmac.Equal([]byte(sig), want) {
				return nil
			}
		}
	}
	if len(k.ed) > 0 {
		msg := signedContent(id, ts, body)
		for _, s := range sigs {
			version, sig, ok := strings.Cut(s, ",")
			if !ok || version != "v1a" {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(sig)
			if err != nil || len(raw) != ed25519.SignatureSize {
				continue
			}
			for _, key := range k.ed {
				if ed25519.Verify(key, msg, raw) {
					return nil
				}
			}
		}
	}
	return ErrNoMatchingSignature
}

// signedContent is what v1a signs: id.timestamp.body.
func signedContent(id, ts string, body []byte) []byte {
	msg := make([]byte, 0, len(id)+len(ts)+len(body)+2)
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = append(msg, ts...)
	msg = append(msg, '.')
	return append(msg, body...)
}

// truncate bounds attacker-controlled text quoted in errors.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
