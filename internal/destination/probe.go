package destination

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// ProbeEventType is the X-Lerian-Event-Type of verification probes.
const ProbeEventType = "hub.verification"

// ProbeResult is the outcome of one verification probe.
type ProbeResult struct {
	Passed     bool
	StatusCode int    // 0 when no answer came
	Error      string // why it failed, as its tenant may read it (Explain)
	Detail     string // the whole error, for the server's log only
	Duration   time.Duration
}

// Probe verifies t (docs/delivery.md,
// docs/brokers.md): it sends a signed
// hub.verification message,
// {"type":"hub.verification","challenge":...,"subscription_id":...}, through
// the send path. A webhook passes when it answers 2xx with the challenge in
// its body, a broker when it confirms the message.
func (r *Registry) Probe(ctx context.Context, t Target, tenant, subscriptionID string, now time.Time) ProbeResult {
	challenge, id := RandomHex(16), "probe_"+RandomHex(12)
	body, _ := json.Marshal(map[string]string{
		"type": ProbeEventType, "challenge": challenge, "subscription_id": subscriptionID,
	})
	h := http.Header{"X-Lerian-Event-Type": {ProbeEventType}}
	if t.Type != hub.DestinationWebhook {
		// A broker's probe has always carried these too; a webhook's
		// only its event type (docs/delivery.md).
		h["X-Lerian-Delivery-Id"], h["X-Lerian-Tenant-Id"] = []string{id}, []string{tenant}
	}
	res := r.Send(ctx, t, Message{ID: id, EventType: ProbeEventType, TenantID: tenant,
		ContentType: "application/json", Body: body, Time: now, Headers: h, Probe: true, Challenge: challenge})
	out := ProbeResult{StatusCode: res.Status, Duration: res.Duration, Passed: res.Err == nil}
	if res.Err != nil {
		out.Error, out.Detail = res.Err.Error(), Detail(res.Err)
	}
	return out
}

// RandomHex is n random bytes in hex: the ids of probes and test events.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
