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
)

type notifierRig struct {
	rdb    *redis.Client
	keys   keyspace.Layout
	store  *payments.Store
	api    *testenv.API
	sink   *receivers.RecordingSink
	reader *notify.Reader
}

func newNotifierRig(t *testing.T, fetchTimeout time.Duration) *notifierRig {
	t.Helper()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	api := testenv.StartAPI(t, store)
	client, err := receivers.NewPaymentsClient(api.URL, fetchTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &receivers.RecordingSink{}
	n, err := receivers.NewNotifier(client, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: receivers.NotifierGroup, Consumer: "notifier-1",
	}, n)
	if err != nil {
		t.Fatal(err)
	}
	return &notifierRig{rdb: rdb, keys: keys, store: store, api: api, sink: sink, reader: reader}
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
