package receivers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
)

// A counter member handles the approvals but dies before XACK; a second
// member takes the entries over with XAUTOCLAIM and handles them again. The
// count does not move, and the payments API sees no request at all.
func TestCounterCountsRedeliveredEventOnceWithoutCallingAPI(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	api := testenv.StartAPI(t, store)
	ctx := t.Context()

	a1 := approved(t, store)
	approved(t, store)
	if _, err := store.Refund(ctx, a1.Payment.ID); err != nil {
		t.Fatal(err)
	}
	requestsBefore := api.Requests.Count()

	counter, err := receivers.NewCounter(rdb, keys, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	errCrash := errors.New("crashed before XACK")
	crashing, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: receivers.CounterGroup, Consumer: "counter-crashed",
	}, notify.HandlerFunc(func(ctx context.Context, m notify.Message) error {
		if err := counter.Handle(ctx, m); err != nil {
			return err
		}
		return errCrash
	}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := crashing.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.New != 5 || res.Failed != 5 {
		t.Fatalf("crashing pass: %s, want new=5 failed=5", res)
	}
	today := a1.Payment.UpdatedAt // the approval's event time: its day is the one counted
	if n, err := counter.Count(ctx, today); err != nil || n != 2 {
		t.Fatalf("count after first delivery: %d, %v; want 2", n, err)
	}

	const idle = 50 * time.Millisecond
	survivor, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: receivers.CounterGroup, Consumer: "counter-1", ClaimIdle: idle,
	}, counter)
	if err != nil {
		t.Fatal(err)
	}
	// Idle time is Redis's clock, which no test can move: wait it out. A
	// slow machine only waits longer, which XAUTOCLAIM takes the same way.
	time.Sleep(idle + 10*time.Millisecond)
	res, err = survivor.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Claimed != 5 || res.Pending != 5 || res.Acked != 5 {
		t.Fatalf("survivor pass: %s, want claimed=5 pending=5 acked=5", res)
	}
	if n, err := counter.Count(ctx, today); err != nil || n != 2 {
		t.Fatalf("count after redelivery: %d, %v; want still 2", n, err)
	}
	if got := rdb.SCard(ctx, keys.ApprovalsDay(counter.Day(today))).Val(); got != 2 {
		t.Fatalf("SCARD %s = %d", keys.ApprovalsDay(counter.Day(today)), got)
	}
	if p := pending(t, rdb, keys.Stream(), receivers.CounterGroup); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
	if got := api.Requests.Count(); got != requestsBefore {
		t.Fatalf("the counter made %d API requests, want 0", got-requestsBefore)
	}
}
