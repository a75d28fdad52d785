package concurrency

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// OutcomeOf classifies an attempt by its answer's status (0 when no answer
// came) and its error, as net/http and the dialer return them:
//
//   - 429 and 503 are Backpressure; any other status is Success (the
//     receiver answered, whatever it said);
//   - no status and no error (a broker's confirmation) is Success;
//   - a canceled context is Ignore (the hub stopped the attempt, not the
//     receiver);
//   - a deadline, a network timeout, a refused, reset or aborted
//     connection, and a connection closed before the answer are
//     Backpressure;
//   - any other error (a name that does not resolve, a TLS failure, an
//     address refused by policy, a request that could not be built) is
//     Ignore: it says nothing about the receiver's capacity.
func OutcomeOf(status int, err error) Outcome {
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return Backpressure
	case status != 0 || err == nil:
		return Success
	case errors.Is(err, context.Canceled):
		return Ignore
	case errors.Is(err, context.DeadlineExceeded):
		return Backpressure
	}
	// A name that does not resolve is the tenant's or DNS's problem, even
	// when the lookup timed out: the receiver was never reached.
	if dns := (*net.DNSError)(nil); errors.As(err, &dns) {
		return Ignore
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return Backpressure
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Backpressure
	}
	return Ignore
}
