package api

import (
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Failed authentication is throttled (docs/api.md): more than the limit of
// failures within authFailureWindow from one client address, or against
// one key id, and that address or key answers 429 until the window ends.
const (
	authFailureWindow = time.Minute
	// maxThrottleEntries bounds the memory an attacker with many addresses
	// can make the throttle hold; past it, finished windows are dropped.
	maxThrottleEntries = 100_000
)

// throttle counts failures per key in fixed windows on the injected clock.
type throttle struct {
	mu      sync.Mutex
	now     func() time.Time
	limit   int
	windows map[string]*failureWindow
}

type failureWindow struct {
	start    time.Time
	failures int
}

func newThrottle(limit int, now func() time.Time) *throttle {
	return &throttle{now: now, limit: limit, windows: make(map[string]*failureWindow)}
}

// blocked reports whether any of keys is over the limit, and for how long.
func (t *throttle) blocked(keys ...string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var wait time.Duration
	for _, k := range keys {
		w := t.windows[k]
		if w == nil || now.Sub(w.start) >= authFailureWindow {
			continue
		}
		if w.failures > t.limit {
			wait = max(wait, w.start.Add(authFailureWindow).Sub(now))
		}
	}
	return wait, wait > 0
}

// fail counts one failure against each of keys.
func (t *throttle) fail(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.windows) >= maxThrottleEntries {
		for k, w := range t.windows {
			if now.Sub(w.start) >= authFailureWindow {
				delete(t.windows, k)
			}
		}
	}
	for _, k := range keys {
		w := t.windows[k]
		if w == nil || now.Sub(w.start) >= authFailureWindow {
			if len(t.windows) >= maxThrottleEntries {
				continue // full of live windows: the others still throttle
			}
			w = &failureWindow{start: now}
			t.windows[k] = w
		}
		w.failures++
	}
}

// clientKey is the throttle's key of the request's client: the address
// resolved through TRUSTED_PROXIES, the one the access manager is told
// (clientIP), so that the clients behind one proxy are throttled each on
// its own and a client that is not a trusted proxy cannot choose its key
// with X-Forwarded-For. Only a request from a trusted proxy that names no
// client (no X-Forwarded-For, or only trusted hops) is keyed by the proxy.
func (s *Server) clientKey(r *http.Request) string {
	if ip := clientIP(r, s.deps.Auth.TrustedProxies); ip != "" {
		return "addr:" + ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "peer:" + host
}

// retryError is an error that tells the client when to come back.
type retryError struct {
	error
	after time.Duration
}

func (e retryError) Unwrap() error { return e.error }

// setRetryAfter writes Retry-After (whole seconds, rounded up) for errors
// that carry one.
func setRetryAfter(w http.ResponseWriter, err error) {
	var re retryError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(re.after.Seconds()))))
	}
}

func throttled(after time.Duration) error {
	return retryError{hub.Errorf(hub.ERATELIMITED, "too many failed authentications; retry after %s", after.Round(time.Second)), after}
}
