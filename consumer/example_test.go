package consumer_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
)

func ExampleMiddleware() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the subscription's signing secret

	mw, err := consumer.Middleware(consumer.Options{
		Secrets: []string{secret},
		// One instance: in memory. Several: redisdedupe.New (package consumer/redisdedupe).
		Deduper: consumer.NewMemoryDeduper(consumer.MemoryOptions{}),
	})
	if err != nil {
		panic(err) // a secret that is not whsec_<base64>
	}
	handler := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := consumer.EventFrom(r.Context())
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("handling %s #%d of %s (%s): %s\n", ev.Type, ev.Sequence, ev.TenantID, ev.ID, body)
		w.WriteHeader(http.StatusNoContent) // processed: never sent again
	}))

	// Two attempts of one event, as the hub sends them after a lost answer.
	for _, deliveryID := range []string{"dlv-1", "dlv-2"} {
		body := `{"amount":100}`
		ts := time.Now().Unix()
		sig, _ := consumer.Sign(secret, "evt-1", ts, []byte(body))
		r := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(body))
		r.Header.Set("webhook-id", "evt-1")
		r.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		r.Header.Set("webhook-signature", sig)
		r.Header.Set(consumer.HeaderEventID, "evt-1")
		r.Header.Set(consumer.HeaderDeliveryID, deliveryID)
		r.Header.Set(consumer.HeaderEventType, "transaction.posted")
		r.Header.Set(consumer.HeaderTenantID, "acme")
		r.Header.Set(consumer.HeaderSequence, "7")

		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Println(strings.TrimSpace(fmt.Sprintln(deliveryID, w.Code, w.Body.String())))
	}
	// Output:
	// handling transaction.posted #7 of acme (evt-1): {"amount":100}
	// dlv-1 204
	// dlv-2 200 duplicate delivery: event already processed
}

func ExampleVerify() {
	headers := http.Header{}
	headers.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	headers.Set("webhook-timestamp", "1614265330")
	headers.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	body := []byte(`{"test": 2432232314}`)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	fmt.Println(consumer.VerifyAt(secret, headers, body, 0, time.Unix(1614265330, 0)))
	// Verify checks against the real clock: this 2021 timestamp is stale.
	err := consumer.Verify(secret, headers, body, 0)
	fmt.Println(errors.Is(err, consumer.ErrTimestampOutsideTolerance))
	// Output:
	// <nil>
	// true
}
