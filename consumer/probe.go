package consumer

import (
	"encoding/json"
	"errors"
	"net/http"
)

// ErrInvalidProbe: a signed request typed hub.verification whose body is
// not a probe with a challenge (400).
var ErrInvalidProbe = errors.New("consumer: verification probe without a challenge")

// probe is the body of a verification probe.
type probe struct {
	Type           string `json:"type"`
	Challenge      string `json:"challenge"`
	SubscriptionID string `json:"subscription_id"`
}

// answerProbe passes the hub's verification: 200 with the challenge in the
// body. It runs after the signature check, so the endpoint only ever echoes
// what the hub signed and a wrong secret fails verification here, before
// any real event is sent.
func (m *middleware) answerProbe(w http.ResponseWriter, r *http.Request, body []byte) {
	var p probe
	if err := json.Unmarshal(body, &p); err != nil || p.Type != ProbeEventType || p.Challenge == "" {
		m.fail(w, r, http.StatusBadRequest, ErrInvalidProbe)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // keep the challenge byte for byte
	enc.Encode(map[string]string{"challenge": p.Challenge})
}
