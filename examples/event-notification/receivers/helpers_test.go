package receivers_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

type notifierRig struct {
	t      *testing.T
	rdb    *redis.Client
	keys   keyspace.Layout
	store  *payments.Store
	api    *testenv.API
	sink   *receivers.RecordingSink
	reader *notify.Reader
}

// newNotifierRig builds notifier-1 over a real Redis and payments API. Its
// fetches time out after fetchTimeout; 0 means testkit.Patience, so that a
// loaded machine's slow answer never reads as an outage.
func newNotifierRig(t *testing.T, fetchTimeout time.Duration) *notifierRig {
	t.Helper()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	api := testenv.StartAPI(t, store)
	r := &notifierRig{t: t, rdb: rdb, keys: keys, store: store, api: api, sink: &receivers.RecordingSink{}}
	r.setFetchTimeout(fetchTimeout)
	return r
}

// setFetchTimeout restarts notifier-1 (same group, same consumer: its
// pending entries stay its own) with fetches timing out after d (0 means
// testkit.Patience).
func (r *notifierRig) setFetchTimeout(d time.Duration) {
	r.t.Helper()
	if d == 0 {
		d = testkit.Patience
	}
	client, err := receivers.NewPaymentsClient(r.api.URL, d, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	n, err := receivers.NewNotifier(client, r.sink, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.reader, err = notify.NewReader(r.rdb, notify.ReaderConfig{
		Stream: r.keys.Stream(), Group: receivers.NotifierGroup, Consumer: "notifier-1",
	}, n)
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *notifierRig) pass(t *testing.T) notify.PassResult {
	t.Helper()
	res, err := r.reader.Pass(t.Context())
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	return res
}

// approved creates a payment and approves it through the store.
func approved(t *testing.T, store *payments.Store) payments.Written {
	t.Helper()
	ctx := t.Context()
	c, err := store.Create(ctx, payments.NewPayment{AmountCents: 15000, Currency: "BRL", PayerAccount: "0001-1", PayeeAccount: "0002-2"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.Approve(ctx, c.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func pending(t *testing.T, rdb *redis.Client, stream, group string) []redis.XPendingExt {
	t.Helper()
	p, err := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{
		Stream: stream, Group: group, Start: "-", End: "+", Count: 100,
	}).Result()
	if err != nil {
		t.Fatalf("xpending: %v", err)
	}
	return p
}
