package destination

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Registry is the one send path
// (docs/brokers.md): the drivers by
// destination type and the delivery timeout. Dispatch, the test event and the
// verification probe all send through its Send.
type Registry struct {
	timeout time.Duration
	drivers map[string]Driver
}

// NewRegistry returns the send path over drivers (by hub destination type)
// that gives each attempt timeout (STREAMING_HUB_DELIVERY_TIMEOUT).
func NewRegistry(timeout time.Duration, drivers map[string]Driver) *Registry {
	return &Registry{timeout: timeout, drivers: drivers}
}

// Send makes one attempt of m to t: it signs m (adding Content-Type,
// User-Agent and the webhook-* headers) and hands it to t's driver with the
// delivery timeout as ctx's deadline.
func (r *Registry) Send(ctx context.Context, t Target, m Message) Result {
	d := r.drivers[t.Type]
	if d == nil {
		return Result{Err: fmt.Errorf("this hub process cannot deliver to %s destinations", t.Type)}
	}
	if err := sign(&m, t.Secrets); err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := time.Now()
	res := d.Send(ctx, t, m)
	if res.Duration == 0 {
		res.Duration = time.Since(start)
	}
	if res.Err != nil {
		// What every caller shows a tenant (attempts, verify, test
		// events) says what failed, never where inside (Explain).
		res.Err = &TenantError{Text: Explain(res.Err, WrittenOf(t), r.timeout), Err: res.Err}
	}
	return res
}

// Close closes every driver, once (one driver may serve several types).
func (r *Registry) Close() error {
	var errs []error
	closed := make(map[Driver]bool, len(r.drivers))
	for _, d := range r.drivers {
		if closed[d] {
			continue
		}
		closed[d] = true
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}
