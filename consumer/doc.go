// Package consumer is the receiving side of streaming-hub webhooks: it
// verifies the Standard Webhooks signature of each delivery, answers the
// hub's verification probes, drops redeliveries of events already processed
// and hands the rest to your handler with the event's metadata.
//
// The hub delivers at least once: it retries every non-2xx answer (and every
// timeout) with the same X-Lerian-Event-Id, so a receiver sees some events
// more than once. [Middleware] makes a handler see each event once as far as
// its [Deduper] remembers, without ever losing one: an event counts as
// processed only after the handler answered 2xx.
//
// Usage:
//
//	dedupe, err := redisdedupe.New(rdb, redisdedupe.Options{})
//	if err != nil { ... }
//	mw, err := consumer.Middleware(consumer.Options{
//		Secrets: []string{os.Getenv("WEBHOOK_SECRET")}, // whsec_...
//		Deduper: dedupe,
//	})
//	if err != nil { ... } // a secret that is not whsec_<base64>
//	http.Handle("POST /webhooks", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		ev, _ := consumer.EventFrom(r.Context())
//		body, _ := io.ReadAll(r.Body) // the verified payload
//		if err := apply(r.Context(), ev.TenantID, ev.ID, body); err != nil {
//			http.Error(w, "try again", http.StatusInternalServerError) // the hub retries
//			return
//		}
//		w.WriteHeader(http.StatusNoContent)
//	})))
//
// A subscription signed with Ed25519 (signature scheme v1a) is verified
// with its public key instead of a secret: Options.PublicKeys (whpk_...)
// in place of Options.Secrets, [VerifyV1a] in place of [Verify].
//
// Receivers that do their own plumbing can call [Verify] or [VerifyV1a] (or
// a [Verifier] during a rotation) and use a [Deduper] directly.
//
// The package depends on the standard library only, so a receiver does not
// pull in the hub's dependencies; package consumer/redisdedupe adds a
// Deduper shared through Redis for receivers that run several instances.
package consumer
