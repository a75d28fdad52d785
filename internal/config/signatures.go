package config

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Signatures configures the verification of producers' signed envelopes
// (lib-streaming v4, docs/lerian-platform.md).
type Signatures struct {
	// Keys (SIGNATURE_KEYS or SIGNATURE_KEYS_FILE) are the producers' keys,
	// each bound to one ce-source. None: signatures are not verified.
	Keys []SignatureKey
	// Require (REQUIRE_SIGNATURES) rejects records without a signature.
	Require bool
	// MaxSkew (SIGNATURE_MAX_SKEW) bounds how far ce-sigts may be from the
	// hub's clock, either way; 0 does not check it.
	MaxSkew time.Duration
}

// SignatureKey is one producer key: its id (ce-sigkid), the ce-source it
// signs for, and its secret, which never prints.
type SignatureKey struct {
	ID     string
	Source string
	Secret Secret
}

// Secret is key material. It prints, logs and encodes as [redacted], so a
// configuration printed with %+v or logged never shows it.
type Secret []byte

const redacted = "[redacted]"

// Format writes [redacted] whatever the verb.
func (Secret) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// String is [redacted].
func (Secret) String() string { return redacted }

// GoString is [redacted].
func (Secret) GoString() string { return redacted }

// LogValue is [redacted].
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON is "[redacted]".
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText is [redacted].
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

var signatureKeyID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// minSignatureSecret is the shortest secret accepted, in bytes.
const minSignatureSecret = 32

// signatures reads SIGNATURE_KEYS (or SIGNATURE_KEYS_FILE),
// REQUIRE_SIGNATURES and SIGNATURE_MAX_SKEW.
func (r *reader) signatures(s *Signatures) {
	name := "SIGNATURE_KEYS"
	v, set := r.raw(name)
	path, fileSet := r.raw(name + "_FILE")
	switch {
	case set && fileSet:
		r.fail(name, "and %s%s_FILE are both set: set only one of them", Prefix, name)
	case fileSet:
		name += "_FILE"
		b, err := os.ReadFile(path)
		if err != nil {
			r.fail(name, "cannot read the file: %s", fileError(err))
			break
		}
		v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		s.Keys = r.signatureKeys(name, v)
	case set:
		s.Keys = r.signatureKeys(name, v)
	}
	r.boolean("REQUIRE_SIGNATURES", &s.Require)
	if sk, ok := r.raw("SIGNATURE_MAX_SKEW"); ok {
		d, err := time.ParseDuration(sk)
		if sk == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			r.fail("SIGNATURE_MAX_SKEW", "must be a Go duration such as 30s or 5m, or 0 (off), got %q", sk)
		} else {
			s.MaxSkew = d
		}
	}
	if s.Require && len(s.Keys) == 0 && !r.bad["SIGNATURE_KEYS"] && !r.bad["SIGNATURE_KEYS_FILE"] {
		r.fail("REQUIRE_SIGNATURES", "true needs keys to verify with: set %sSIGNATURE_KEYS or %sSIGNATURE_KEYS_FILE", Prefix, Prefix)
	}
}

// fileError describes a failed read without the path's contents.
func fileError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// signatureKeys parses comma-separated <kid>@<source>:<standard base64
// secret> entries. A bad entry is named by its position (1-based); its
// bytes are never echoed, since they hold a secret.
func (r *reader) signatureKeys(name, v string) []SignatureKey {
	var keys []SignatureKey
	first := map[string]int{}
	for i, e := range strings.Split(v, ",") {
		pos := i + 1
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		kid, rest, ok := strings.Cut(e, "@")
		if !ok {
			r.fail(name, "entry %d: must be <kid>@<source>:<base64 secret>", pos)
			return nil
		}
		at := strings.LastIndexByte(rest, ':')
		if at < 0 {
			r.fail(name, "entry %d: must be <kid>@<source>:<base64 secret>", pos)
			return nil
		}
		source, enc := rest[:at], rest[at+1:]
		if !signatureKeyID.MatchString(kid) {
			r.fail(name, "entry %d: the key id must match ^[a-z0-9][a-z0-9._-]{0,63}$", pos)
			return nil
		}
		if !validSource(source) {
			r.fail(name, "entry %d: the source must be 1..2048 bytes of UTF-8 without control characters", pos)
			return nil
		}
		secret, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			if secret, err = base64.RawStdEncoding.DecodeString(enc); err != nil {
				r.fail(name, "entry %d: the secret must be standard base64", pos)
				return nil
			}
		}
		if len(secret) < minSignatureSecret {
			r.fail(name, "entry %d: the secret must decode to at least %d bytes, got %d", pos, minSignatureSecret, len(secret))
			return nil
		}
		if p, dup := first[kid]; dup {
			r.fail(name, "entry %d: the key id repeats entry %d's", pos, p)
			return nil
		}
		first[kid] = pos
		keys = append(keys, SignatureKey{ID: kid, Source: source, Secret: secret})
	}
	return keys
}

// validSource is the wire contract's rule for ce-source (docs/wire-contract.md).
func validSource(s string) bool {
	if s == "" || len(s) > 2048 || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}
