package payments

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// maxBody bounds request bodies: a payment request is a few hundred bytes.
const maxBody = 64 << 10

// NewHandler serves the payments API:
//
//	POST   /payments               create (pending)       201
//	GET    /payments/{id}          current state+version  200
//	POST   /payments/{id}/approve  pending -> approved    200
//	POST   /payments/{id}/refund   approved -> refunded   200
//	DELETE /payments/{id}          remove                 204
//
// Unknown payment -> 404; command not allowed in the current state -> 409,
// and in that case nothing was written (no Hash change, no notification).
func NewHandler(store *Store, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	a := &api{store: store, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", a.create)
	mux.HandleFunc("GET /payments/{id}", a.get)
	mux.HandleFunc("POST /payments/{id}/approve", a.approve)
	mux.HandleFunc("POST /payments/{id}/refund", a.refund)
	mux.HandleFunc("DELETE /payments/{id}", a.remove)
	return mux
}

type api struct {
	store *Store
	log   *slog.Logger
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	var n NewPayment
	if err := dec.Decode(&n); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid body: %v", err))
		return
	}
	if err := n.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out, err := a.store.Create(r.Context(), n)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/payments/"+out.Payment.ID)
	writeJSON(w, http.StatusCreated, out.Payment)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	p, err := a.store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (a *api) approve(w http.ResponseWriter, r *http.Request) {
	out, err := a.store.Approve(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out.Payment)
}

func (a *api) refund(w http.ResponseWriter, r *http.Request) {
	out, err := a.store.Refund(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out.Payment)
}

func (a *api) remove(w http.ResponseWriter, r *http.Request) {
	if _, _, err := a.store.Remove(r.Context(), r.PathValue("id")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// fail maps store errors to statuses. Internal errors are logged and answered
// with a generic message: Redis details are not the caller's business.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	default:
		a.log.ErrorContext(r.Context(), "payments API", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is already sent; nothing useful to do on error
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// RequestCounter counts requests that reach the API. The demo and tests use
// it to prove which receivers call the source and which do not.
type RequestCounter struct {
	n atomic.Int64
}

// Wrap returns h counting every request.
func (c *RequestCounter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// Count is the number of requests seen so far.
func (c *RequestCounter) Count() int64 { return c.n.Load() }
