package payments_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
)

func newPayment() payments.NewPayment {
	return payments.NewPayment{AmountCents: 15000, Currency: "BRL", PayerAccount: "0001-1", PayeeAccount: "0002-2"}
}

func TestStoredEventDataHasOnlyPaymentIDAndVersion(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()

	created, err := store.Create(ctx, newPayment())
	if err != nil {
		t.Fatal(err)
	}
	approved, err := store.Approve(ctx, created.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}

	entries := testenv.Entries(t, rdb, keys.Stream())
	if len(entries) != 2 {
		t.Fatalf("stream has %d entries, want 2", len(entries))
	}
	e := entries[1]
	if e.ID != approved.EntryID {
		t.Fatalf("entry id %s, write reported %s", e.ID, approved.EntryID)
	}
	if len(e.Values) != 1 {
		t.Fatalf("entry fields %v, want only %q", e.Values, notify.StreamField)
	}
	raw := e.Values[notify.StreamField].(string)

	var envelope map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &envelope); err != nil {
		t.Fatalf("event is not JSON: %v\n%s", err, raw)
	}
	for _, k := range []string{"specversion", "id", "source", "type", "time", "subject", "datacontenttype", "data"} {
		if _, ok := envelope[k]; !ok {
			t.Errorf("event lacks %q: %s", k, raw)
		}
	}
	var data map[string]any
	if err := json.Unmarshal(envelope["data"], &data); err != nil {
		t.Fatal(err)
	}
	if len(data) != 2 || data["paymentId"] != created.Payment.ID || data["version"] != float64(2) {
		t.Fatalf("data = %v, want exactly {paymentId: %s, version: 2}", data, created.Payment.ID)
	}

	ev, d, err := notify.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if ev.Type != notify.TypePaymentApproved || ev.ID != approved.EventID || ev.Subject != created.Payment.ID ||
		ev.SpecVersion != "1.0" || ev.DataContentType != "application/json" || ev.Source != notify.DefaultSource {
		t.Fatalf("unexpected envelope %+v", ev)
	}
	if d.Version != approved.Payment.Version {
		t.Fatalf("event version %d, hash version %d", d.Version, approved.Payment.Version)
	}
	if _, err := uuid.Parse(ev.ID); err != nil {
		t.Fatalf("event id %q is not a uuid", ev.ID)
	}
}

func TestRejectedCommandsWriteNothing(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()

	p, err := store.Create(ctx, newPayment())
	if err != nil {
		t.Fatal(err)
	}
	id := p.Payment.ID
	unknown := uuid.NewString()

	snapshot := func() (map[string]string, int64) {
		h := rdb.HGetAll(ctx, keys.Payment(id)).Val()
		return h, rdb.XLen(ctx, keys.Stream()).Val()
	}
	hashBefore, lenBefore := snapshot()

	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"refund of a pending payment", func() error { _, err := store.Refund(ctx, id); return err }, payments.ErrConflict},
		{"refund of an unknown payment", func() error { _, err := store.Refund(ctx, unknown); return err }, payments.ErrNotFound},
		{"approve of an unknown payment", func() error { _, err := store.Approve(ctx, unknown); return err }, payments.ErrNotFound},
		{"remove of an unknown payment", func() error { _, _, err := store.Remove(ctx, unknown); return err }, payments.ErrNotFound},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	hashAfter, lenAfter := snapshot()
	if fmt.Sprint(hashAfter) != fmt.Sprint(hashBefore) || lenAfter != lenBefore {
		t.Fatalf("rejected commands wrote: hash %v -> %v, stream length %d -> %d", hashBefore, hashAfter, lenBefore, lenAfter)
	}
	if n := rdb.Exists(ctx, keys.Payment(unknown)).Val(); n != 0 {
		t.Fatalf("a command on an unknown payment created its hash")
	}

	// Approve twice: the second is rejected and writes nothing.
	if _, err := store.Approve(ctx, id); err != nil {
		t.Fatal(err)
	}
	hashBefore, lenBefore = snapshot()
	if _, err := store.Approve(ctx, id); !errors.Is(err, payments.ErrConflict) {
		t.Fatalf("second approve: err = %v, want ErrConflict", err)
	}
	hashAfter, lenAfter = snapshot()
	if fmt.Sprint(hashAfter) != fmt.Sprint(hashBefore) || lenAfter != lenBefore {
		t.Fatalf("second approve wrote: hash %v -> %v, stream length %d -> %d", hashBefore, hashAfter, lenBefore, lenAfter)
	}
}

func TestRemoveDeletesHashAndAppendsRemovedEventWithNextVersion(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()

	p, err := store.Create(ctx, newPayment())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Approve(ctx, p.Payment.ID); err != nil {
		t.Fatal(err)
	}
	entryID, version, err := store.Remove(ctx, p.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	if version != 3 {
		t.Fatalf("removed version %d, want 3", version)
	}
	if _, err := store.Get(ctx, p.Payment.ID); !errors.Is(err, payments.ErrNotFound) {
		t.Fatalf("get after remove: %v, want ErrNotFound", err)
	}
	entries := testenv.Entries(t, rdb, keys.Stream())
	last := entries[len(entries)-1]
	ev, d, err := notify.Decode([]byte(last.Values[notify.StreamField].(string)))
	if err != nil {
		t.Fatal(err)
	}
	if last.ID != entryID || ev.Type != notify.TypePaymentRemoved || d.Version != 3 {
		t.Fatalf("last entry %s %s v%d, want %s payment.removed v3", last.ID, ev.Type, d.Version, entryID)
	}
}

// N writers hammer the same payments with approve/refund/remove at once.
// Whatever interleaving Redis picks, each payment's hash version must equal
// the number of notifications about it, and those carry 1..N in stream order.
func TestLuaWritesAreAtomicUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()

	const nPayments, writers, opsPerWriter = 40, 50, 30
	ids := make([]string, 0, nPayments)
	var idsMu sync.Mutex
	var wg sync.WaitGroup
	ops := []string{"create", "approve", "refund", "remove"}
	succeeded, rejected := map[string]*atomic.Int64{}, map[string]*atomic.Int64{}
	for _, op := range ops {
		succeeded[op], rejected[op] = new(atomic.Int64), new(atomic.Int64)
	}

	// Creates run concurrently too.
	for range nPayments {
		wg.Go(func() {
			w, err := store.Create(ctx, newPayment())
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			idsMu.Lock()
			ids = append(ids, w.Payment.ID)
			idsMu.Unlock()
			succeeded["create"].Add(1)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range opsPerWriter {
				id := ids[rng.IntN(len(ids))]
				var err error
				op := ""
				switch r := rng.IntN(1000); {
				case r < 500:
					op = "approve"
					_, err = store.Approve(ctx, id)
				case r < 995:
					op = "refund"
					_, err = store.Refund(ctx, id)
				default:
					op = "remove"
					_, _, err = store.Remove(ctx, id)
				}
				switch {
				case err == nil:
					succeeded[op].Add(1)
				case errors.Is(err, payments.ErrConflict), errors.Is(err, payments.ErrNotFound):
					rejected[op].Add(1)
				default:
					t.Errorf("%s %s: %v", op, id, err)
				}
			}
		})
	}
	wg.Wait()

	// A rejected command on an unknown payment leaves neither hash nor entry.
	lenBefore := rdb.XLen(ctx, keys.Stream()).Val()
	ghost := uuid.NewString()
	if _, err := store.Refund(ctx, ghost); !errors.Is(err, payments.ErrNotFound) {
		t.Fatalf("refund of unknown payment: %v", err)
	}
	if rdb.Exists(ctx, keys.Payment(ghost)).Val() != 0 || rdb.XLen(ctx, keys.Stream()).Val() != lenBefore {
		t.Fatal("refund of unknown payment wrote something")
	}

	entries := testenv.Entries(t, rdb, keys.Stream())
	versions := map[string][]int64{}
	for _, e := range entries {
		_, d, err := notify.Decode([]byte(e.Values[notify.StreamField].(string)))
		if err != nil {
			t.Fatalf("entry %s: %v", e.ID, err)
		}
		versions[d.PaymentID] = append(versions[d.PaymentID], d.Version)
	}

	var totalOK int64
	for _, n := range succeeded {
		totalOK += n.Load()
	}
	if int64(len(entries)) != totalOK {
		t.Fatalf("%d stream entries for %d successful writes", len(entries), totalOK)
	}

	sort.Strings(ids)
	for _, id := range ids {
		vs := versions[id]
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("payment %s: versions in stream order %v, want 1..%d without gaps", id, vs, len(vs))
			}
		}
		p, err := store.Get(ctx, id)
		switch {
		case errors.Is(err, payments.ErrNotFound):
			// Removed: its last notification is the removal.
			continue
		case err != nil:
			t.Fatal(err)
		}
		if p.Version != int64(len(vs)) {
			t.Fatalf("payment %s: hash version %d, %d notifications", id, p.Version, len(vs))
		}
	}
	var summary []string
	for _, op := range ops {
		summary = append(summary, fmt.Sprintf("%s ok=%d rejected=%d", op, succeeded[op].Load(), rejected[op].Load()))
	}
	t.Logf("%d payments, %d writers x %d ops, %d entries: %v", nPayments, writers, opsPerWriter, len(entries), summary)
}

func TestCreateValidatesInput(t *testing.T) {
	t.Parallel()
	bad := []payments.NewPayment{
		{AmountCents: 0, Currency: "BRL", PayerAccount: "a", PayeeAccount: "b"},
		{AmountCents: 1, Currency: "brl", PayerAccount: "a", PayeeAccount: "b"},
		{AmountCents: 1, Currency: "BRL", PayerAccount: "", PayeeAccount: "b"},
		{AmountCents: 1, Currency: "BRL", PayerAccount: "a", PayeeAccount: "a"},
	}
	for _, n := range bad {
		if err := n.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", n)
		}
	}
	if err := newPayment().Validate(); err != nil {
		t.Fatalf("good payment rejected: %v", err)
	}
}
