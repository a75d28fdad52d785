package consumer

import (
	"crypto/hmac"
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
	// the request under any of the secrets (wrong secret, tampered body, id
	// or timestamp).
	ErrNoMatchingSignature = errors.New("consumer: no matching webhook signature")
	// ErrInvalidSecret: a configured secret is empty or not base64 after
	// whsec_. A configuration error, not the sender's fault.
	ErrInvalidSecret = errors.New("consumer: invalid signing secret")
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
	return verifyKeys([][]byte{key}, headers, body, tolerance, now)
}

// Verifier verifies against several secrets at once, for a receiver in the
// middle of a secret rotation: during the overlap the hub signs with every
// valid secret, and a request passes when any signature matches any secret.
// The zero Verifier rejects everything (no secret).
type Verifier struct {
	Secrets   []string         // whsec_<base64>, the prefix optional
	Tolerance time.Duration    // <= 0 means DefaultTolerance
	Now       func() time.Time // nil means time.Now
}

// Verify checks the signature of one delivery.
func (v Verifier) Verify(headers http.Header, body []byte) error {
	keys, err := decodeSecrets(v.Secrets)
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
func verifyKeys(keys [][]byte, headers http.Header, body []byte, tolerance time.Duration, now time.Time) error {
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
	for _, key := range keys {
		want := []byte(signature(key, id, ts, body))
		for _, s := range sigs {
			version, sig, ok := strings.Cut(s, ",")
			if !ok || version != "v1" {
				continue // another scheme (v1a, v2...): not ours to check
			}
			if hmac.Equal([]byte(sig), want) {
				return nil
			}
		}
	}
	return ErrNoMatchingSignature
}

// truncate bounds attacker-controlled text quoted in errors.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
