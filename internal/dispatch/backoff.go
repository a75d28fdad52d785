package dispatch

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Bounds of a wait before a retry.
const (
	minWait       = time.Second
	maxRetryAfter = 10 * time.Hour
)

// fullJitter draws the wait before a retry uniformly in [0, step], with a
// floor of one second: retries of many jobs that failed together spread out
// instead of arriving as a thundering herd.
func fullJitter(step time.Duration, r *rand.Rand) time.Duration {
	d := time.Duration(r.Int64N(int64(step) + 1))
	return max(d, minWait)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) relative
// to now; 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return min(time.Duration(secs)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}

// decision is what happens to a job after a failed attempt.
type decision struct {
	status hub.JobStatus // pending (retry) or dead_lettered
	next   time.Time
	reason string
}

// afterFailure decides the next step of a job whose attempt number n (1 for
// the first) failed: a retry after the subscription's curve step n, with
// full jitter (never sooner than a 429/503's Retry-After), or the dead
// letter once the curve is exhausted.
func afterFailure(sub *hub.Subscription, n int, status int, ra time.Duration, now time.Time, r *rand.Rand) decision {
	schedule := sub.Schedule()
	if n >= 1+len(schedule) {
		return decision{status: hub.JobDeadLettered, reason: hub.DeadLetterExhausted}
	}
	wait := fullJitter(schedule[n-1], r)
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && ra > wait {
		wait = ra
	}
	return decision{status: hub.JobPending, next: now.Add(wait)}
}
