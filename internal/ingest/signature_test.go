package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// workedSecret is the example secret of docs/lerian-platform.md: the 32 bytes
// 0x00..0x1f.
func workedSecret() []byte {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

const workedSig = "v1.YsgRbSCWqKBA7wHqLhYJUeaETy2dPXVmNQdNiZcd0-0"

// workedRecord is docs/lerian-platform.md's worked example, signed.
func workedRecord() *kgo.Record {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	return &kgo.Record{Topic: "lerian.streaming.ledger", Value: []byte(`{"amount":"10.00"}`), Headers: []kgo.RecordHeader{
		h("ce-specversion", "1.0"), h("ce-id", "0190a8e2-0000-7000-8000-000000000001"), h("ce-source", "ledger"),
		h("ce-type", "studio.lerian.transaction.created"), h("ce-time", "2026-09-26T12:00:00Z"), h("ce-subject", "acc-1"),
		h("ce-tenantid", "tenant-1"), h("ce-datacontenttype", "application/json"), h("ce-schemaversion", "1.0.0"),
		h("ce-resourcetype", "transaction"), h("ce-eventtype", "created"), h("ce-sigkid", "k1"),
		h("ce-sigts", "2026-09-26T12:00:05.123456789Z"), h("ce-sig", workedSig),
	}}
}

func workedVerifier(require bool, skew time.Duration, now time.Time) *Verifier {
	return NewVerifier(config.Signatures{
		Keys:    []config.SignatureKey{{ID: "k1", Source: "ledger", Secret: workedSecret()}, {ID: "k2", Source: "billing", Secret: workedSecret()}},
		Require: require, MaxSkew: skew,
	}, func() time.Time { return now })
}

// docs/lerian-platform.md's worked example, byte for byte: computed by an
// independent implementation, it pins the canonical layout.
func TestSign_TheWorkedExampleOfTheDocs(t *testing.T) {
	r := workedRecord()
	if got := Sign(workedSecret(), r.Headers[:len(r.Headers)-1], r.Value); got != workedSig {
		t.Fatalf("ce-sig = %s, want %s", got, workedSig)
	}
	// The header order and the ce-sig header itself are not signed.
	rev := append([]kgo.RecordHeader(nil), r.Headers...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if got := Sign(workedSecret(), rev, r.Value); got != workedSig {
		t.Fatalf("reordered: ce-sig = %s", got)
	}
	c := Canonical(r.Headers, r.Value)
	if !strings.HasPrefix(string(c), "lerian.streaming.sig.v1\x00\x01\x00\x00\x00\x031.0\x01") {
		t.Fatalf("canonical starts %q", c[:40])
	}
	kid, out := workedVerifier(true, 0, time.Now()).Verify(r)
	if out.Reason != "" || kid != "k1" {
		t.Fatalf("Verify = %q %+v", kid, out)
	}
	ev, out := workedVerifier(true, 0, time.Now()).judge(r, maxRecordBytes)
	if out.Reason != "" || ev.ProducerKeyID != "k1" || ev.ID != "0190a8e2-0000-7000-8000-000000000001" {
		t.Fatalf("judge = %+v %+v", ev, out)
	}
}

func TestVerify_Verdicts(t *testing.T) {
	signedAt := time.Date(2026, 9, 26, 12, 0, 5, 123456789, time.UTC)
	set := func(r *kgo.Record, k, v string) *kgo.Record {
		for i, h := range r.Headers {
			if h.Key == k {
				r.Headers[i].Value = []byte(v)
				return r
			}
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		return r
	}
	drop := func(r *kgo.Record, keys ...string) *kgo.Record {
		var hs []kgo.RecordHeader
		for _, h := range r.Headers {
			if !contains(keys, h.Key) {
				hs = append(hs, h)
			}
		}
		r.Headers = hs
		return r
	}
	tampered := workedRecord()
	tampered.Value = []byte(`{"amount":"99.00"}`)
	twice := workedRecord()
	twice.Headers = append(twice.Headers, kgo.RecordHeader{Key: "CE-SIG", Value: []byte(workedSig)})
	twiceDiff := workedRecord()
	twiceDiff.Headers = append(twiceDiff.Headers, kgo.RecordHeader{Key: "ce-sigkid", Value: []byte("k2")})
	for _, c := range []struct {
		name    string
		r       *kgo.Record
		require bool
		skew    time.Duration
		now     time.Time
		kid     string
		rule    string
	}{
		{"valid", workedRecord(), false, 0, signedAt, "k1", ""},
		{"valid within the skew", workedRecord(), false, time.Minute, signedAt.Add(59 * time.Second), "k1", ""},
		{"value changed", tampered, false, 0, signedAt, "", ReasonSignatureInvalid},
		{"header changed", set(workedRecord(), "ce-subject", "acc-2"), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"signed field added", set(workedRecord(), "ce-dataschema", "x"), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"bad form", set(workedRecord(), "ce-sig", "v2."+workedSig[3:]), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"unknown key", set(workedRecord(), "ce-sigkid", "k9"), false, 0, signedAt, "", ReasonSignatureUnknownKey},
		{"key of another source", set(workedRecord(), "ce-sigkid", "k2"), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"older than the skew", workedRecord(), false, time.Minute, signedAt.Add(61 * time.Second), "", ReasonSignatureInvalid},
		{"newer than the skew", workedRecord(), false, time.Minute, signedAt.Add(-61 * time.Second), "", ReasonSignatureInvalid},
		{"ce-sigts unparseable", set(workedRecord(), "ce-sigts", "yesterday"), false, time.Minute, signedAt, "", ReasonSignatureInvalid},
		{"ce-sig twice, same value", twice, false, 0, signedAt, "", ReasonSignatureInvalid},
		{"ce-sigkid twice, other value", twiceDiff, false, 0, signedAt, "", ReasonSignatureInvalid},
		{"ce-sig missing", drop(workedRecord(), "ce-sig"), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"ce-sigkid missing", drop(workedRecord(), "ce-sigkid"), false, 0, signedAt, "", ReasonSignatureInvalid},
		{"unsigned", drop(workedRecord(), "ce-sig", "ce-sigkid", "ce-sigts"), false, 0, signedAt, "", ""},
		{"unsigned, required", drop(workedRecord(), "ce-sig", "ce-sigkid", "ce-sigts"), true, 0, signedAt, "", ReasonSignatureMissing},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, out := workedVerifier(c.require, c.skew, c.now).judge(c.r, maxRecordBytes)
			checkOutcome(t, out)
			if out.Rule != c.rule || ev.ProducerKeyID != c.kid {
				t.Fatalf("judge = key %q, rule %q (reason %q), want key %q, rule %q", ev.ProducerKeyID, out.Rule, out.Reason, c.kid, c.rule)
			}
			if c.rule != "" && !strings.HasPrefix(out.Reason, c.rule+": ") {
				t.Fatalf("stored reason %q does not start with %s", out.Reason, c.rule)
			}
		})
	}
	// Without keys nothing is verified: a signed record is accepted, its
	// signature headers carried on as extensions, with no key.
	ev, out := (*Verifier)(nil).judge(tampered, maxRecordBytes)
	if out.Reason != "" || ev.ProducerKeyID != "" || ev.Extensions["ce-sig"] != workedSig {
		t.Fatalf("no keys: %+v %+v", ev, out)
	}
	if NewVerifier(config.Signatures{}, nil) != nil {
		t.Fatal("a verifier without keys")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzVerify: arbitrary headers and values never panic the verifier; a
// signature made over the fuzzed record always verifies, and the record
// with any one byte of its value or of a signed header changed never does.
//
//	go test ./internal/ingest -run '^$' -fuzz FuzzVerify -fuzztime 30s
func FuzzVerify(f *testing.F) {
	f.Add("ledger", "evt-1", "acc-1", "ce-x", "v", "2026-09-26T12:00:05Z", []byte(`{"amount":"10.00"}`), uint16(0), byte(1))
	f.Add("", "", "", "CE-SIG", "v1.", "", []byte(nil), uint16(7), byte(0x80))
	f.Add("l\x00", "\xff", "\x00\x00\x00\x01", "ce-sigkid", "k1", "x", []byte{0}, uint16(300), byte(0xff))
	secret := workedSecret()
	v := NewVerifier(config.Signatures{Keys: []config.SignatureKey{{ID: "k1", Source: "ledger", Secret: secret}}}, nil)
	f.Fuzz(func(t *testing.T, source, id, subject, extKey, extVal, sigts string, value []byte, pos uint16, flip byte) {
		hs := []kgo.RecordHeader{
			{Key: "ce-source", Value: []byte(source)}, {Key: "ce-id", Value: []byte(id)},
			{Key: "ce-subject", Value: []byte(subject)}, {Key: extKey, Value: []byte(extVal)},
		}
		// Arbitrary input, signature or not: never a panic, always a
		// fixed label and a storable reason.
		_, out := v.Verify(&kgo.Record{Headers: hs, Value: value})
		checkOutcome(t, out)

		if dup := duplicateSignature(hs); dup.Reason != "" || strings.HasPrefix(strings.ToLower(extKey), "ce-sig") || strings.EqualFold(extKey, "ce-source") {
			return // the fuzzed header would stand in for a signature header or the source
		}
		hs = append(hs, kgo.RecordHeader{Key: "ce-sigkid", Value: []byte("k1")}, kgo.RecordHeader{Key: "ce-sigts", Value: []byte(sigts)})
		signed := append(append([]kgo.RecordHeader(nil), hs...), kgo.RecordHeader{Key: "ce-sig", Value: []byte(Sign(secret, hs, value))})
		kid, out := v.Verify(&kgo.Record{Headers: signed, Value: value})
		if source == "ledger" {
			if out.Reason != "" || kid != "k1" {
				t.Fatalf("a valid signature did not verify: %q %+v", kid, out)
			}
		} else if out.Rule != ReasonSignatureInvalid {
			t.Fatalf("a key of another source verified: %q %+v", kid, out)
		}
		if flip == 0 {
			flip = 1
		}
		// One byte changed, in the value or in a signed header's value.
		changed := append([]byte(nil), value...)
		if len(changed) > 0 {
			changed[int(pos)%len(changed)] ^= flip
			if kid, out := v.Verify(&kgo.Record{Headers: signed, Value: changed}); out.Reason == "" || kid != "" {
				t.Fatalf("a changed value verified")
			}
		}
		mod := append([]kgo.RecordHeader(nil), signed...)
		i := int(pos) % (len(mod) - 1) // any header but ce-sig
		val := append([]byte(nil), mod[i].Value...)
		if len(val) == 0 {
			val = []byte{flip}
		} else {
			val[int(pos)%len(val)] ^= flip
		}
		mod[i].Value = val
		if kid, out := v.Verify(&kgo.Record{Headers: mod, Value: value}); out.Reason == "" || kid != "" {
			k := strings.ToLower(mod[i].Key)
			firstOfItsName := true
			for _, h := range mod[:i] {
				firstOfItsName = firstOfItsName && strings.ToLower(h.Key) != k
			}
			if contains(signedFields[:], k) && firstOfItsName {
				t.Fatalf("a record with %s changed verified", mod[i].Key)
			}
		}
		// One byte of ce-sig changed.
		sig := []byte(signed[len(signed)-1].Value)
		sig[int(pos)%len(sig)] ^= flip
		bad := append(append([]kgo.RecordHeader(nil), hs...), kgo.RecordHeader{Key: "ce-sig", Value: sig})
		if _, out := v.Verify(&kgo.Record{Headers: bad, Value: value}); out.Reason == "" {
			t.Fatalf("a changed ce-sig %q verified", sig)
		}
	})
}
