package consumer

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The published Standard Webhooks test vectors.
var vectors = []struct {
	secret, id string
	ts         int64
	body, sig  string
}{
	{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	{"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553,
		`{"email":"test@example.com","username":"test_user"}`, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="},
}

func vectorHeaders(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifyVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.id, func(t *testing.T) {
			at := time.Unix(v.ts, 0)
			if err := VerifyAt(v.secret, vectorHeaders(v.id, v.ts, v.sig), []byte(v.body), 0, at); err != nil {
				t.Errorf("VerifyAt: %v", err)
			}
			// Without the whsec_ prefix, as Standard Webhooks libraries accept.
			bare := strings.TrimPrefix(v.secret, SecretPrefix)
			if err := VerifyAt(bare, vectorHeaders(v.id, v.ts, v.sig), []byte(v.body), 0, at); err != nil {
				t.Errorf("VerifyAt without prefix: %v", err)
			}
			// Raw lower-case keys, as a hand-built map would have them.
			raw := http.Header{"webhook-id": {v.id}, "webhook-timestamp": {strconv.FormatInt(v.ts, 10)}, "webhook-signature": {v.sig}}
			if err := VerifyAt(v.secret, raw, []byte(v.body), 0, at); err != nil {
				t.Errorf("VerifyAt with raw lower-case keys: %v", err)
			}
			if got, err := Sign(v.secret, v.id, v.ts, []byte(v.body)); err != nil || got != v.sig {
				t.Errorf("Sign = %q, %v; want %q", got, err, v.sig)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	v := vectors[0]
	at := time.Unix(v.ts, 0)
	good := strings.TrimPrefix(v.sig, "v1,")
	cases := []struct {
		name    string
		secret  string
		headers http.Header
		body    string
		now     time.Time
		tol     time.Duration
		want    error
		msg     string // in the error's text
	}{
		{name: "wrong signature", headers: vectorHeaders(v.id, v.ts, "v1,Kv+vSBTTRaQEd8bT2Zu3DaRIU9iA7vj/2PCxW2O0pPM="), want: ErrNoMatchingSignature},
		{name: "v1, alone", headers: vectorHeaders(v.id, v.ts, "v1,"), want: ErrNoMatchingSignature},
		{name: "no comma", headers: vectorHeaders(v.id, v.ts, good), want: ErrNoMatchingSignature},
		{name: "only a v2 entry", headers: vectorHeaders(v.id, v.ts, "v2,"+good), want: ErrNoMatchingSignature},
		{name: "only a v1a entry", headers: vectorHeaders(v.id, v.ts, "v1a,"+good), want: ErrNoMatchingSignature},
		{name: "tampered body", headers: vectorHeaders(v.id, v.ts, v.sig), body: `{"test": 2432232315}`, want: ErrNoMatchingSignature},
		{name: "wrong id", headers: vectorHeaders("msg_other", v.ts, v.sig), want: ErrNoMatchingSignature},
		{name: "wrong secret", secret: vectors[1].secret, headers: vectorHeaders(v.id, v.ts, v.sig), want: ErrNoMatchingSignature},
		{name: "signed timestamp changed", headers: vectorHeaders(v.id, v.ts+1, v.sig), now: at, want: ErrNoMatchingSignature},
		{name: "too old", headers: vectorHeaders(v.id, v.ts, v.sig), now: at.Add(DefaultTolerance + time.Second), want: ErrTimestampOutsideTolerance, msg: "5m1s too old"},
		{name: "too new", headers: vectorHeaders(v.id, v.ts, v.sig), now: at.Add(-DefaultTolerance - time.Second), want: ErrTimestampOutsideTolerance, msg: "5m1s in the future"},
		{name: "too old for a custom tolerance", headers: vectorHeaders(v.id, v.ts, v.sig), now: at.Add(11 * time.Second), tol: 10 * time.Second, want: ErrTimestampOutsideTolerance},
		{name: "absurd timestamp", headers: http.Header{"Webhook-Id": {v.id}, "Webhook-Timestamp": {"9223372036854775807"}, "Webhook-Signature": {v.sig}}, want: ErrTimestampOutsideTolerance},
		{name: "missing webhook-id", headers: http.Header{"Webhook-Timestamp": {"1614265330"}, "Webhook-Signature": {v.sig}}, want: ErrMissingHeader, msg: "webhook-id"},
		{name: "missing webhook-timestamp", headers: http.Header{"Webhook-Id": {v.id}, "Webhook-Signature": {v.sig}}, want: ErrMissingHeader, msg: "webhook-timestamp"},
		{name: "missing webhook-signature", headers: http.Header{"Webhook-Id": {v.id}, "Webhook-Timestamp": {"1614265330"}}, want: ErrMissingHeader, msg: "webhook-signature"},
		{name: "blank webhook-signature", headers: vectorHeaders(v.id, v.ts, "  "), want: ErrMissingHeader, msg: "webhook-signature"},
		{name: "no headers", headers: http.Header{}, want: ErrMissingHeader, msg: "webhook-id, webhook-timestamp, webhook-signature"},
		{name: "non-integer timestamp", headers: http.Header{"Webhook-Id": {v.id}, "Webhook-Timestamp": {"1614265330.5"}, "Webhook-Signature": {v.sig}}, want: ErrInvalidTimestamp},
		{name: "date timestamp", headers: http.Header{"Webhook-Id": {v.id}, "Webhook-Timestamp": {"Thu, 25 Feb 2021 15:02:10 GMT"}, "Webhook-Signature": {v.sig}}, want: ErrInvalidTimestamp},
		{name: "empty secret", secret: "-", headers: vectorHeaders(v.id, v.ts, v.sig), want: ErrInvalidSecret},
		{name: "prefix alone", secret: "whsec_", headers: vectorHeaders(v.id, v.ts, v.sig), want: ErrInvalidSecret},
		{name: "secret not base64", secret: "whsec_not*base64!", headers: vectorHeaders(v.id, v.ts, v.sig), want: ErrInvalidSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secret := v.secret
			switch c.secret {
			case "":
			case "-":
				secret = ""
			default:
				secret = c.secret
			}
			body := v.body
			if c.body != "" {
				body = c.body
			}
			now := at
			if !c.now.IsZero() {
				now = c.now
			}
			err := VerifyAt(secret, c.headers, []byte(body), c.tol, now)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %q, want it to mention %q", err, c.msg)
			}
			if s := strings.TrimPrefix(secret, SecretPrefix); s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("err = %q quotes the secret", err)
			}
		})
	}
}

func TestVerifyToleranceBoundsInclusive(t *testing.T) {
	v := vectors[0]
	h := vectorHeaders(v.id, v.ts, v.sig)
	for _, d := range []time.Duration{DefaultTolerance, -DefaultTolerance} {
		if err := VerifyAt(v.secret, h, []byte(v.body), 0, time.Unix(v.ts, 0).Add(d)); err != nil {
			t.Errorf("at %s from the timestamp: %v", d, err)
		}
	}
	// A negative tolerance means the default too.
	if err := VerifyAt(v.secret, h, []byte(v.body), -time.Second, time.Unix(v.ts, 0).Add(time.Minute)); err != nil {
		t.Errorf("tolerance -1s: %v", err)
	}
}

func TestVerifySeveralEntries(t *testing.T) {
	v := vectors[0]
	good := strings.TrimPrefix(v.sig, "v1,")
	sig := "v1a,junk v2," + good + " v1,Kv+vSBTTRaQEd8bT2Zu3DaRIU9iA7vj/2PCxW2O0pPM=  " + v.sig + " v1,"
	if err := VerifyAt(v.secret, vectorHeaders(v.id, v.ts, sig), []byte(v.body), 0, time.Unix(v.ts, 0)); err != nil {
		t.Fatalf("one matching entry among several: %v", err)
	}
	// The same entries as repeated header lines.
	h := vectorHeaders(v.id, v.ts, "v1,Kv+vSBTTRaQEd8bT2Zu3DaRIU9iA7vj/2PCxW2O0pPM=")
	h.Add("webhook-signature", v.sig)
	if err := VerifyAt(v.secret, h, []byte(v.body), 0, time.Unix(v.ts, 0)); err != nil {
		t.Fatalf("matching entry on a second header line: %v", err)
	}
}

func TestVerifierRotation(t *testing.T) {
	oldSecret, newSecret := vectors[0].secret, vectors[1].secret
	body := []byte(`{"amount":100}`)
	clock := newFakeClock()
	ts := clock.Now().Unix()
	sigOld, _ := Sign(oldSecret, "evt-1", ts, body)
	sigNew, _ := Sign(newSecret, "evt-1", ts, body)
	both := signedHeaders(t, oldSecret, "evt-1", ts, body)
	both.Set(HeaderWebhookSignature, sigOld+" "+sigNew)
	onlyNew := signedHeaders(t, newSecret, "evt-1", ts, body)

	// The hub signs with both during the overlap: either secret verifies.
	for _, s := range []string{oldSecret, newSecret} {
		if err := VerifyAt(s, both, body, 0, clock.Now()); err != nil {
			t.Errorf("VerifyAt with one of two signing secrets: %v", err)
		}
	}
	// A receiver holding both accepts the new secret's signature alone.
	v := Verifier{Secrets: []string{oldSecret, newSecret}, Now: clock.Now}
	if err := v.Verify(onlyNew, body); err != nil {
		t.Errorf("Verifier{old, new} on a new-secret signature: %v", err)
	}
	if err := (Verifier{Secrets: []string{oldSecret}, Now: clock.Now}).Verify(onlyNew, body); !errors.Is(err, ErrNoMatchingSignature) {
		t.Errorf("Verifier{old} on a new-secret signature = %v, want ErrNoMatchingSignature", err)
	}
	if err := (Verifier{}).Verify(onlyNew, body); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("zero Verifier = %v, want ErrInvalidSecret", err)
	}
	err := (Verifier{Secrets: []string{oldSecret, "whsec_%%%"}, Now: clock.Now}).Verify(onlyNew, body)
	if !errors.Is(err, ErrInvalidSecret) || !strings.Contains(err.Error(), "secret 2 of 2") {
		t.Errorf("Verifier with a bad second secret = %v, want ErrInvalidSecret naming secret 2", err)
	}
}

func TestVerifyRealClock(t *testing.T) {
	body := []byte(`{"ok":true}`)
	h := signedHeaders(t, vectors[0].secret, "evt-now", time.Now().Unix(), body)
	if err := Verify(vectors[0].secret, h, body, 0); err != nil {
		t.Fatalf("Verify of a fresh delivery: %v", err)
	}
	if err := (Verifier{Secrets: []string{vectors[0].secret}}).Verify(h, body); err != nil {
		t.Fatalf("Verifier.Verify of a fresh delivery: %v", err)
	}
}
