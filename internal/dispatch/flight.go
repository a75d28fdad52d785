package dispatch

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// destinations counts the attempts in flight to each destination (scheme,
// host and port), each holding at most its share of the in-flight set, and
// remembers the subscriptions sending to a destination at its share: claims
// leave those alone until it has room again.
type destinations struct {
	share int

	mu    sync.Mutex
	count map[string]int
	subs  map[string]map[string]bool // destination -> subscriptions seen sending there
}

// admit takes one of dest's slots for subscription sub, unless dest is at
// its share.
func (ds *destinations) admit(dest, sub string) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	subs := ds.subs[dest]
	if subs == nil {
		subs = make(map[string]bool)
		ds.subs[dest] = subs
	}
	subs[sub] = true
	if ds.count[dest] >= ds.share {
		return false
	}
	ds.count[dest]++
	return true
}

// leave gives back one of dest's slots; when that gives dest room again it
// returns the subscriptions claims were leaving alone.
func (ds *destinations) leave(dest string) (freed []string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	n := ds.count[dest]
	ds.count[dest] = n - 1
	if n == ds.share {
		for id := range ds.subs[dest] {
			freed = append(freed, id)
		}
	}
	if n <= 1 {
		delete(ds.count, dest)
		delete(ds.subs, dest)
	}
	return freed
}

// excluded lists the subscriptions sending to destinations at their share.
func (ds *destinations) excluded() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []string
	for dest, n := range ds.count {
		if n >= ds.share {
			for id := range ds.subs[dest] {
				out = append(out, id)
			}
		}
	}
	return out
}

// destinationOf is a URL's destination: scheme, host and port (the
// scheme's default when none is written).
func destinationOf(raw string) string {
	if strings.HasPrefix(raw, "kafka://") {
		return raw // hub.Destination.Address: the brokers, already plain
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		case "amqps":
			port = "5671"
		case "amqp":
			port = "5672"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// hold registers leases to renew; forget ends their renewal.
func (d *Dispatcher) hold(leases []store.JobLease) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	for _, l := range leases {
		d.leases[l.JobID] = l.LeaseToken
	}
}

func (d *Dispatcher) forget(leases ...store.JobLease) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	for _, l := range leases {
		if d.leases[l.JobID] == l.LeaseToken {
			delete(d.leases, l.JobID)
		}
	}
}

// renewLoop renews the leases held here every third of a lease, so a slow
// attempt (or a run, or a result not yet written) never loses its lease
// while this process lives; only a process that died, or lost the
// database for longer than a lease, lets its leases expire.
func (d *Dispatcher) renewLoop(stop <-chan struct{}) {
	t := time.NewTicker(max(d.cfg.Lease/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(d.cfg.Lease/3, time.Second))
			if err := d.RenewLeases(ctx); err != nil {
				d.storeFailed()
				d.cfg.Logger.Error("renewing leases failed; retrying", "err", err)
			}
			cancel()
		}
	}
}

// RenewLeases renews, once, every lease held here (Run does it every third
// of a lease). Leases found lost (recovered meanwhile by another process)
// stop being renewed: the results of their attempts will be fenced.
func (d *Dispatcher) RenewLeases(ctx context.Context) error {
	d.leaseMu.Lock()
	held := make([]store.JobLease, 0, len(d.leases))
	for id, token := range d.leases {
		held = append(held, store.JobLease{JobID: id, LeaseToken: token})
	}
	d.leaseMu.Unlock()
	for start := 0; start < len(held); start += 1000 {
		chunk := held[start:min(start+1000, len(held))]
		lost, err := d.cfg.Store.RenewLeases(ctx, store.RenewParams{Leases: chunk, Lease: d.cfg.Lease})
		if err != nil {
			return err
		}
		if len(lost) > 0 {
			d.cfg.Logger.Debug("leases no longer held: written meanwhile, or recovered by another process (then their results are fenced)", "jobs", len(lost))
			byID := make(map[string]string, len(chunk))
			for _, l := range chunk {
				byID[l.JobID] = l.LeaseToken
			}
			var gone []store.JobLease
			for _, id := range lost {
				gone = append(gone, store.JobLease{JobID: id, LeaseToken: byID[id]})
			}
			d.forget(gone...)
		}
	}
	return nil
}
