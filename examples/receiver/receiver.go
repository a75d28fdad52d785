package main

import (
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/lerianstudio/streaming-hub/consumer"
)

// newHandler is the receiver: consumer.Middleware verifies every request
// (and answers the hub's verification probes), drops redeliveries of events
// already processed, and the handler prints what is left, once per event.
func newHandler(secrets []string, dedupe consumer.Deduper, out io.Writer) (http.Handler, error) {
	var mu sync.Mutex // one line group at a time on out
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, args...)
	}
	mw, err := consumer.Middleware(consumer.Options{
		Secrets: secrets,
		Deduper: dedupe,
		OnDuplicate: func(_ *http.Request, ev consumer.Event) {
			printf("duplicate %s/%s (attempt %s): already processed, acknowledged (dedupe on the event id, as intended: delivery is at-least-once)\n", ev.TenantID, ev.ID, ev.DeliveryID)
		},
		OnError: func(r *http.Request, err error) {
			printf("refused %s %s from %s: %v\n", r.Method, r.URL.Path, r.RemoteAddr, err)
		},
	})
	if err != nil {
		return nil, err
	}
	return mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := consumer.EventFrom(r.Context())
		body, err := io.ReadAll(r.Body) // verified: exactly what the hub signed
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest) // not processed: the hub retries
			return
		}
		// Here a real receiver applies the event, idempotently, and orders
		// by ev.Sequence if it must.
		printf("event %s/%s #%d %s (attempt %s)\n  %s\n", ev.TenantID, ev.ID, ev.Sequence, ev.Type, ev.DeliveryID, body)
		w.WriteHeader(http.StatusNoContent)
	})), nil
}
