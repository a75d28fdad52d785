package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/webhook"
)

// deliver makes exactly one attempt of a claimed job and returns its
// completion.
func (d *Dispatcher) deliver(ctx context.Context, c store.Claimed) store.Completion {
	now := d.now()
	out := store.Completion{
		JobLease:       store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
		SubscriptionID: c.Job.SubscriptionID,
	}
	if c.Event.ID == "" {
		// Retention never removes an event a live job needs; if it is
		// gone anyway there is nothing to send, ever.
		out.Status, out.DeadLetterReason = hub.JobDeadLettered, hub.DeadLetterExhausted
		out.LastError = "the event is no longer in the inbox"
		return out
	}
	tenant, url := c.Job.TenantID, c.Subscription.Destination.URL
	if b := d.cfg.Breakers; b != nil {
		if ok, retryAt := b.Allow(tenant, url); !ok {
			// Shed: no request, no attempt consumed from the curve.
			out.Status, out.NextAttemptAt, out.Shed = hub.JobPending, retryAt, true
			out.LastError = c.Job.LastError
			d.cfg.Metrics.Shed.Inc()
			return out
		}
	}
	attempt := &hub.Attempt{ID: hub.NewID("att", now), JobID: c.Job.ID, StartedAt: now}
	out.Attempt = attempt
	ctx, span, traceparent := d.traceAttempt(ctx, c, attempt)
	status, header, err := d.send(ctx, c, attempt, now, traceparent)
	attempt.StatusCode = status
	if err == nil && (status < 200 || status > 299) {
		err = fmt.Errorf("destination answered %d", status)
	}
	endAttempt(span, status, err)
	if b := d.cfg.Breakers; b != nil {
		b.Record(tenant, url, err == nil)
	}
	if err == nil {
		out.Status = hub.JobSucceeded
		d.observeSuccess(c, attempt)
		return out
	}
	attempt.Error = store.CleanText(err.Error(), 1024)
	out.LastError = attempt.Error
	d.randMu.Lock() // workers share the (seedable) jitter source
	dec := afterFailure(&c.Subscription, c.Job.Attempts+1, status, retryAfter(header, now), now, d.rand)
	d.randMu.Unlock()
	out.Status, out.NextAttemptAt, out.DeadLetterReason = dec.status, dec.next, dec.reason
	d.observeFailure(c, attempt)
	return out
}

// send makes the HTTP request. It returns the status (0 when no answer
// came), the answer's headers, and the error that kept it from answering.
func (d *Dispatcher) send(ctx context.Context, c store.Claimed, a *hub.Attempt, now time.Time, traceparent string) (int, http.Header, error) {
	sec, err := webhook.OpenSecrets(d.cfg.Keyring, c.Subscription)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot open the subscription's secrets (is STREAMING_HUB_KEK right?): %w", err)
	}
	req, err := webhook.NewRequest(ctx, webhook.TargetOf(c.Subscription, sec, now), webhook.Message{
		ID:          c.Event.ID,
		Body:        c.Event.Data,
		ContentType: c.Event.DataContentType,
		Headers:     eventHeaders(c.Event, a.ID, traceparent),
	}, now)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	resp, err := d.cfg.Client.Do(req)
	a.Duration = time.Since(start)
	if err != nil {
		noteTransportError(ctx, err)
		return 0, nil, errors.New(webhook.Describe(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, hub.MaxResponseBody))
	io.CopyN(io.Discard, resp.Body, 64<<10) // let the connection be reused
	a.ResponseBody = store.CleanText(string(body), hub.MaxResponseBody)
	return resp.StatusCode, resp.Header, nil
}
