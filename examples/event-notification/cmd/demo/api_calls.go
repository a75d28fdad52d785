package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
)

// call sends one command to the payments API, prints it, and returns the
// payment it answered with.
func (d *demo) call(ctx context.Context, method, path, body string, want int) (payments.Payment, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.api.url()+path, strings.NewReader(body))
	if err != nil {
		return payments.Payment{}, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return payments.Payment{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return payments.Payment{}, fmt.Errorf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	var p payments.Payment
	if err := json.Unmarshal(b, &p); err != nil {
		return payments.Payment{}, fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	d.say("  %-6s %-52s -> %d  %s v%d", method, shortenPath(path), resp.StatusCode, p.Status, p.Version)
	return p, nil
}

// createApproved creates a PIX and approves it through the API.
func (d *demo) createApproved(ctx context.Context, cents int64, payer, payee string) (payments.Payment, error) {
	body := fmt.Sprintf(`{"amountCents":%d,"currency":"BRL","payerAccount":%q,"payeeAccount":%q}`, cents, payer, payee)
	p, err := d.call(ctx, http.MethodPost, "/payments", body, http.StatusCreated)
	if err != nil {
		return p, err
	}
	return d.call(ctx, http.MethodPost, "/payments/"+p.ID+"/approve", "", http.StatusOK)
}

// shortenPath keeps the first block of a payment id so lines stay readable.
func shortenPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if len(p) == 36 {
			parts[i] = p[:8] + "…"
		}
	}
	return strings.Join(parts, "/")
}
