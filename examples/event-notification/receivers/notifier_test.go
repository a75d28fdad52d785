package receivers_test

import (
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestNotifierNotifiesWithFetchedCurrentState(t *testing.T) {
	t.Parallel()
	rig := newNotifierRig(t, 0)
	w := approved(t, rig.store)

	res := rig.pass(t)
	if res.New != 2 || res.Acked != 2 || res.Failed != 0 {
		t.Fatalf("pass: %s, want new=2 acked=2", res)
	}
	sent := rig.sink.Sent()
	if len(sent) != 1 {
		t.Fatalf("%d notifications, want 1 (created is not notified): %+v", len(sent), sent)
	}
	n := sent[0]
	p := n.Payment
	if n.EventType != notify.TypePaymentApproved || n.EventID != w.EventID || n.EventVersion != 2 || n.Superseded {
		t.Fatalf("notification %+v", n)
	}
	if p.ID != w.Payment.ID || p.AmountCents != 15000 || p.Currency != "BRL" ||
		p.PayerAccount != "0001-1" || p.PayeeAccount != "0002-2" || p.Status != "approved" || p.Version != 2 {
		t.Fatalf("fetched payment %+v", p)
	}
	// Only the approval was fetched: the created event is acked without a call.
	if got := rig.api.Requests.Count(); got != 1 {
		t.Fatalf("API requests %d, want 1", got)
	}
	if p := pending(t, rig.rdb, rig.keys.Stream(), receivers.NotifierGroup); len(p) != 0 {
		t.Fatalf("pending after pass: %+v", p)
	}
}

// A refund lands before the notifier reads the approval. The fetched state
// is version 3 (refunded) while the approval announced version 2: the
// approval is notified with the current state and marked superseded; the
// refund is then notified as current.
func TestNotifierMarksSupersededEventByVersion(t *testing.T) {
	t.Parallel()
	rig := newNotifierRig(t, 0)
	w := approved(t, rig.store)
	if _, err := rig.store.Refund(t.Context(), w.Payment.ID); err != nil {
		t.Fatal(err)
	}

	if res := rig.pass(t); res.Acked != 3 {
		t.Fatalf("pass: %s, want acked=3", res)
	}
	sent := rig.sink.Sent()
	if len(sent) != 2 {
		t.Fatalf("%d notifications, want 2: %+v", len(sent), sent)
	}
	approval, refund := sent[0], sent[1]
	if approval.EventType != notify.TypePaymentApproved || approval.EventVersion != 2 ||
		approval.Payment.Version != 3 || approval.Payment.Status != "refunded" || !approval.Superseded {
		t.Fatalf("approval notification %+v, want superseded with the refunded state v3", approval)
	}
	if refund.EventType != notify.TypePaymentRefunded || refund.EventVersion != 3 ||
		refund.Payment.Version != 3 || refund.Superseded {
		t.Fatalf("refund notification %+v, want current v3", refund)
	}
}

func TestNotifierSourceDownLeavesEntryPendingAndRereadsItFirst(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name         string
		fetchTimeout time.Duration
		down, up     func(t *testing.T, rig *notifierRig)
	}{
		{"503", 0,
			func(_ *testing.T, rig *notifierRig) { rig.api.SetDown(true) },
			func(_ *testing.T, rig *notifierRig) { rig.api.SetDown(false) }},
		// The source hangs (until the request gives up) while the fetch
		// timeout is short; once it answers again, the notifier is
		// restarted with a generous one: no answer has to beat a clock.
		{"timeout", 50 * time.Millisecond,
			func(_ *testing.T, rig *notifierRig) { rig.api.SetDelay(testkit.Patience) },
			func(_ *testing.T, rig *notifierRig) { rig.api.SetDelay(0); rig.setFetchTimeout(0) }},
		{"stopped", 0,
			func(_ *testing.T, rig *notifierRig) { rig.api.Close() },
			func(t *testing.T, rig *notifierRig) { rig.api.Restart(t) }},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			rig := newNotifierRig(t, m.fetchTimeout)
			first := approved(t, rig.store)

			m.down(t, rig)
			res := rig.pass(t)
			if res.New != 2 || res.Acked != 1 || res.Failed != 1 {
				t.Fatalf("pass while down: %s, want new=2 acked=1 (created) failed=1 (approved)", res)
			}
			p := pending(t, rig.rdb, rig.keys.Stream(), receivers.NotifierGroup)
			if len(p) != 1 || p[0].ID != first.EntryID || p[0].Consumer != "notifier-1" || p[0].RetryCount != 1 {
				t.Fatalf("XPENDING %+v, want the approval %s pending on notifier-1 once", p, first.EntryID)
			}
			if n := len(rig.sink.Sent()); n != 0 {
				t.Fatalf("%d notifications while the source is down", n)
			}

			// Another approval arrives while the source is still down: it is
			// new, the failed one is pending, and the pending one goes first.
			second := approved(t, rig.store)
			m.up(t, rig)
			res = rig.pass(t)
			if res.Pending != 1 || res.New != 2 || res.Acked != 3 || res.Failed != 0 {
				t.Fatalf("pass after recovery: %s, want pending=1 new=2 acked=3", res)
			}
			sent := rig.sink.Sent()
			if len(sent) != 2 || sent[0].EventID != first.EventID || sent[1].EventID != second.EventID {
				t.Fatalf("notifications %+v, want the re-read approval first, then the new one", sent)
			}
			if p := pending(t, rig.rdb, rig.keys.Stream(), receivers.NotifierGroup); len(p) != 0 {
				t.Fatalf("pending after recovery: %+v", p)
			}
			// Nothing is left to deliver: another pass notifies nothing more.
			if res := rig.pass(t); res.Pending+res.New != 0 || len(rig.sink.Sent()) != 2 {
				t.Fatalf("extra pass: %s, %d notifications", res, len(rig.sink.Sent()))
			}
		})
	}
}

func TestNotifierAcksRemovedPaymentWithoutNotifying(t *testing.T) {
	t.Parallel()
	rig := newNotifierRig(t, 0)
	w := approved(t, rig.store)
	if _, _, err := rig.store.Remove(t.Context(), w.Payment.ID); err != nil {
		t.Fatal(err)
	}

	res := rig.pass(t)
	if res.New != 3 || res.Acked != 3 || res.Failed != 0 || res.DeadLettered != 0 {
		t.Fatalf("pass: %s, want new=3 acked=3", res)
	}
	if sent := rig.sink.Sent(); len(sent) != 0 {
		t.Fatalf("notified a removed payment: %+v", sent)
	}
	if got := rig.api.Requests.Count(); got != 1 {
		t.Fatalf("API requests %d, want 1 (the GET that answered 404)", got)
	}
	if p := pending(t, rig.rdb, rig.keys.Stream(), receivers.NotifierGroup); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
}
