package payments

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

// Store keeps payments in Redis. Reads are plain HGETALLs; every write is one
// Lua script that also appends the notification (see scripts.go).
type Store struct {
	rdb    redis.UniversalClient
	keys   keyspace.Layout
	source string
	now    func() time.Time
}

// NewStore returns a store over the layout's keys. source is the ce-source of
// the notifications ("" means notify.DefaultSource).
func NewStore(rdb redis.UniversalClient, keys keyspace.Layout, source string) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("payments store: redis client is required")
	}
	if keys.Name() == "" {
		return nil, errors.New("payments store: key layout is required")
	}
	if source == "" {
		source = notify.DefaultSource
	}
	return &Store{rdb: rdb, keys: keys, source: source, now: time.Now}, nil
}

// Written is the outcome of a write: the state after it and the stream entry
// that announced it.
type Written struct {
	Payment Payment
	EntryID string
	EventID string
}

// Create stores a new payment as pending (version 1) and announces it with
// payment.created.
func (s *Store) Create(ctx context.Context, n NewPayment) (Written, error) {
	if err := n.Validate(); err != nil {
		return Written{}, fmt.Errorf("create payment: %w", err)
	}
	id := uuid.NewString()
	now := s.now().UTC()
	ev := notify.NewEnvelope(s.source, notify.TypePaymentCreated, id, now)
	env, err := notify.EnvelopeJSON(ev)
	if err != nil {
		return Written{}, fmt.Errorf("create payment: %w", err)
	}
	out, err := createScript.Run(ctx, s.rdb, []string{s.keys.Payment(id), s.keys.Stream()},
		id, n.AmountCents, n.Currency, n.PayerAccount, n.PayeeAccount, string(StatusPending),
		now.Format(time.RFC3339Nano), env).Slice()
	if err != nil {
		return Written{}, fmt.Errorf("create payment %s: %w", id, scriptError(err))
	}
	return writtenFrom(out, ev.ID)
}

// Approve moves a pending payment to approved (payment.approved).
func (s *Store) Approve(ctx context.Context, id string) (Written, error) {
	return s.transition(ctx, id, StatusPending, StatusApproved, notify.TypePaymentApproved)
}

// Refund moves an approved payment to refunded (payment.refunded).
func (s *Store) Refund(ctx context.Context, id string) (Written, error) {
	return s.transition(ctx, id, StatusApproved, StatusRefunded, notify.TypePaymentRefunded)
}

func (s *Store) transition(ctx context.Context, id string, from, to Status, ceType string) (Written, error) {
	if err := validID(id); err != nil {
		return Written{}, err
	}
	now := s.now().UTC()
	ev := notify.NewEnvelope(s.source, ceType, id, now)
	env, err := notify.EnvelopeJSON(ev)
	if err != nil {
		return Written{}, fmt.Errorf("%s payment %s: %w", to, id, err)
	}
	out, err := transitionScript.Run(ctx, s.rdb, []string{s.keys.Payment(id), s.keys.Stream()},
		id, string(from), string(to), now.Format(time.RFC3339Nano), env).Slice()
	if err != nil {
		return Written{}, fmt.Errorf("%s payment %s: %w", to, id, scriptError(err))
	}
	return writtenFrom(out, ev.ID)
}

// Remove deletes the payment's Hash and announces it with payment.removed,
// whose version is the deleted one plus one. Receivers that fetch after this
// get 404.
func (s *Store) Remove(ctx context.Context, id string) (entryID string, version int64, err error) {
	if err := validID(id); err != nil {
		return "", 0, err
	}
	ev := notify.NewEnvelope(s.source, notify.TypePaymentRemoved, id, s.now())
	env, err := notify.EnvelopeJSON(ev)
	if err != nil {
		return "", 0, fmt.Errorf("remove payment %s: %w", id, err)
	}
	out, err := removeScript.Run(ctx, s.rdb, []string{s.keys.Payment(id), s.keys.Stream()}, id, env).Slice()
	if err != nil {
		return "", 0, fmt.Errorf("remove payment %s: %w", id, scriptError(err))
	}
	if len(out) != 2 {
		return "", 0, fmt.Errorf("remove payment %s: script returned %d values, want 2", id, len(out))
	}
	entryID, _ = out[0].(string)
	version, _ = out[1].(int64)
	return entryID, version, nil
}

// Get returns the current state of a payment.
func (s *Store) Get(ctx context.Context, id string) (Payment, error) {
	if err := validID(id); err != nil {
		return Payment{}, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.Payment(id)).Result()
	if err != nil {
		return Payment{}, fmt.Errorf("get payment %s: %w", id, err)
	}
	if len(h) == 0 {
		return Payment{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return fromHash(h)
}

// validID keeps ids to what the store generates, so a path segment can never
// address another key of the layout.
func validID(id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return fmt.Errorf("%w: %q is not a payment id", ErrNotFound, id)
	}
	return nil
}

// scriptError turns the scripts' coded error replies into sentinel errors.
func scriptError(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "NOT_FOUND "):
		return fmt.Errorf("%w: %s", ErrNotFound, strings.TrimPrefix(msg, "NOT_FOUND "))
	case strings.HasPrefix(msg, "CONFLICT "):
		return fmt.Errorf("%w: %s", ErrConflict, strings.TrimPrefix(msg, "CONFLICT "))
	}
	return err
}

func writtenFrom(out []any, eventID string) (Written, error) {
	if len(out) != 2 {
		return Written{}, fmt.Errorf("script returned %d values, want 2", len(out))
	}
	entryID, _ := out[0].(string)
	flat, _ := out[1].([]any)
	h := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		h[k] = v
	}
	p, err := fromHash(h)
	if err != nil {
		return Written{}, err
	}
	return Written{Payment: p, EntryID: entryID, EventID: eventID}, nil
}

func fromHash(h map[string]string) (Payment, error) {
	p := Payment{
		ID:           h["id"],
		Currency:     h["currency"],
		PayerAccount: h["payer_account"],
		PayeeAccount: h["payee_account"],
		Status:       Status(h["status"]),
	}
	var err error
	if p.AmountCents, err = strconv.ParseInt(h["amount_cents"], 10, 64); err != nil {
		return Payment{}, fmt.Errorf("payment %s: amount_cents: %w", p.ID, err)
	}
	if p.Version, err = strconv.ParseInt(h["version"], 10, 64); err != nil {
		return Payment{}, fmt.Errorf("payment %s: version: %w", p.ID, err)
	}
	if p.CreatedAt, err = time.Parse(time.RFC3339Nano, h["created_at"]); err != nil {
		return Payment{}, fmt.Errorf("payment %s: created_at: %w", p.ID, err)
	}
	if p.UpdatedAt, err = time.Parse(time.RFC3339Nano, h["updated_at"]); err != nil {
		return Payment{}, fmt.Errorf("payment %s: updated_at: %w", p.ID, err)
	}
	return p, nil
}
