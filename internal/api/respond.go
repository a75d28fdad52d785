package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// statuses maps error codes to HTTP statuses; anything else is a 500.
var statuses = map[string]int{
	hub.EINVALID:        http.StatusBadRequest,
	hub.EINVALIDREQUEST: http.StatusBadRequest,
	hub.EUNAUTHORIZED:   http.StatusUnauthorized,
	hub.EFORBIDDEN:      http.StatusForbidden,
	hub.ENOTFOUND:       http.StatusNotFound,
	hub.ECONFLICT:       http.StatusConflict,
	hub.EUNPROCESSABLE:  http.StatusUnprocessableEntity,
	hub.ERATELIMITED:    http.StatusTooManyRequests,
	hub.ENOTRETAINED:    http.StatusGone,
	hub.EUNAVAILABLE:    http.StatusServiceUnavailable,
	// Single-tenant mode: the tenant may exist, but this hub does not act
	// on it (docs/security.md#one-tenant-everywhere).
	hub.ETENANTNOTSERVED: http.StatusForbidden,
}

// statusClientClosed is logged for a request its client abandoned.
const statusClientClosed = 499

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError answers err. Errors without a code are internal: logged with
// the request id, and never shown to the caller.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if cerr := r.Context().Err(); cerr != nil && errors.Is(err, cerr) {
		// The client went away (a long poll it gave up on, say): nothing
		// failed here, and nobody reads the answer. 499 is what the request
		// log shows for it, as nginx names it: client closed request.
		log.Debug("client closed the request", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r.Context()))
		w.WriteHeader(statusClientClosed)
		return
	}
	code := hub.ErrorCode(err)
	status, ok := statuses[code]
	if !ok {
		status, code = http.StatusInternalServerError, hub.EINTERNAL
		log.Error("internal error", "method", r.Method, "path", r.URL.Path, "request_id", requestID(r.Context()), "err", err)
	}
	setRetryAfter(w, err)
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: hub.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// maxBody bounds request bodies.
const maxBody = 1 << 20

// decode reads a JSON body strictly: bounded, one value, no unknown fields.
// An empty body decodes as {} (action endpoints accept both).
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := readBody(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return hub.Errorf(hub.EINVALID, "request body larger than %d bytes", maxBody)
		}
		return hub.Errorf(hub.EINVALID, "reading request body: %v", err)
	}
	return decodeJSON(data, v)
}

// readBody reads body whole into a buffer the size its Content-Length
// announces (within maxBody): a body of 1 MiB takes 1 MiB, not the twice
// that growing a buffer as it comes holds at its last copy.
func readBody(body io.Reader, announced int64) ([]byte, error) {
	size := 512
	if announced > 0 {
		size = int(min(announced, maxBody)) + 1 // + 1: the read that meets EOF needs room
	}
	data := make([]byte, 0, size)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := body.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// decodeJSON decodes a request body strictly: one value, no unknown fields,
// valid UTF-8 and no key twice in an object (checkJSONText); empty means {}.
// Every JSON body the API reads comes through here.
func decodeJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if err := checkJSONText(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return hub.Errorf(hub.EINVALID, "invalid JSON body: %s", describeJSONError(err))
	}
	if dec.More() {
		return hub.Errorf(hub.EINVALID, "invalid JSON body: more than one value")
	}
	return nil
}

func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %s must be %s", typ.Field, typ.Type)
		}
		return fmt.Sprintf("expected %s", typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}
