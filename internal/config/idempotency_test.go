package config

import (
	"strings"
	"testing"
	"time"
)

// STREAMING_HUB_IDEMPOTENCY_TTL: 24h unless set, a positive duration of at
// most 7 days when set (docs/lerian-platform.md).
func TestLoad_IdempotencyTTL(t *testing.T) {
	c, err := Load(Dev, env(nil))
	if err != nil || c.IdempotencyTTL != 24*time.Hour {
		t.Fatalf("default: %v, %v", c.IdempotencyTTL, err)
	}
	for in, want := range map[string]time.Duration{"1h": time.Hour, "168h": 168 * time.Hour, "90s": 90 * time.Second} {
		c, err := Load(Dev, env(map[string]string{"STREAMING_HUB_IDEMPOTENCY_TTL": in}))
		if err != nil || c.IdempotencyTTL != want {
			t.Errorf("%s: %v, %v", in, c.IdempotencyTTL, err)
		}
	}
	for bad, want := range map[string]string{
		"0s":     "must be a positive Go duration",
		"-1h":    "must be a positive Go duration",
		"a day":  "must be a positive Go duration",
		"168h1s": `must be at most 168h (7 days), got "168h0m1s"`,
		"10000h": "must be at most 168h (7 days)",
	} {
		_, err := Load(Dev, env(map[string]string{"STREAMING_HUB_IDEMPOTENCY_TTL": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_IDEMPOTENCY_TTL: "+want) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if w := Unknown([]string{"STREAMING_HUB_IDEMPOTENCY_TTL=1h"}); len(w) != 0 {
		t.Errorf("IDEMPOTENCY_TTL is reported unknown: %v", w)
	}
}
