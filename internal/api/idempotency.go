package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// API idempotency (docs/lerian-platform.md). A POST sent with an
// Idempotency-Key is run once per (principal, key) within
// STREAMING_HUB_IDEMPOTENCY_TTL: the same key with the same method, path and
// body gets the first answer again (status and body, with
// Idempotent-Replayed: true), another request under the key is 422
// idempotency_conflict, and a request still running under it is 409 conflict.
//
// What is stored: every final answer the handler gave, 2xx and 4xx alike
// (a validation 400, a 404, a failed probe's 422 are replayed as given),
// as Stripe and Svix do. Not stored, and the key released so the client
// may retry with it: a 5xx, a 429, and a request its client abandoned.
// Nothing is claimed before the request authenticates (a 401 is never
// stored) and before the key is valid (400 naming the header).
//
// Answers may hold a secret shown once (a key, a signing secret, a portal
// link): every stored answer is sealed under the hub's keyring, bound to
// its principal and key, and replayed only to that principal.
const (
	idempotencyHeader = "Idempotency-Key"
	replayedHeader    = "Idempotent-Replayed"
	// maxIdempotencyKey is the longest key accepted, in bytes.
	maxIdempotencyKey = 255
	// idempotencyLock is how long a running claim holds its key if its
	// process dies before answering; a live request is bounded well below
	// it (the longest is a verification probe).
	idempotencyLock = 5 * time.Minute
	// maxStoredAnswer bounds an answer kept for replay; a longer one (none
	// the API gives) releases its key instead.
	maxStoredAnswer = 1 << 20
)

// codeIdempotencyConflict is the error code of a key reused for another
// request (422).
const codeIdempotencyConflict = "idempotency_conflict"

// idempotent makes fn, a POST handler, honour Idempotency-Key.
func (s *Server) idempotent(fn func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		values, sent := r.Header[idempotencyHeader]
		if !sent || s.deps.Keyring == nil {
			return fn(w, r)
		}
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		// The handler finds the principal here instead of authenticating
		// (and counting a key's use) again.
		r = r.WithContext(withDecided(r.Context(), p))
		if len(values) != 1 || !validIdempotencyKey(values[0]) {
			return hub.Errorf(hub.EINVALID, "%s: must be given once, 1 to %d printable ASCII characters", idempotencyHeader, maxIdempotencyKey)
		}
		key := values[0]
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return hub.Errorf(hub.EINVALID, "request body larger than %d bytes", maxBody)
			}
			return hub.Errorf(hub.EINVALID, "reading request body: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		principal := idempotencyPrincipal(p, r)
		hash := requestHash(r, body)
		token := store.NewToken()
		rec, claimed, err := s.deps.Store.ClaimIdempotencyKey(r.Context(), store.IdempotencyClaim{
			Principal: principal, Key: key, RequestHash: hash, Token: token, Lock: idempotencyLock})
		if err != nil {
			return err
		}
		if !claimed {
			switch {
			case rec.RequestHash != hash:
				writeJSON(w, http.StatusUnprocessableEntity, errorBody{errorDetail{Code: codeIdempotencyConflict,
					Message: idempotencyHeader + ": this key was used for another request (method, path or body); use a new key"}})
				return nil
			case !rec.Completed:
				return hub.Errorf(hub.ECONFLICT, "%s: a request with this key is still running; retry later", idempotencyHeader)
			}
			return s.replay(w, rec, principal, key)
		}

		ctx := context.WithoutCancel(r.Context())
		kept := false
		defer func() {
			// Also on a panic: the key is free for a retry.
			if !kept {
				if err := s.deps.Store.ReleaseIdempotencyKey(ctx, principal, key, token); err != nil {
					s.deps.Logger.Error("releasing an idempotency key failed", "request_id", requestID(ctx), "err", err)
				}
			}
		}()
		ans := &answerRecorder{ResponseWriter: w}
		if err := fn(ans, r); err != nil {
			writeError(ans, r, s.deps.Logger, err)
		}
		if !storable(ans.status()) || ans.overflow {
			return nil
		}
		sealed, err := s.deps.Keyring.Seal(ans.body.Bytes(), idempotencyAAD(principal, key))
		if err != nil {
			s.deps.Logger.Error("sealing an idempotent answer failed", "request_id", requestID(ctx), "err", err)
			return nil
		}
		// The answer was sent: whatever happens now, the work is not
		// released to be done again (a failed write leaves the claim to
		// its lock).
		kept = true
		if ok, err := s.deps.Store.CompleteIdempotencyKey(ctx, principal, key, token, ans.status(), sealed, s.idempotencyTTL()); err != nil || !ok {
			s.deps.Logger.Error("storing an idempotent answer failed", "request_id", requestID(ctx), "lost_claim", !ok, "err", err)
		}
		return nil
	}
}

// replay answers a stored answer again.
func (s *Server) replay(w http.ResponseWriter, rec store.IdempotencyRecord, principal, key string) error {
	body, err := s.deps.Keyring.Open(rec.Body, idempotencyAAD(principal, key))
	if err != nil {
		return errors.New("opening a stored idempotent answer (was STREAMING_HUB_KEK rotated without STREAMING_HUB_KEK_PREVIOUS?): " + err.Error())
	}
	if len(body) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set(replayedHeader, "true")
	w.WriteHeader(rec.Status)
	w.Write(body)
	return nil
}

func (s *Server) idempotencyTTL() time.Duration {
	if s.deps.IdempotencyTTL > 0 {
		return s.deps.IdempotencyTTL
	}
	return config.Defaults(config.Serve).IdempotencyTTL
}

// storable reports whether an answer of this status is kept for replay:
// final answers are; 5xx, 429 and abandoned requests release the key.
func storable(status int) bool {
	return status < 500 && status != http.StatusTooManyRequests && status != statusClientClosed
}

// validIdempotencyKey: 1 to 255 printable ASCII characters (space too).
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotencyPrincipal names who sends a keyed request, stably: a stored
// answer is replayed only to the same one
// (docs/lerian-platform.md#api-idempotency). The admin token is "admin",
// a tenant key its id, a JWT its subject within its tenant (hashed: the
// store keeps no identity in clear), a console session opened by a portal
// link that link. The admin token and an operator's JWT are also bound to
// the tenant they name (X-Tenant-Id).
func idempotencyPrincipal(p Principal, r *http.Request) string {
	switch {
	case p.TokenHash != "":
		// Made only once the access manager authorized this very token.
		sum := sha256.Sum256([]byte(p.TenantID + "\x00" + p.Subject))
		who := "jwt:" + hex.EncodeToString(sum[:16])
		if p.Admin {
			return who + namedTenant(r)
		}
		return who
	case p.Admin:
		return "admin" + namedTenant(r)
	case p.KeyID != "":
		return "key:" + p.KeyID
	case p.LinkID != "":
		return "portal:" + p.LinkID
	}
	return "tenant:" + p.TenantID
}

// namedTenant is the X-Tenant-Id an operator names, as a principal's
// suffix: "" for none.
func namedTenant(r *http.Request) string {
	t := r.Header.Get("X-Tenant-Id")
	switch {
	case t == "":
		return ""
	case hub.ValidateTenantID(t) == nil:
		return "/tenant:" + t
	}
	sum := sha256.Sum256([]byte(t))
	return "/tenant#" + hex.EncodeToString(sum[:16])
}

// requestHash is what a key is bound to: SHA-256 of the method, the path
// (and query) and the body.
func requestHash(r *http.Request, body []byte) string {
	h := sha256.New()
	io.WriteString(h, r.Method+"\n"+r.URL.EscapedPath()+"?"+r.URL.RawQuery+"\n")
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func idempotencyAAD(principal, key string) []byte {
	return []byte("streaming-hub idempotent answer\x00" + principal + "\x00" + key)
}

// answerRecorder passes an answer on and keeps a copy of it.
type answerRecorder struct {
	http.ResponseWriter
	code     int
	body     bytes.Buffer
	overflow bool
}

func (a *answerRecorder) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	if a.body.Len()+len(b) > maxStoredAnswer {
		a.overflow = true
	} else {
		a.body.Write(b)
	}
	return a.ResponseWriter.Write(b)
}

func (a *answerRecorder) status() int {
	if a.code == 0 {
		return http.StatusOK
	}
	return a.code
}
