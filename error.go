package hub

import (
	"errors"
	"fmt"
)

// Error codes. The api package maps each to one HTTP status; an error without
// a code is internal: logged, never shown to a caller.
const (
	EINVALID = "invalid" // bad input: 400
	// EINVALIDREQUEST is a body that is not well-formed text (bytes that
	// are not UTF-8, a key given twice): 400, as docs/security.md names it.
	EINVALIDREQUEST = "invalid_request"
	EUNAUTHORIZED   = "unauthorized"  // no or bad credentials: 401
	EFORBIDDEN      = "forbidden"     // valid credentials, wrong role: 403
	ENOTFOUND       = "not_found"     // missing or another tenant's: 404
	ECONFLICT       = "conflict"      // already exists or wrong state: 409
	EUNPROCESSABLE  = "unprocessable" // a probe or check failed: 422
	ERATELIMITED    = "rate_limited"  // slow down: 429
	// ENOTRETAINED: a record a replay reads again at its source is no
	// longer in Kafka's log (retention or a deletion moved its start past
	// it, or the topic is gone): 410.
	ENOTRETAINED = "record_not_retained"
	// EUNAVAILABLE: what the request needs (Kafka, for a replay) is not
	// there or does not answer now; trying again later may work: 503.
	EUNAVAILABLE = "unavailable"
	EINTERNAL    = "internal" // everything else: 500
	// ETENANTNOTSERVED is another tenant than the one a single-tenant hub
	// serves (MULTI_TENANT_ENABLED=false or STREAMING_HUB_TENANT_ID): 403.
	ETENANTNOTSERVED = "tenant_not_served"
)

// Error is an application error with a code a caller may act on and a message
// safe to show them.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or EINTERNAL when it carries none.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err. Errors without a code
// are internal and answer a generic message.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
