package config

import (
	"fmt"
	"time"
)

// Check collects the first problem of a package's configuration. A package
// receives a complete configuration (Defaults fills every field): a
// missing or out-of-range field is a programming error, reported with the
// field's name instead of being replaced by a default.
type Check struct {
	Of  string // what is checked, for the message: "dispatch.Config"
	err error
}

// Require records that field is missing unless ok.
func (c *Check) Require(field string, ok bool) {
	if !ok && c.err == nil {
		c.err = fmt.Errorf("%s: %s is required", c.Of, field)
	}
}

// Positive records that field must be positive unless v > 0.
func Positive[T int | float64 | time.Duration](c *Check, field string, v T) {
	if v <= 0 && c.err == nil {
		c.err = fmt.Errorf("%s: %s must be positive, got %v", c.Of, field, v)
	}
}

// Err is the first problem recorded, or nil.
func (c *Check) Err() error { return c.err }
