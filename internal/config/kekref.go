package config

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Where the KEK comes from (KEK_SOURCE), as Lerian's chart says it
// (docs/lerian-platform.md, "The KEK by reference").
const (
	KEKFromEnv            = "env"
	KEKFromFile           = "file"
	KEKFromSecretsManager = "secretsmanager"
)

// DefaultKEKRef is the variable KEK_SOURCE=env reads unless KEK_REF names
// another.
const DefaultKEKRef = Prefix + "KEK"

// KEKSource says where the KEK was, or is to be, read from.
type KEKSource struct {
	// Source is KEK_SOURCE: env, file or secretsmanager.
	Source string
	// Ref is KEK_REF: the variable (env), the file's path (file) or the
	// secret's name or ARN (secretsmanager). Empty with env: STREAMING_HUB_KEK
	// (or its _FILE).
	Ref string
}

// Fetched reports whether the KEK is fetched once the process runs
// (secretsmanager): Load leaves Config.KEK nil and the app resolves it.
func (s KEKSource) Fetched() bool { return s.Source == KEKFromSecretsManager }

// String names the source in errors and logs, never the key.
func (s KEKSource) String() string {
	switch {
	case (s.Source == KEKFromEnv || s.Source == "") && (s.Ref == "" || s.Ref == DefaultKEKRef):
		return DefaultKEKRef
	case s.Source == KEKFromEnv:
		return fmt.Sprintf("%s (named by %sKEK_REF)", s.Ref, Prefix)
	case s.Source == KEKFromFile:
		return fmt.Sprintf("the file %q (%sKEK_SOURCE=file, %sKEK_REF)", s.Ref, Prefix, Prefix)
	case s.Source == KEKFromSecretsManager:
		return fmt.Sprintf("the Secrets Manager secret %q (%sKEK_SOURCE=secretsmanager, %sKEK_REF)", s.Ref, Prefix, Prefix)
	}
	return DefaultKEKRef
}

// kekByRef reads the current KEK where KEK_SOURCE and KEK_REF say: by
// default STREAMING_HUB_KEK (or STREAMING_HUB_KEK_FILE); with env and a
// KEK_REF, the variable it names (Lerian's chart: its …_DEV_KEK);
// with file, the file it names; with secretsmanager nothing yet (the
// KEKSource says what to fetch). A problem is reported against KEK_REF,
// naming the variable or file and the source, never the key.
func (r *reader) kekByRef() ([]byte, KEKSource) {
	src := KEKSource{Source: r.oneOf("KEK_SOURCE", KEKFromEnv, KEKFromEnv, KEKFromFile, KEKFromSecretsManager)}
	r.str("KEK_REF", &src.Ref)
	own := r.key("KEK")
	if src.Source == KEKFromEnv && (src.Ref == "" || src.Ref == DefaultKEKRef) {
		src.Ref = ""
		return own, src
	}
	if r.bad["KEK_SOURCE"] || r.bad["KEK"] {
		return nil, src
	}
	if own != nil {
		r.fail("KEK", "and %sKEK_SOURCE/%sKEK_REF (%s) both give the KEK: set only one of them", Prefix, Prefix, src)
		return nil, src
	}
	if src.Ref == "" {
		r.fail("KEK_REF", "required with %sKEK_SOURCE=%s (the %s)", Prefix, src.Source,
			map[string]string{KEKFromFile: "file's path", KEKFromSecretsManager: "secret's name or ARN"}[src.Source])
		return nil, src
	}
	switch src.Source {
	case KEKFromEnv:
		v := strings.TrimSpace(r.getenv(src.Ref))
		if v == "" {
			r.fail("KEK_REF", "names %s, which is unset or empty (%sKEK_SOURCE=env)", src.Ref, Prefix)
			return nil, src
		}
		k, err := DecodeKEK([]byte(v))
		if err != nil {
			r.fail("KEK_REF", "%s: %s", src, err)
			return nil, src
		}
		return k, src
	case KEKFromFile:
		b, err := readSecretFile(src.Ref)
		if err != nil {
			r.fail("KEK_REF", "cannot read %s: %s", src, readProblem(err))
			return nil, src
		}
		r.noteKEKFile("KEK_REF", src.Ref)
		k, err := DecodeKEK(b)
		if err != nil {
			r.fail("KEK_REF", "%s: %s", src, err)
			return nil, src
		}
		return k, src
	}
	return nil, src // secretsmanager: fetched at start
}

// KEKSize is the size of a KEK, decoded: an AES-256 key's.
const KEKSize = 32

// MaxPreviousKEKSize bounds a previous KEK (KEK_PREVIOUS): up to 64 bytes,
// so that a longer key the hub took before it asked for exactly 32 can
// still be opened and rewrapped (docs/security.md#the-kek).
const MaxPreviousKEKSize = 64

// DecodeKEK reads a KEK as the variables give it: base64 (standard or URL
// alphabet) of exactly KEKSize bytes, surrounding space and one trailing
// newline ignored. The error never shows the value.
func DecodeKEK(v []byte) ([]byte, error) {
	return decodeKey(strings.TrimSpace(string(v)), KEKSize, KEKSize)
}

// maxKeyText bounds the text of a key that is decoded at all: a value far
// longer than any key is refused by its length.
const maxKeyText = 1 << 10

// decodeKey decodes base64 of least to most bytes, without decoding a
// value far longer than that.
func decodeKey(s string, least, most int) ([]byte, error) {
	size, hint := fmt.Sprintf("%d to %d bytes", least, most), ""
	if least == most {
		size, hint = fmt.Sprintf("exactly %d bytes", least), fmt.Sprintf(" (`openssl rand -base64 %d` makes one)", least)
	}
	if len(s) > maxKeyText {
		return nil, fmt.Errorf("must decode to %s, got a value of %d characters%s", size, len(s), hint)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("must be base64 (standard or URL alphabet)")
		}
	}
	if len(b) < least || len(b) > most {
		return nil, fmt.Errorf("must decode to %s, got %d%s", size, len(b), hint)
	}
	return b, nil
}

// kekReference is the variable KEK_REF names in environ when KEK_SOURCE
// is env (or unset), "" otherwise: a STREAMING_HUB_ variable the hub then
// reads although it is not one of its own names (Lerian's chart:
// the chart's …_DEV_KEK), so Unknown does not warn about it.
func kekReference(environ []string) string {
	var source, ref string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case Prefix + "KEK_SOURCE":
			source = strings.TrimSpace(v)
		case Prefix + "KEK_REF":
			ref = strings.TrimSpace(v)
		}
	}
	if source != "" && source != KEKFromEnv {
		return ""
	}
	return ref
}
