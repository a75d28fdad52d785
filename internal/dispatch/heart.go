package dispatch

import (
	"context"
	"errors"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// heart is the process's heartbeat (docs/delivery.md, "Crashes"): one row
// in the database, renewed every fifth of a lease in one statement; the
// jobs the process leased are its own while the row is fresh, and another
// process takes them all over once it lapses.
//
// Its timing, at the default lease of 5 s: renewed every second; lapsed
// (taken over by any other process) when older than a lease less one
// renewal period, 4 s; and this process stops attempting (it cancels what
// is in flight and starts nothing) once 3 s passed since the last renewal
// that went through, measured on its own monotonic clock from the moment
// that renewal was sent, which is no later than the database's record of
// it. So no job is ever attempted here after it may have been taken over
// elsewhere, and a process that died is taken over about 4 s after its
// last renewal.
type heart struct {
	every   time.Duration // between renewals
	lapse   time.Duration // a heartbeat older than this is lapsed
	fenceAt time.Duration // since the last renewal sent: stop attempting

	mu      sync.Mutex
	started bool // registered once: Run, not Step
	owner   string
	lastOK  time.Time // when the last renewal that went through was sent (monotonic)
	// stop cancels every attempt in flight when this process can no
	// longer be sure its jobs are its own; it is replaced when it may
	// attempt again.
	stop    context.Context
	cancel  context.CancelFunc
	fencing bool
}

func newHeart(lease time.Duration, owner string) *heart {
	every := max(lease/5, 10*time.Millisecond)
	h := &heart{every: every, lapse: max(lease-every, every), fenceAt: max(lease-2*every, every/2), owner: owner}
	h.stop, h.cancel = context.WithCancel(context.Background())
	return h
}

// id is the process's name in the database: the owner of its jobs.
func (h *heart) id() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.owner
}

// alive reports whether this process may attempt (and claim): its last
// renewal is recent enough that no other process can have taken its jobs.
// A dispatcher driven by Step has no heartbeat (its jobs end with their
// own lease): it always may.
func (h *heart) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.started || !h.lastOK.IsZero() && time.Since(h.lastOK) < h.fenceAt
}

// attempts is the context attempts run under: canceled when the process
// stops attempting.
func (h *heart) attempts() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop
}

// beat is one renewal, sent at sent: it went through (lastOK moves) or
// not.
func (h *heart) beat(sent time.Time, ok bool) (resumed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		return false
	}
	h.lastOK, h.started = sent, true
	if h.fencing {
		h.fencing = false
		h.stop, h.cancel = context.WithCancel(context.Background())
		return true
	}
	return false
}

// fence stops attempts when the last renewal is too old; it reports
// whether it just did.
func (h *heart) fence() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fencing || h.lastOK.IsZero() || time.Since(h.lastOK) < h.fenceAt {
		return false
	}
	h.fencing = true
	h.cancel()
	return true
}

// renamed gives the process a new name: its old one's jobs were taken
// over.
func (h *heart) renamed(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owner, h.lastOK = owner, time.Time{}
	if !h.fencing {
		h.fencing = true
		h.cancel()
	}
}

// register names this process in the database, trying until it answers
// or ctx ends.
func (d *Dispatcher) register(ctx context.Context) error {
	wait := 100 * time.Millisecond
	for {
		sent := time.Now()
		alive, err := d.cfg.Store.Heartbeat(ctx, d.heart.id(), true)
		if err == nil && alive {
			d.heart.beat(sent, true)
			return nil
		}
		d.cfg.Logger.Warn("registering this process's heartbeat failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.gate.stopping:
			return errors.New("dispatch: stopped before the heartbeat was registered")
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// heartLoop renews the heartbeat every period and watches it: past the
// fence it cancels the attempts in flight and starts none; a renewal
// that finds the row gone (taken over) drops everything held here and
// registers again under a new name.
func (d *Dispatcher) heartLoop(stop <-chan struct{}) {
	h := d.heart
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	// The fence is checked more often than renewals are sent, so a
	// renewal that hangs does not delay it.
	watch := time.NewTicker(max(h.every/10, time.Millisecond))
	defer watch.Stop()
	renewing := make(chan struct{}, 1)
	failed := 0
	for {
		select {
		case <-stop:
			return
		case <-watch.C:
			if h.fence() {
				d.cfg.Metrics.HeartbeatFences.Inc()
				d.cfg.Logger.Error("this process could not renew its heartbeat in time: its attempts in flight are canceled "+
					"and none starts until a renewal goes through (another process may take its jobs over)",
					"since_last_renewal", time.Since(h.lastOKAt()).Round(time.Millisecond))
			}
		case <-tick.C:
			select {
			case renewing <- struct{}{}:
			default:
				continue // the last one is still waiting for its answer
			}
			go func() {
				defer func() { <-renewing }()
				owner, sent := h.id(), time.Now()
				// Not registered yet (its registration after a take-over
				// failed): register now.
				register := h.lastOKAt().IsZero()
				ctx, cancel := context.WithTimeout(context.Background(), h.lapse)
				alive, err := d.cfg.Store.Heartbeat(ctx, owner, register)
				cancel()
				switch {
				case err != nil:
					d.cfg.Metrics.Heartbeats.WithLabelValues("error").Inc()
					d.ledger.storeFailed()
					if failed++; failed >= 2 {
						d.cfg.Logger.Warn("renewing this process's heartbeat keeps failing", "rounds", failed, "err", err)
					}
				case !alive:
					d.cfg.Metrics.Heartbeats.WithLabelValues("lost").Inc()
					d.takenOver(owner)
				default:
					failed = 0
					d.cfg.Metrics.Heartbeats.WithLabelValues("ok").Inc()
					if h.beat(sent, true) {
						d.cfg.Logger.Info("heartbeat renewed again: attempts resume")
						d.Wake()
					}
				}
			}()
		}
	}
}

func (h *heart) lastOKAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastOK
}

// takenOver: another process found this one's heartbeat lapsed and took
// its jobs: nothing held here is this process's any more. What waits is
// dropped (not given back: it is another's now), runs end, results still
// to come are fenced; the process registers again under a new name.
func (d *Dispatcher) takenOver(old string) {
	if d.heart.id() != old {
		return
	}
	owner := hub.NewID("disp", d.now())
	d.heart.renamed(owner)
	d.cfg.Logger.Error("this process's heartbeat had lapsed and its jobs were taken over by another process; "+
		"it drops what it held and starts again as a new one", "was", old, "now", owner)
	dropped := d.ledger.dropAll(d.dests.unpark())
	d.ledger.answered(dropped)
	ctx, cancel := context.WithTimeout(context.Background(), d.heart.lapse)
	defer cancel()
	sent := time.Now()
	if alive, err := d.cfg.Store.Heartbeat(ctx, owner, true); err == nil && alive {
		d.heart.beat(sent, true)
		d.Wake()
	}
}
