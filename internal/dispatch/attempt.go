package dispatch

import (
	"context"
	"fmt"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch/concurrency"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"go.opentelemetry.io/otel/trace"
)

// attempt is one claimed job on its way: prepared (its target and message
// ready, or its outcome already known), then sent through the one send
// path and answered.
type attempt struct {
	c       store.Claimed
	address string // the destination's Address(): its breaker
	out     store.Completion
	now     time.Time
	ctx     context.Context    // the attempt's, with its span
	target  destination.Target // its destination, credentials and signing secrets
	msg     destination.Message
	rec     *hub.Attempt // nil when await sends nothing (shed, no event)
	err     error        // why nothing could be sent (the attempt fails)
	span    trace.Span   // the attempt's CLIENT span; nil when nothing is exported
	// throttled is when the subscription's next token comes, for a job
	// made to wait by its rate limit; zero otherwise.
	throttled time.Time
	// outcome and rtt are what the answer says of the receiver's capacity
	// and how long it took: its host's limit follows them
	// (docs/delivery.md, "Concurrency that follows the receiver"). Ignore
	// when nothing was sent.
	outcome concurrency.Outcome
	rtt     time.Duration
	// transformed is how long the transform took, its wait for a worker
	// included: part of the attempt's duration.
	transformed time.Duration
}

// deliver makes exactly one attempt of a claimed job and returns its
// completion.
func (d *Dispatcher) deliver(ctx context.Context, c store.Claimed) store.Completion {
	return d.await(d.prepare(ctx, c, c.Subscription.Destination.Address()))
}

// prepare decides whether the job is attempted at all (the event exists,
// the destination's breaker lets it through) and makes its target and
// message: the workers' part. address is c's destination's Address(),
// worked out once for the unit of work c belongs to.
func (d *Dispatcher) prepare(ctx context.Context, c store.Claimed, address string) *attempt {
	now := d.now()
	a := &attempt{c: c, address: address, now: now, out: store.Completion{
		JobLease:       store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
		SubscriptionID: c.Job.SubscriptionID,
	}}
	if c.Event.ID == "" {
		// Retention never removes an event a live job needs; if it is
		// gone anyway there is nothing to send, ever.
		a.out.Status, a.out.DeadLetterReason = hub.JobDeadLettered, hub.DeadLetterExhausted
		a.out.LastError = "the event is no longer in the inbox"
		return a
	}
	if rate := c.Subscription.RateLimit; rate > 0 {
		// Before the breaker: a job that waits for a token must not take
		// the half-open probe's place.
		if ok, next := d.throttles.take(c.Job.SubscriptionID, rate, now); !ok {
			d.throttle(a, next)
			return a
		}
	}
	if b := d.cfg.Breakers; b != nil {
		changed := c.Subscription.UpdatedAt // a verify, a PATCH, a rotation
		if c.HealedAt.After(changed) {
			changed = c.HealedAt // another process's breaker closed
		}
		if woken := b.Changed(c.Job.TenantID, a.address, changed); len(woken) > 0 {
			d.wakeShed(woken)
		}
		if ok, retryAt := b.AllowFor(c.Job.TenantID, a.address, c.Job.SubscriptionID); !ok {
			d.shed(a, retryAt)
			a.out.Hold = true // an ordered subscription waits with it, in every process
			d.cfg.Metrics.Shed.Inc()
			return a
		}
	}
	a.rec = &hub.Attempt{ID: hub.NewID("att", now), JobID: c.Job.ID, StartedAt: now}
	a.out.Attempt = a.rec
	ctx, span, traceparent := d.traceAttempt(ctx, c, a.rec)
	a.span = span
	a.ctx = ctx
	sec, err := destination.OpenSecrets(d.cfg.Keyring, c.Subscription)
	if err != nil {
		a.err = fmt.Errorf("cannot open the subscription's secrets (is STREAMING_HUB_KEK right?): %w", err)
		return a
	}
	a.target = destination.TargetOf(c.Subscription, sec, now)
	// The subscription's transform
	// (docs/filters-and-transforms.md) makes the body;
	// the headers and the signature cover what it made.
	start := time.Now()
	body, contentType, err := d.transforms.Apply(ctx, c.Subscription.Transform, c.Event)
	a.transformed = time.Since(start)
	if err != nil {
		a.err = err
		return a
	}
	a.msg = message(c.Event, body, contentType, a.rec.ID, traceparent, now)
	return a
}

// shed makes a the completion of a job not attempted: back to waiting
// until at (now when zero), its attempts untouched.
func (d *Dispatcher) shed(a *attempt, at time.Time) {
	a.out.Status, a.out.NextAttemptAt, a.out.Shed = hub.JobPending, at, true
	a.out.LastError, a.out.Attempt, a.rec = a.c.Job.LastError, nil, nil
	if a.span != nil {
		a.span.End() // nothing was sent after all
		a.span = nil
	}
}

// throttle makes a wait, without an attempt, for its subscription's next
// token at next: like a shed job, it keeps its attempts and its place.
func (d *Dispatcher) throttle(a *attempt, next time.Time) {
	d.shed(a, next)
	a.throttled = next
	d.cfg.Metrics.Throttled.Inc()
}

// attempted reports whether await will send or count a failure.
func (a *attempt) attempted() bool { return a.rec != nil }

// await sends a prepared attempt through the send path, waits for its
// answer (up to the delivery timeout) and decides what happens to the job.
func (d *Dispatcher) await(a *attempt) store.Completion {
	if a.rec == nil {
		return a.out
	}
	c, out, now := a.c, a.out, a.now
	res := destination.Result{Err: a.err}
	a.rec.Duration = a.transformed
	if a.err == nil {
		// The last look before sending: a process that cannot be sure its
		// jobs are still its own sends nothing (docs/delivery.md,
		// "Crashes").
		if !d.heart.alive() {
			d.shed(a, time.Time{})
			return a.out
		}
		stop := d.heart.attempts()
		actx, cancel := context.WithCancel(a.ctx)
		unhook := context.AfterFunc(stop, cancel)
		res = d.cfg.Destinations.Send(actx, a.target, a.msg)
		unhook()
		cancel()
		a.outcome, a.rtt = concurrency.OutcomeOf(res.Status, res.Err), res.Duration
		if res.Err != nil && stop.Err() != nil {
			return d.canceled(a, res)
		}
		a.rec.Duration, a.rec.ResponseBody = a.transformed+res.Duration, res.Body
		a.rec.RequestHeaders, a.rec.ResponseHeaders = res.Sent, destination.AnswerHeaders(res.Header)
		if res.Err != nil && res.Status == 0 && a.target.Type == hub.DestinationWebhook {
			noteTransportError(a.ctx, res.Err)
		}
	}
	status, err := res.Status, res.Err
	a.rec.StatusCode = status
	endAttempt(a.span, status, err)
	if b := d.cfg.Breakers; b != nil {
		// A timeout is a failure like any other
		// (docs/breakers.md).
		if woken := b.Record(c.Job.TenantID, a.address, err == nil); len(woken) > 0 {
			d.wakeShed(woken)
		}
	}
	if err == nil {
		out.Status = hub.JobSucceeded
		d.observeSuccess(c, a.rec)
		return out
	}
	a.rec.Error = store.CleanText(err.Error(), 1024)
	out.LastError = a.rec.Error
	d.randMu.Lock() // attempts share the (seedable) jitter source
	dec := afterFailure(&c.Subscription, c.Job.Attempts+1, status, retryAfter(res.Header, now), now, d.rand)
	d.randMu.Unlock()
	out.Status, out.NextAttemptAt, out.DeadLetterReason = dec.status, dec.next, dec.reason
	d.observeFailure(c, a.rec, err)
	return out
}

// canceledAtFence is the error of an attempt canceled at the heartbeat's
// fence: its job's last_error until it is sent again, and what tells the
// writer's accounting (account) to count its redelivery.
const canceledAtFence = "canceled: this process could not renew its heartbeat in time (docs/delivery.md, crashes)"

// canceled is the outcome of an attempt this process canceled because it
// could not renew its heartbeat: the request may have reached the
// receiver, so it is logged; the job is due again at once (whoever holds
// it then sends it), and the receiver's breaker is not told: nothing was
// learned of it.
func (d *Dispatcher) canceled(a *attempt, res destination.Result) store.Completion {
	a.rec.Duration, a.rec.RequestHeaders = a.transformed+res.Duration, res.Sent
	a.rec.Error = canceledAtFence
	endAttempt(a.span, 0, res.Err)
	out := a.out
	out.Status, out.NextAttemptAt, out.LastError = hub.JobPending, time.Time{}, a.rec.Error
	return out
}

// wakeShed makes the waiting jobs of subscriptions a closed breaker had
// shed due now, so their backlog drains at once and in arrival order. It
// is rare (a breaker closing) and done before the next attempt, so that
// attempt finds them due.
func (d *Dispatcher) wakeShed(subs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.cfg.Store.WakeJobs(ctx, subs); err != nil {
		d.cfg.Logger.Warn("could not make shed jobs due after their breaker closed; they wait out their shed time", "err", err)
		return
	}
	d.ledger.hints.add(subs)
}

// observeSuccess and observeFailure record an attempt's metrics.
func (d *Dispatcher) observeSuccess(c store.Claimed, a *hub.Attempt) {
	m := d.cfg.Metrics
	m.Attempts.WithLabelValues("success").Inc()
	m.AttemptDuration.WithLabelValues("success").Observe(a.Duration.Seconds())
	m.EndToEnd.Observe(d.now().Sub(c.Job.EnqueuedAt).Seconds())
}

func (d *Dispatcher) observeFailure(c store.Claimed, a *hub.Attempt, err error) {
	m := d.cfg.Metrics
	m.Attempts.WithLabelValues("failure").Inc()
	m.AttemptDuration.WithLabelValues("failure").Observe(a.Duration.Seconds())
	d.cfg.Logger.Debug("delivery attempt failed", "job", c.Job.ID, "subscription", c.Job.SubscriptionID,
		"attempt", c.Job.Attempts+1, "error", a.Error, "detail", destination.Detail(err))
}
