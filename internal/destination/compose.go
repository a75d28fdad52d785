package destination

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/webhook"
)

// Compose is the broker message of what a webhook attempt would send: the
// same body and, through webhook.SignedHeaders, the same headers and
// Standard Webhooks signature (secrets valid at now).
func Compose(secrets []string, m webhook.Message, eventType, tenant string, now time.Time) (Message, error) {
	h := http.Header{}
	if err := webhook.SignedHeaders(h, secrets, m, now); err != nil {
		return Message{}, err
	}
	return Message{ID: m.ID, EventType: eventType, TenantID: tenant, ContentType: m.ContentType,
		Body: m.Body, Time: now, Headers: HeadersOf(h)}, nil
}

// Probe verifies a broker destination (SPEC 22): it publishes a signed
// hub.verification message, {"type":"hub.verification","challenge":...,
// "subscription_id":...}, and passes when the broker confirms it within
// ctx's deadline.
func Probe(ctx context.Context, s Sender, t Target, secrets []string, tenant, subscriptionID string, now time.Time) webhook.ProbeResult {
	challenge, id := randomHex(16), "probe_"+randomHex(12)
	body, _ := json.Marshal(map[string]string{
		"type": webhook.ProbeEventType, "challenge": challenge, "subscription_id": subscriptionID,
	})
	m, err := Compose(secrets, webhook.Message{ID: id, Body: body, ContentType: "application/json",
		Headers: http.Header{
			"X-Lerian-Event-Type":  {webhook.ProbeEventType},
			"X-Lerian-Delivery-Id": {id},
			"X-Lerian-Tenant-Id":   {tenant},
		}}, webhook.ProbeEventType, tenant, now)
	if err != nil {
		return webhook.ProbeResult{Error: err.Error()}
	}
	m.Probe = true
	start := time.Now()
	err = s.Send(ctx, t, m)
	res := webhook.ProbeResult{Duration: time.Since(start), Passed: err == nil}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
