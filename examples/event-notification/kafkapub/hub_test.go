package kafkapub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/kafkapub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/receivers"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// delivered is what the webhook receiver saw and fetched for one event.
type delivered struct {
	eventType, ceType string
	body              map[string]any
	fetched           receivers.Payment
}

// Into the hub, end to end: a payment approved in Redis is forwarded to the
// hub's (embedded) Kafka as a binary-mode CloudEvent; the hub accepts it and
// delivers the thin event, signed, to a webhook subscriber of
// payment.approved; the subscriber verifies it and fetches the detail from
// the payments API. The payment.created event is stored by the hub too (a
// pull reads both) but goes to no webhook: nobody subscribed to it.
func TestThinEventsThroughTheHubToAWebhookThatFetchesTheDetail(t *testing.T) {
	testkit.Long(t)
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	api := testenv.StartAPI(t, store)
	ctx := t.Context()

	h := devhub.Start(t, devhub.Options{Env: map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20"}})

	// The webhook subscriber: verify, then fetch what the event points at.
	client, err := receivers.NewPaymentsClient(api.URL, testkit.Patience, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []delivered
	)
	var handler atomic.Pointer[http.Handler]
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(sink.Close)

	var sub struct {
		ID            string
		SigningSecret string `json:"signing_secret"`
	}
	if st := h.Do("POST", "/v1/subscriptions", "default", `{"name":"payments","event_types":[{"type":"payment.approved","schema_major":1}],
		"destination":{"type":"webhook","url":"`+sink.URL+`/payments"}}`, &sub); st != 201 {
		t.Fatalf("create subscription: %d", st)
	}
	mw, err := consumer.Middleware(consumer.Options{Secrets: []string{sub.SigningSecret}, Deduper: consumer.NewMemoryDeduper(consumer.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	var hd http.Handler = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivered{eventType: r.Header.Get("X-Lerian-Event-Type"), ceType: r.Header.Get("ce-type")}
		if err := json.Unmarshal(body, &d.body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, _ := d.body["paymentId"].(string)
		if d.fetched, err = client.Get(r.Context(), id); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable) // the hub retries
			return
		}
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	handler.Store(&hd)
	if st := h.Do("POST", "/v1/subscriptions/"+sub.ID+"/verify", "default", "", nil); st != 200 {
		t.Fatalf("verify: %d", st)
	}

	// The forwarder: a Redis consumer group producing to the hub's Kafka.
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	pub, err := kafkapub.NewPublisher(cl, kafkapub.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := notify.NewReader(rdb, notify.ReaderConfig{Stream: keys.Stream(), Group: kafkapub.ForwarderGroup, Consumer: "forwarder-1"}, pub)
	if err != nil {
		t.Fatal(err)
	}

	c, err := store.Create(ctx, payments.NewPayment{AmountCents: 15000, Currency: "BRL", PayerAccount: "0001-1", PayeeAccount: "0002-2"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.Approve(ctx, c.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := fwd.Pass(ctx); err != nil || res.Acked != 2 {
		t.Fatalf("forwarder pass: %v, %v; want 2 acked", res, err)
	}

	// The hub notices the new topics (dev mode re-reads the topic list) and reads
	// them from the start.
	testkit.WaitFor(t, "the approval delivered to the webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	d := got[0]
	mu.Unlock()
	if d.eventType != "payment.approved" || d.ceType != notify.TypePaymentApproved {
		t.Fatalf("delivered %q (ce-type %q), want payment.approved", d.eventType, d.ceType)
	}
	if len(d.body) != 2 || d.body["paymentId"] != c.Payment.ID || d.body["version"] != float64(a.Payment.Version) {
		t.Fatalf("delivered body %v, want exactly {paymentId: %s, version: %d}", d.body, c.Payment.ID, a.Payment.Version)
	}
	if d.fetched.AmountCents != 15000 || d.fetched.Status != "approved" || d.fetched.Version != a.Payment.Version {
		t.Fatalf("fetched %+v, want the approved payment at version %d", d.fetched, a.Payment.Version)
	}

	// Both events are stored by the hub (a pull reads them), and only the
	// approval made a delivery job: payment.created has no subscriber.
	// Jobs are made in the transaction that stores the event, so once both
	// are stored the job list is final.
	var types []string
	testkit.WaitFor(t, "both events stored by the hub", func() bool {
		var page struct{ Data []struct{ Type string } }
		h.Do("GET", "/v1/events", "default", "", &page)
		types = types[:0]
		for _, e := range page.Data {
			types = append(types, e.Type)
		}
		slices.Sort(types)
		return len(types) >= 2
	})
	if !slices.Equal(types, []string{"payment.approved", "payment.created"}) {
		t.Fatalf("the hub stored %v, want payment.created and payment.approved", types)
	}
	var jobs struct{ Data []struct{ Status string } }
	testkit.WaitFor(t, "the approval's job recorded as succeeded", func() bool {
		h.Do("GET", "/v1/subscriptions/"+sub.ID+"/deliveries", "default", "", &jobs)
		return len(jobs.Data) != 1 || jobs.Data[0].Status == "succeeded"
	})
	if len(jobs.Data) != 1 {
		t.Fatalf("the subscription has %d jobs, want 1 (the approval's)", len(jobs.Data))
	}
}
