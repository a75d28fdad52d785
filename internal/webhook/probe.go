package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ProbeEventType is the X-Lerian-Event-Type of verification probes.
const ProbeEventType = "hub.verification"

// ProbeResult is the outcome of one verification probe.
type ProbeResult struct {
	Passed     bool
	StatusCode int    // 0 when no answer came
	Error      string // why it failed
	Duration   time.Duration
}

// Probe sends the verification probe: a signed POST of
// {"type":"hub.verification","challenge":"<random>","subscription_id":"<id>"}
// with the destination's auth and headers. It passes when the destination
// answers 2xx within the client's timeout and the body contains the
// challenge.
func Probe(ctx context.Context, c *http.Client, t Target, subscriptionID string, now time.Time) ProbeResult {
	challenge := randomHex(16)
	body, _ := json.Marshal(map[string]string{
		"type": ProbeEventType, "challenge": challenge, "subscription_id": subscriptionID,
	})
	req, err := NewRequest(ctx, t, Message{
		ID:          "probe_" + randomHex(12),
		Body:        body,
		ContentType: "application/json",
		Headers:     http.Header{"X-Lerian-Event-Type": {ProbeEventType}},
	}, now)
	if err != nil {
		return ProbeResult{Error: err.Error()}
	}
	start := time.Now()
	resp, err := c.Do(req)
	res := ProbeResult{Duration: time.Since(start)}
	if err != nil {
		res.Error = Describe(err)
		return res
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	answer := readLimited(resp.Body, 64<<10)
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		res.Error = fmt.Sprintf("destination answered %d", resp.StatusCode)
	case !bytes.Contains(answer, []byte(challenge)):
		res.Error = "destination answered 2xx but its body does not contain the challenge"
	default:
		res.Passed = true
	}
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
