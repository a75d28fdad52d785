package store

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// The errors every driver answers with, written once so that both say the
// same thing. Each is a *hub.Error: its code decides the API's status.
// They quote an id with QuoteID: a caller's 5,000-byte path id is not
// echoed back whole (docs/security.md).

// MaxQuotedID is how many bytes of an id an error message quotes.
const MaxQuotedID = 64

// QuoteID quotes id for an error message: at most MaxQuotedID bytes of it,
// cut on a rune boundary, with "…" appended when it was cut.
func QuoteID(id string) string {
	if len(id) > MaxQuotedID {
		cut := MaxQuotedID
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		id = id[:cut] + "…"
	}
	return strconv.Quote(id)
}

func TenantNotFound(id string) error {
	return hub.Errorf(hub.ENOTFOUND, "tenant %s not found", QuoteID(id))
}

// RejectionNotFound: the rejection log never held id, or no longer does.
func RejectionNotFound(id int64) error {
	return hub.Errorf(hub.ENOTFOUND, "rejection %d not found", id)
}

func TenantExists(id string) error {
	return hub.Errorf(hub.ECONFLICT, "tenant %s already exists", QuoteID(id))
}

// APIKeyNotFound names the key when id is set; authentication passes "", so
// that nothing a caller sent is echoed back.
func APIKeyNotFound(id string) error {
	if id == "" {
		return hub.Errorf(hub.ENOTFOUND, "api key not found")
	}
	return hub.Errorf(hub.ENOTFOUND, "api key %s not found", QuoteID(id))
}

func SubscriptionNotFound(id string) error {
	return hub.Errorf(hub.ENOTFOUND, "subscription %s not found", QuoteID(id))
}

func SubscriptionExists(id string) error {
	return hub.Errorf(hub.ECONFLICT, "subscription %s already exists", QuoteID(id))
}

// UpdateMissed answers a compare-and-set update of subscription id that
// matched no row, given what reading it again answered (lookup): the
// lookup's error when it is gone, else a conflict, since its version is no
// longer the one the caller read.
func UpdateMissed(id string, lookup error) error {
	if lookup != nil {
		return lookup
	}
	return hub.Errorf(hub.ECONFLICT, "subscription %s was modified concurrently; retry", QuoteID(id))
}

func EventNotFound(id string) error {
	return hub.Errorf(hub.ENOTFOUND, "event %s not found", QuoteID(id))
}

func DeliveryNotFound(id string) error {
	return hub.Errorf(hub.ENOTFOUND, "delivery %s not found", QuoteID(id))
}

// Wrap prefixes a non-nil *errp with the driver and the operation that
// failed ("postgres: CompleteJobs: ..."), as pkgsite's derrors.Wrap does.
// Drivers defer it in every method; a *hub.Error stays reachable with
// errors.As, so its code still decides the API's answer.
func Wrap(errp *error, driver, op string) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %s: %w", driver, op, *errp)
	}
}

// Constraint is the integrity constraint a write broke, as a driver reads
// it from its database's error.
type Constraint int

const (
	NoConstraint Constraint = iota
	ForeignKey              // what the row refers to does not exist
	Unique                  // a row with the same key exists
)

// Broken answers a write whose error err broke constraint c: missing for a
// foreign key, exists for a unique key (nil when the write cannot break
// it). Any other error is returned as it is.
func Broken(err error, c Constraint, missing, exists error) error {
	switch {
	case c == ForeignKey && missing != nil:
		return missing
	case c == Unique && exists != nil:
		return exists
	}
	return err
}
