package notify_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const group = "test-group"

// recorder is a handler that records the entries it saw and fails while err
// is set.
type recorder struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (r *recorder) Handle(_ context.Context, m notify.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, m.ID)
	return r.err
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

func newReader(t *testing.T, rdb *redis.Client, stream, consumer string, cfg notify.ReaderConfig, h notify.Handler) *notify.Reader {
	t.Helper()
	cfg.Stream, cfg.Group, cfg.Consumer = stream, group, consumer
	r, err := notify.NewReader(rdb, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pass(t *testing.T, r *notify.Reader) notify.PassResult {
	t.Helper()
	res, err := r.Pass(t.Context())
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	return res
}

func pendingCount(t *testing.T, rdb *redis.Client, stream string) int64 {
	t.Helper()
	p, err := rdb.XPending(t.Context(), stream, group).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

func writeApproval(t *testing.T, rdb *redis.Client, store *payments.Store) []string {
	t.Helper()
	c, err := store.Create(t.Context(), payments.NewPayment{AmountCents: 100, Currency: "BRL", PayerAccount: "a", PayeeAccount: "b"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.Approve(t.Context(), c.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	return []string{c.EntryID, a.EntryID}
}

func TestReaderTakesOverEntriesOfDeadConsumerWithXAutoClaim(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	ctx := t.Context()
	ids := writeApproval(t, rdb, testenv.NewStore(t, rdb, keys))

	// A member reads both entries and dies without acknowledging them.
	if err := rdb.XGroupCreateMkStream(ctx, keys.Stream(), group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: "dead", Streams: []string{keys.Stream(), ">"}, Count: 10, Block: -1,
	}).Err(); err != nil {
		t.Fatal(err)
	}

	// Not idle long enough yet: nothing is taken over, nothing is new.
	rec := &recorder{}
	patient := newReader(t, rdb, keys.Stream(), "alive", notify.ReaderConfig{ClaimIdle: time.Hour}, rec)
	if res := pass(t, patient); res.Claimed != 0 || res.New != 0 || len(rec.seen()) != 0 {
		t.Fatalf("pass before idle time: %s, handled %v", res, rec.seen())
	}

	const idle = 50 * time.Millisecond
	alive := newReader(t, rdb, keys.Stream(), "alive", notify.ReaderConfig{ClaimIdle: idle}, rec)
	// Idle time is Redis's clock, which no test can move: wait it out. A
	// slow machine only waits longer, which XAUTOCLAIM takes the same way.
	time.Sleep(idle + 10*time.Millisecond)
	res := pass(t, alive)
	if res.Claimed != 2 || res.Pending != 2 || res.Acked != 2 {
		t.Fatalf("pass after idle time: %s, want claimed=2 pending=2 acked=2", res)
	}
	if got := rec.seen(); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("handled %v, want %v", got, ids)
	}
	if n := pendingCount(t, rdb, keys.Stream()); n != 0 {
		t.Fatalf("%d still pending", n)
	}
}

func TestReaderParksPoisonEntryOnDeadLetterStreamAfterBound(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	ids := writeApproval(t, rdb, testenv.NewStore(t, rdb, keys))
	poison := ids[1]

	// The handler fails on the approval only; the created entry is fine.
	var calls int
	r := newReader(t, rdb, keys.Stream(), "c1", notify.ReaderConfig{MaxDeliveries: 3},
		notify.HandlerFunc(func(_ context.Context, m notify.Message) error {
			if m.ID == poison {
				calls++
				return errors.New("boom")
			}
			return nil
		}))

	want := []notify.PassResult{
		{New: 2, Acked: 1, Failed: 1},
		{Pending: 1, Failed: 1},
		{Pending: 1, DeadLettered: 1},
		{},
	}
	for i, w := range want {
		if got := pass(t, r); got != w {
			t.Fatalf("pass %d: %s, want %s", i+1, got, w)
		}
	}
	if calls != 3 {
		t.Fatalf("handler called %d times on the poison entry, want 3", calls)
	}
	if n := pendingCount(t, rdb, keys.Stream()); n != 0 {
		t.Fatalf("%d still pending after parking", n)
	}
	dlq := testenv.Entries(t, rdb, keys.DeadLetter())
	if len(dlq) != 1 {
		t.Fatalf("dead-letter stream has %d entries, want 1", len(dlq))
	}
	v := dlq[0].Values
	orig := testenv.Entries(t, rdb, keys.Stream())[1].Values[notify.StreamField]
	if v["entry"] != poison || v[notify.StreamField] != orig || v["group"] != group || v["deliveries"] != "3" ||
		!strings.Contains(v["reason"].(string), "failed 3 deliveries: boom") {
		t.Fatalf("dead-letter entry %v", v)
	}
}

func TestReaderParksUndecodableEntryImmediately(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	ctx := t.Context()
	id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys.Stream(), Values: []any{notify.StreamField, `{"not":"a cloudevent"}`}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	r := newReader(t, rdb, keys.Stream(), "c1", notify.ReaderConfig{}, rec)
	if res := pass(t, r); res.New != 1 || res.DeadLettered != 1 {
		t.Fatalf("pass: %s, want new=1 dead-lettered=1", res)
	}
	if len(rec.seen()) != 0 {
		t.Fatal("handler saw an undecodable entry")
	}
	dlq := testenv.Entries(t, rdb, keys.DeadLetter())
	if len(dlq) != 1 || dlq[0].Values["entry"] != id || !strings.HasPrefix(dlq[0].Values["reason"].(string), "undecodable") {
		t.Fatalf("dead-letter entries %v", dlq)
	}
}

func TestNewReaderValidatesConfig(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialled
	defer rdb.Close()
	h := notify.HandlerFunc(func(context.Context, notify.Message) error { return nil })
	bad := []notify.ReaderConfig{
		{Group: "g", Consumer: "c"},
		{Stream: "s", Consumer: "c"},
		{Stream: "s", Group: "g"},
		{Stream: "s", Group: "g", Consumer: "c", ClaimIdle: -1},
		{Stream: "s", Group: "g", Consumer: "c", DeadLetter: "s"},
	}
	for _, cfg := range bad {
		if _, err := notify.NewReader(rdb, cfg, h); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	r, err := notify.NewReader(rdb, notify.ReaderConfig{Stream: "s", Group: "g", Consumer: "c"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Config(); c.DeadLetter != "s.dlq" || c.MaxDeliveries != notify.DefaultMaxDeliveries || c.Batch != notify.DefaultBatch {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestRunHandlesEntriesUntilCancelled(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	seen := make(chan string, 10)
	r := newReader(t, rdb, keys.Stream(), "c1", notify.ReaderConfig{Block: 20 * time.Millisecond},
		notify.HandlerFunc(func(_ context.Context, m notify.Message) error {
			seen <- m.ID
			return nil
		}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, 10*time.Millisecond) }()

	ids := writeApproval(t, rdb, store)
	for _, want := range ids {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("handled %s, want %s", got, want)
			}
		case <-time.After(testkit.Patience):
			t.Fatalf("entry %s not handled", want)
		}
	}
	// The handler returns before the XACK: wait for the acknowledgements.
	testkit.WaitFor(t, "the handled entries acknowledged", func() bool { return pendingCount(t, rdb, keys.Stream()) == 0 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("run did not stop")
	}
}
