// Package destinationtest is the behaviour every destination driver shares
// (docs/brokers.md, docs/aws.md), written once: a driver's tests call Run
// with a destination of its type they can read from, and one that refuses.
package destinationtest

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// Delivered is one message as the destination's reader got it: its body
// exactly as sent and its headers by name (however the destination
// carries them: headers, attributes, an envelope).
type Delivered struct {
	Body    []byte
	Headers map[string]string
}

// Harness is a driver under test and what the suite needs around it.
type Harness struct {
	// Driver is closed by Run, at its end.
	Driver destination.Driver
	// Target is a destination of the driver's type that takes messages;
	// its Secrets are set by Run.
	Target destination.Target
	// Received waits for at least n messages delivered to Target since
	// the last call and returns them (it fails the test after a while).
	Received func(t *testing.T, n int) []Delivered
	// Refusing is a destination of the same type whose endpoint refuses
	// (a closed port, or the service answering an error).
	Refusing destination.Target
	// Timeout is the delivery timeout of Run's send path (0: 30 s).
	Timeout time.Duration
	// Reformats says the destination hands its reader a JSON body
	// re-serialized (EventBridge's detail): the body is compared as JSON,
	// and the signature, over the bytes sent, cannot be checked there.
	Reformats bool
}

// Run checks h's driver through the one send path (destination.Registry).
func Run(t *testing.T, h Harness) {
	secret := destination.NewSecret()
	h.Target.Secrets, h.Refusing.Secrets = []string{secret}, []string{secret}
	if h.Target.SubscriptionID == "" {
		h.Target.SubscriptionID = "sub_conformance"
	}
	if h.Refusing.SubscriptionID == "" {
		h.Refusing.SubscriptionID = "sub_conformance_refusing"
	}
	if h.Timeout == 0 {
		h.Timeout = 30 * time.Second
	}
	reg := destination.NewRegistry(h.Timeout, map[string]destination.Driver{h.Target.Type: h.Driver})
	t.Cleanup(func() {
		if err := h.Driver.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	t.Run("DeliversTheBodyWithItsHeadersSigned", func(t *testing.T) {
		ev := hub.Event{ID: "ev-conformance-1", TenantID: "acme", Type: "ledger.transaction.posted", EventType: "transaction.posted",
			Source: "//ledger", SpecVersion: "1.0", Time: "2026-12-01T10:00:00Z", SchemaVersion: "1.0.0", Sequence: 7, Subject: "acct-1"}
		body := []byte(`{"amount":"12.50","currency":"BRL"}`)
		m := destination.Message{ID: ev.ID, EventType: ev.EventType, TenantID: ev.TenantID, ContentType: "application/json",
			Body: body, Time: time.Now(), Headers: destination.EventHeaders(ev, "att_conformance_1", "")}
		res := reg.Send(context.Background(), h.Target, m)
		if res.Err != nil {
			t.Fatalf("send: %v (%s)", res.Err, destination.Detail(res.Err))
		}
		if headerOf(res.Sent, "webhook-signature") == "" || headerOf(res.Sent, "ce-id") != ev.ID {
			t.Errorf("the attempt log keeps %v: the signature and ce-id expected", res.Sent)
		}
		got := h.Received(t, 1)
		if len(got) != 1 {
			t.Fatalf("received %d messages, want 1", len(got))
		}
		d := got[0]
		if h.Reformats {
			if !sameJSON(d.Body, body) {
				t.Errorf("body %s, want %s (as JSON)", d.Body, body)
			}
		} else if string(d.Body) != string(body) {
			t.Errorf("body %q, want %q", d.Body, body)
		}
		for name, want := range map[string]string{"ce-id": ev.ID, "ce-type": ev.Type, "ce-source": ev.Source,
			"ce-specversion": "1.0", "ce-subject": "acct-1", "X-Lerian-Tenant-Id": "acme", "X-Lerian-Event-Type": ev.EventType,
			"X-Lerian-Sequence": "7", "webhook-id": ev.ID} {
			if got := headerOf(d.Headers, name); got != want {
				t.Errorf("header %s = %q, want %q (all: %v)", name, got, want, d.Headers)
			}
		}
		hh := http.Header{}
		for k, v := range d.Headers {
			hh.Set(k, v)
		}
		if h.Reformats {
			return
		}
		if err := consumer.Verify(secret, hh, d.Body, 5*time.Minute); err != nil {
			t.Errorf("consumer.Verify of what was delivered: %v", err)
		}
	})

	t.Run("VerificationProbePasses", func(t *testing.T) {
		res := reg.Probe(context.Background(), h.Target, "acme", h.Target.SubscriptionID, time.Now())
		if !res.Passed {
			t.Fatalf("probe failed: %s (%s)", res.Error, res.Detail)
		}
		got := h.Received(t, 1)
		if len(got) != 1 || headerOf(got[0].Headers, "X-Lerian-Event-Type") != destination.ProbeEventType {
			t.Fatalf("received %+v: one hub.verification message expected", got)
		}
	})

	t.Run("RefusingEndpointIsAClearFailure", func(t *testing.T) {
		m := destination.Message{ID: "ev-refused", EventType: "transaction.posted", TenantID: "acme",
			ContentType: "application/json", Body: []byte(`{}`), Time: time.Now(), Headers: http.Header{}}
		res := reg.Send(context.Background(), h.Refusing, m)
		if res.Err == nil {
			t.Fatal("a send to a refusing endpoint succeeded")
		}
		if text := res.Err.Error(); strings.TrimSpace(text) == "" || strings.Contains(text, "<nil>") || destination.Detail(res.Err) == "" {
			t.Errorf("the tenant reads %q (the log %q): a clear text expected", text, destination.Detail(res.Err))
		}
	})

	t.Run("ACanceledAttemptEndsAtOnce", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m := destination.Message{ID: "ev-canceled", EventType: "transaction.posted", TenantID: "acme",
			ContentType: "application/json", Body: []byte(`{}`), Time: time.Now(), Headers: http.Header{}}
		if res := reg.Send(ctx, h.Target, m); res.Err == nil {
			t.Fatal("an attempt whose context was canceled succeeded")
		}
	})
}

// headerOf is headers' value of name, whatever its case.
func headerOf(headers map[string]string, name string) string {
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
