package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultMaxBodyBytes bounds the body the middleware reads when
// Options.MaxBodyBytes is not set.
const DefaultMaxBodyBytes = 1 << 20

// finishTimeout bounds the Commit or Release after the handler. They run
// on a context detached from the request's cancellation: a hub that hung
// up must not leave a failed event claimed.
const finishTimeout = 5 * time.Second

// Errors the middleware answers with, passed to Options.OnError.
var (
	// ErrBodyTooLarge: the body exceeds Options.MaxBodyBytes (413).
	ErrBodyTooLarge = errors.New("consumer: request body too large")
	// ErrDedupe: the Deduper failed (503 before the handler; after it the
	// answer is the handler's and the claim's lease cleans up).
	ErrDedupe = errors.New("consumer: deduper failed")
)

// Options configure Middleware.
type Options struct {
	// Secrets are the subscription's valid signing secrets
	// (whsec_<base64>): one, or during a rotation the old and the new. A
	// request passes when any of its signatures matches any of them.
	Secrets []string
	// PublicKeys are a v1a (Ed25519) subscription's public keys
	// (signing_public_key, whpk_<base64>): one, or during a rotation the
	// old and the new. Give Secrets, PublicKeys or both.
	PublicKeys []string
	// Tolerance is how far webhook-timestamp may be from now, either way
	// (<= 0 means DefaultTolerance).
	Tolerance time.Duration
	// MaxBodyBytes bounds the body read (<= 0 means DefaultMaxBodyBytes);
	// larger requests get 413 without reaching the handler.
	MaxBodyBytes int64
	// Deduper drops redeliveries of processed events. nil disables
	// deduplication: every verified delivery reaches the handler.
	Deduper Deduper
	// PassProbes hands verification probes to the handler (Event.IsProbe)
	// instead of answering them: the handler must then answer 2xx with a
	// body containing the challenge. By default the middleware answers.
	PassProbes bool
	// OnError, if set, sees every failure the middleware answers itself
	// (wrapping a sentinel such as ErrNoMatchingSignature, ErrBodyTooLarge
	// or ErrDedupe), and Commit/Release failures. For logs and metrics;
	// errors never contain a secret.
	OnError func(r *http.Request, err error)
	// OnDuplicate, if set, sees every delivery acknowledged as a duplicate
	// (200, the handler not called): for logs and metrics.
	OnDuplicate func(r *http.Request, ev Event)
	// Now is the clock for the timestamp check, for tests (nil: time.Now).
	Now func() time.Time
}

// Middleware returns an HTTP middleware for a webhook endpoint of the hub.
// For each request it:
//
//  1. reads the body, at most MaxBodyBytes (413 beyond), and gives the
//     handler an unread copy;
//  2. verifies the Standard Webhooks signature (401 with a short reason);
//  3. answers a verification probe with its challenge (200), unless
//     PassProbes;
//  4. claims the event in the Deduper: an event already processed gets 200
//     without reaching the handler, one another delivery is processing gets
//     409 (the hub retries later), a deduper failure gets 503;
//  5. calls the handler with the Event in the context (EventFrom), then
//     commits the claim if it answered 2xx (or wrote nothing, which
//     net/http sends as 200) and releases it otherwise, or if it panicked,
//     so the hub's retry is processed.
//
// The error reports a secret that is not whsec_<base64> or a public key
// that is not whpk_<base64>: a configuration
// error worth failing at startup rather than answering 401 to every
// delivery.
func Middleware(o Options) (func(http.Handler) http.Handler, error) {
	keys, err := decodeKeys(o.Secrets, o.PublicKeys)
	if err != nil {
		return nil, err
	}
	m := middleware{o: o, keys: keys, maxBody: o.MaxBodyBytes, now: o.Now}
	if m.maxBody <= 0 {
		m.maxBody = DefaultMaxBodyBytes
	}
	if m.now == nil {
		m.now = time.Now
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}, nil
}

type middleware struct {
	o       Options
	keys    keys
	maxBody int64
	now     func() time.Time
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	body, err := m.readBody(w, r)
	if errors.Is(err, ErrBodyTooLarge) {
		m.fail(w, r, http.StatusRequestEntityTooLarge, err)
		return
	}
	if err != nil {
		m.fail(w, r, http.StatusBadRequest, fmt.Errorf("consumer: read body: %w", err))
		return
	}
	if err := verifyKeys(m.keys, r.Header, body, m.o.Tolerance, m.now()); err != nil {
		m.fail(w, r, http.StatusUnauthorized, err)
		return
	}
	ev, err := eventFromHeaders(r.Header)
	if err != nil {
		m.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if ev.IsProbe() && !m.o.PassProbes {
		m.answerProbe(w, r, body)
		return
	}

	r = r.WithContext(WithEvent(r.Context(), ev))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// Probes carry a fresh id each time: nothing to dedupe.
	if m.o.Deduper == nil || ev.IsProbe() {
		next.ServeHTTP(w, r)
		return
	}
	m.serveOnce(w, r, next, ev)
}

// serveOnce runs the handler under a claim of the event.
func (m *middleware) serveOnce(w http.ResponseWriter, r *http.Request, next http.Handler, ev Event) {
	c, err := m.o.Deduper.Claim(r.Context(), ev.dedupeKey())
	if err != nil {
		m.fail(w, r, http.StatusServiceUnavailable, fmt.Errorf("%w: %w", ErrDedupe, err))
		return
	}
	switch c.State {
	case Processed:
		if m.o.OnDuplicate != nil {
			m.o.OnDuplicate(r, ev)
		}
		http.Error(w, "duplicate delivery: event already processed", http.StatusOK)
		return
	case InProgress:
		http.Error(w, "event is being processed by another delivery; retry later", http.StatusConflict)
		return
	case Claimed:
	default:
		m.fail(w, r, http.StatusInternalServerError, fmt.Errorf("%w: unknown claim state %s", ErrDedupe, c.State))
		return
	}

	rec := &statusRecorder{ResponseWriter: w}
	returned := false
	// Deferred so a panicking handler still releases its claim; the panic
	// goes on to net/http unchanged.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
		defer cancel()
		if returned && rec.succeeded() {
			if err := m.o.Deduper.Commit(ctx, c); err != nil {
				m.report(r, fmt.Errorf("%w: commit: %w", ErrDedupe, err))
			}
			return
		}
		if err := m.o.Deduper.Release(ctx, c); err != nil {
			m.report(r, fmt.Errorf("%w: release: %w", ErrDedupe, err))
		}
	}()
	next.ServeHTTP(rec, r)
	returned = true
}

// readBody reads the body up to the limit. A declared Content-Length over
// the limit is refused before reading anything.
func (m *middleware) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := fmt.Errorf("%w: limit is %d bytes", ErrBodyTooLarge, m.maxBody)
	if r.ContentLength > m.maxBody {
		return nil, tooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, tooLarge
	}
	return body, err
}

// fail answers a failure the middleware decided, with a short plain reason.
func (m *middleware) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	m.report(r, err)
	http.Error(w, err.Error(), code)
}

func (m *middleware) report(r *http.Request, err error) {
	if m.o.OnError != nil {
		m.o.OnError(r, err)
	}
}
