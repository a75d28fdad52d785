package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Rejection reasons of signed envelopes (docs/lerian-platform.md): the metric
// labels, and the first word of the stored reason.
const (
	ReasonSignatureInvalid    = "signature_invalid"
	ReasonSignatureUnknownKey = "signature_unknown_key"
	ReasonSignatureMissing    = "signature_missing"
)

// Signature headers (lib-streaming v4).
const (
	HeaderSig    = "ce-sig"
	HeaderSigKID = "ce-sigkid"
	HeaderSigTS  = "ce-sigts"
)

// SignatureTag starts the canonical bytes of a signature, followed by one
// NUL byte.
const SignatureTag = "lerian.streaming.sig.v1"

// signedFields are the headers a signature covers, in the canonical order.
var signedFields = [...]string{
	"ce-specversion", "ce-id", "ce-source", "ce-type", "ce-time", "ce-subject",
	"ce-tenantid", "ce-datacontenttype", "ce-dataschema", "ce-schemaversion",
	"ce-resourcetype", "ce-eventtype", "ce-systemevent", HeaderSigKID, HeaderSigTS,
}

// Canonical is what a signature covers (docs/lerian-platform.md): the tag and
// a NUL byte; for each signed field in order, a presence byte (0 or 1), the
// value's length as a big-endian uint32 and its raw bytes (absent: 0 and a
// zero length); last the SHA-256 of the record's value. A header is looked up
// by its lower-case name; when repeated, its first value counts.
func Canonical(headers []kgo.RecordHeader, value []byte) []byte {
	n := len(SignatureTag) + 1 + len(signedFields)*5 + sha256.Size
	var vals [len(signedFields)][]byte
	var present [len(signedFields)]bool
	for _, h := range headers {
		k := strings.ToLower(h.Key)
		for i, f := range signedFields {
			if k == f && !present[i] {
				present[i], vals[i] = true, h.Value
				n += len(h.Value)
			}
		}
	}
	b := make([]byte, 0, n)
	b = append(b, SignatureTag...)
	b = append(b, 0)
	for i := range signedFields {
		if present[i] {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(vals[i])))
		b = append(b, vals[i]...)
	}
	sum := sha256.Sum256(value)
	return append(b, sum[:]...)
}

// Sign is the ce-sig of a record under secret: "v1." and the unpadded
// base64url of HMAC-SHA256(secret, Canonical(headers, value)). The
// headers must already hold ce-sigkid and ce-sigts.
func Sign(secret []byte, headers []kgo.RecordHeader, value []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(Canonical(headers, value))
	return "v1." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verifier judges the signatures of records against the producers' keys.
// A nil *Verifier verifies nothing: every record passes, none with a key.
type Verifier struct {
	keys    map[string]config.SignatureKey
	require bool
	maxSkew time.Duration
	now     func() time.Time
}

// NewVerifier is the verifier of cfg, nil when cfg has no keys (then
// signatures are carried as extensions, unverified). now is its clock for
// MaxSkew; nil means time.Now.
func NewVerifier(cfg config.Signatures, now func() time.Time) *Verifier {
	if len(cfg.Keys) == 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	v := &Verifier{keys: make(map[string]config.SignatureKey, len(cfg.Keys)), require: cfg.Require, maxSkew: cfg.MaxSkew, now: now}
	for _, k := range cfg.Keys {
		v.keys[k.ID] = k
	}
	return v
}

// rejectSignature: a source the hub cannot authenticate.
func rejectSignature(rule, detail string) Outcome {
	return rejectDetail(rule, rule+": "+detail).because(hub.CauseSourceMismatch)
}

// Verify judges r's signature. It answers the id of the key whose
// signature verified ("" for an unsigned record that may pass), or the
// rejection: signature_invalid (does not verify, a key of another source,
// ce-sigts outside MaxSkew or unparseable when MaxSkew is set, a header
// incomplete or given twice), signature_unknown_key (ce-sigkid names no
// key), signature_missing (no signature while one is required).
func (v *Verifier) Verify(r *kgo.Record) (string, Outcome) {
	if v == nil {
		return "", Outcome{}
	}
	if out := duplicateSignature(r.Headers); out.Reason != "" {
		return "", out
	}
	var sig, kid, ts []byte
	var hasSig, hasKID, hasTS bool
	for _, h := range r.Headers {
		var val *[]byte
		var has *bool
		switch strings.ToLower(h.Key) {
		case HeaderSig:
			val, has = &sig, &hasSig
		case HeaderSigKID:
			val, has = &kid, &hasKID
		case HeaderSigTS:
			val, has = &ts, &hasTS
		default:
			continue
		}
		*val, *has = h.Value, true
	}
	switch {
	case !hasSig && !hasKID && !hasTS:
		if v.require {
			return "", rejectSignature(ReasonSignatureMissing, "the record is not signed and signatures are required")
		}
		return "", Outcome{}
	case !hasSig:
		return "", rejectSignature(ReasonSignatureInvalid, "ce-sig is missing")
	case !hasKID:
		return "", rejectSignature(ReasonSignatureInvalid, "ce-sigkid is missing")
	}
	k, ok := v.keys[string(kid)]
	if !ok {
		return "", rejectSignature(ReasonSignatureUnknownKey, "ce-sigkid "+strconv.Quote(store.CleanText(string(kid), maxQuotedNameBytes))+" names no configured key")
	}
	if source, _ := first(r.Headers, "ce-source"); source != k.Source {
		return "", rejectSignature(ReasonSignatureInvalid, "key "+k.ID+" does not sign for this ce-source")
	}
	if !hmac.Equal(sig, []byte(Sign(k.Secret, r.Headers, r.Value))) {
		return "", rejectSignature(ReasonSignatureInvalid, "ce-sig does not verify under key "+k.ID)
	}
	if v.maxSkew > 0 {
		if !hasTS {
			return "", rejectSignature(ReasonSignatureInvalid, "ce-sigts is missing")
		}
		at, err := time.Parse(time.RFC3339Nano, string(ts))
		if err != nil {
			return "", rejectSignature(ReasonSignatureInvalid, "ce-sigts is not an RFC 3339 timestamp")
		}
		if d := v.now().Sub(at); d > v.maxSkew || d < -v.maxSkew {
			return "", rejectSignature(ReasonSignatureInvalid, "ce-sigts is further than "+v.maxSkew.String()+" from the hub's clock")
		}
	}
	return k.ID, Outcome{}
}

// first is the first value of the header named k (lower case).
func first(hs []kgo.RecordHeader, k string) (string, bool) {
	for _, h := range hs {
		if strings.ToLower(h.Key) == k {
			return string(h.Value), true
		}
	}
	return "", false
}

// duplicateSignature rejects a record that gives a signature header more
// than once, even with the same value: which one was signed is ambiguous.
func duplicateSignature(hs []kgo.RecordHeader) Outcome {
	var seen [3]bool
	for _, h := range hs {
		i := -1
		switch strings.ToLower(h.Key) {
		case HeaderSig:
			i = 0
		case HeaderSigKID:
			i = 1
		case HeaderSigTS:
			i = 2
		default:
			continue
		}
		if seen[i] {
			return rejectSignature(ReasonSignatureInvalid, strings.ToLower(h.Key)+" appears more than once")
		}
		seen[i] = true
	}
	return Outcome{}
}

// judge applies the wire contract and then, when the record passes it,
// the signature check: the outcome and the event, which remembers the key
// that signed it. A signature header given twice is a signature_invalid
// before anything else (the contract would call it a duplicate extension).
func (v *Verifier) judge(r *kgo.Record, maxValueBytes int) (hub.Event, Outcome) {
	if v != nil {
		if out := duplicateSignature(r.Headers); out.Reason != "" {
			return hub.Event{}, out
		}
	}
	ev, out := Parse(r, maxValueBytes)
	if out.Reason != "" || v == nil {
		return ev, out
	}
	kid, sig := v.Verify(r)
	if sig.Reason != "" {
		return hub.Event{}, sig
	}
	ev.ProducerKeyID = kid
	return ev, out
}
