// Package payments is the source of truth of the example: PIX payments kept
// in Redis Hashes, written only through Lua scripts that also append the thin
// notification to the stream, and served over HTTP to the receivers that need
// the detail the notification leaves out.
package payments

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is where a payment is in its life.
type Status string

// The state machine: pending -> approved -> refunded. Removal is allowed from
// any state.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusRefunded Status = "refunded"
)

// Errors the store and API map to 404 and 409. Both are wrapped with detail.
var (
	ErrNotFound = errors.New("payment not found")
	ErrConflict = errors.New("command not allowed in the payment's current state")
)

// Payment is the current state of one payment, as GET /payments/{id} returns
// it. Version counts the writes; every write appended exactly one
// notification carrying that version.
type Payment struct {
	ID           string    `json:"id"`
	AmountCents  int64     `json:"amountCents"`
	Currency     string    `json:"currency"`
	PayerAccount string    `json:"payerAccount"`
	PayeeAccount string    `json:"payeeAccount"`
	Status       Status    `json:"status"`
	Version      int64     `json:"version"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// NewPayment is the body of POST /payments.
type NewPayment struct {
	AmountCents  int64  `json:"amountCents"`
	Currency     string `json:"currency"`
	PayerAccount string `json:"payerAccount"`
	PayeeAccount string `json:"payeeAccount"`
}

// MaxAccountLen bounds account identifiers.
const MaxAccountLen = 64

// Validate reports every problem with the request at once.
func (n NewPayment) Validate() error {
	var errs []error
	if n.AmountCents <= 0 {
		errs = append(errs, fmt.Errorf("amountCents must be > 0, got %d", n.AmountCents))
	}
	if len(n.Currency) != 3 || strings.ToUpper(n.Currency) != n.Currency || strings.ContainsFunc(n.Currency, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		errs = append(errs, fmt.Errorf("currency must be an ISO 4217 code like BRL, got %q", n.Currency))
	}
	for name, v := range map[string]string{"payerAccount": n.PayerAccount, "payeeAccount": n.PayeeAccount} {
		if v == "" || len(v) > MaxAccountLen {
			errs = append(errs, fmt.Errorf("%s must be 1..%d characters", name, MaxAccountLen))
		}
	}
	if n.PayerAccount != "" && n.PayerAccount == n.PayeeAccount {
		errs = append(errs, errors.New("payerAccount and payeeAccount must differ"))
	}
	return errors.Join(errs...)
}
