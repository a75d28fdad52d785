package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
)

// (a) approve, read the thin event, notify with fetched detail.
func (d *demo) approvedAndNotified(ctx context.Context) error {
	d.section("(a) A PIX is approved; the notifier fetches the detail the event leaves out")
	p, err := d.createApproved(ctx, 15000, "0001-1 (Ana)", "0002-2 (Bia)")
	if err != nil {
		return err
	}
	last, err := d.rdb.XRevRangeN(ctx, d.keys.Stream(), "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return fmt.Errorf("read last stream entry: %v", err)
	}
	d.say("  stream entry %s, field %q:", last[0].ID, notify.StreamField)
	d.say("    %s", last[0].Values[notify.StreamField])
	d.say("  the event carries only {paymentId, version}: no amount, no accounts (payment %s…)", p.ID[:8])

	before := d.requests.Count()
	if err := d.notifierPass(ctx); err != nil {
		return err
	}
	d.say("  API requests made by the notifier: %d (payment.created is not for customers: acked without a call)",
		d.requests.Count()-before)
	return nil
}

// (b) the source is down: no XACK, pending, re-read first after recovery.
func (d *demo) sourceDown(ctx context.Context) error {
	d.section("(b) The payments API goes down: the notification waits in the pending list")
	if _, err := d.createApproved(ctx, 4990, "0003-3 (Caio)", "0004-4 (Duda)"); err != nil {
		return err
	}
	if err := d.api.stop(ctx); err != nil {
		return err
	}
	d.say("  payments API stopped (%s refuses connections)", d.api.addr)
	if err := d.notifierPass(ctx); err != nil {
		return err
	}
	if err := d.showPending(ctx, receivers.NotifierGroup); err != nil {
		return err
	}
	if err := d.api.start(); err != nil {
		return err
	}
	d.say("  payments API back on %s", d.api.addr)
	d.say("  next pass reads its own pending entries first (XREADGROUP ... STREAMS s 0):")
	if err := d.notifierPass(ctx); err != nil {
		return err
	}
	return d.showPending(ctx, receivers.NotifierGroup)
}

// (c) refund lands before the approval is read: superseded by version.
func (d *demo) refundBeforeRead(ctx context.Context) error {
	d.section("(c) A refund lands before the notifier reads the approval")
	p, err := d.createApproved(ctx, 120000, "0005-5 (Edu)", "0006-6 (Fê)")
	if err != nil {
		return err
	}
	if _, err := d.call(ctx, http.MethodPost, "/payments/"+p.ID+"/refund", "", http.StatusOK); err != nil {
		return err
	}
	d.say("  the approval announced v2; GET now answers v3 (refunded): the approval is superseded.")
	d.say("  decision: tell the customer about the approval with the current state, flagged, then the refund:")
	return d.notifierPass(ctx)
}

// (d) the counter: notification only, SADD by event id, redelivery once.
func (d *demo) counterCallsNobody(ctx context.Context) error {
	d.section("(d) The approvals counter uses the notification only")
	before := d.requests.Count()
	d.say("  payments API requests so far: %d", before)

	errCrash := errors.New("crashed before XACK")
	crashing, err := notify.NewReader(d.rdb, notify.ReaderConfig{
		Stream: d.keys.Stream(), Group: receivers.CounterGroup, Consumer: "counter-crashed",
	}, notify.HandlerFunc(func(ctx context.Context, m notify.Message) error {
		if err := d.counter.Handle(ctx, m); err != nil {
			return err
		}
		return errCrash // counted, but the member dies before acknowledging
	}))
	if err != nil {
		return err
	}
	res, err := crashing.Pass(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	n, err := d.counter.Count(ctx, now)
	if err != nil {
		return err
	}
	d.say("  member counter-crashed counts and dies before XACK: %s", res)
	d.say("  approvals on %s: %d   (SCARD %s)", d.counter.Day(now), n, d.keys.ApprovalsDay(d.counter.Day(now)))

	survivor, err := notify.NewReader(d.rdb, notify.ReaderConfig{
		Stream: d.keys.Stream(), Group: receivers.CounterGroup, Consumer: "counter-1", ClaimIdle: d.cfg.claimIdle,
	}, d.counter)
	if err != nil {
		return err
	}
	d.say("  waiting %s, then member counter-1 takes the entries over (XAUTOCLAIM) and handles them again:", d.cfg.claimIdle)
	select {
	case <-time.After(d.cfg.claimIdle + 20*time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if res, err = survivor.Pass(ctx); err != nil {
		return err
	}
	if n, err = d.counter.Count(ctx, now); err != nil {
		return err
	}
	d.say("  counter-1 pass: %s", res)
	d.say("  approvals on %s: %d   (the redelivered events were already in the set: counted once)", d.counter.Day(now), n)
	d.say("  payments API requests now: %d (unchanged: the counter called nobody)", d.requests.Count())
	if d.requests.Count() != before {
		return fmt.Errorf("the counter called the API %d times", d.requests.Count()-before)
	}
	return d.showPending(ctx, receivers.CounterGroup)
}

func (d *demo) notifierPass(ctx context.Context) error {
	res, err := d.notifier.Pass(ctx)
	if err != nil {
		return fmt.Errorf("notifier pass: %w", err)
	}
	d.say("  notifier pass: %s", res)
	return nil
}

func (d *demo) showPending(ctx context.Context, group string) error {
	p, err := d.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: d.keys.Stream(), Group: group, Start: "-", End: "+", Count: 10,
	}).Result()
	if err != nil {
		return fmt.Errorf("xpending %s: %w", group, err)
	}
	if len(p) == 0 {
		d.say("  XPENDING %s: empty", group)
		return nil
	}
	for _, e := range p {
		d.say("  XPENDING %s: entry %s consumer=%s deliveries=%d idle=%s", group, e.ID, e.Consumer, e.RetryCount, e.Idle.Round(time.Millisecond))
	}
	return nil
}
