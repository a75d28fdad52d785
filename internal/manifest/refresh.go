package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// LockName is the lock a refresh runs under: one replica at a time.
const LockName = "manifests"

// Store is the part of the store a Refresher uses.
type Store interface {
	Exclusive(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error)
	RecordManifestFetch(ctx context.Context, url string, at time.Time, manifest []byte, fetchErr string) error
}

// Config configures a Refresher; config.Defaults fills the settings.
type Config struct {
	config.Manifests

	Store   Store
	Metrics *metrics.Metrics
	// Client fetches; nil means a plain client with Timeout. Sources are
	// the operator's, so private addresses are allowed.
	Client *http.Client
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // nil means time.Now
}

// Refresher fetches every source each RefreshInterval.
type Refresher struct {
	cfg Config
}

// New returns a Refresher.
func New(cfg Config) (*Refresher, error) {
	ch := config.Check{Of: "manifest.Config"}
	ch.Require("Store", cfg.Store != nil)
	ch.Require("Metrics", cfg.Metrics != nil)
	config.Positive(&ch, "RefreshInterval", cfg.RefreshInterval)
	config.Positive(&ch, "Timeout", cfg.Timeout)
	config.Positive(&ch, "MaxBytes", cfg.MaxBytes)
	if err := ch.Err(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	return &Refresher{cfg: cfg}, nil
}

// Run refreshes every RefreshInterval until ctx ends; with no sources it
// returns at once.
func (r *Refresher) Run(ctx context.Context) {
	if len(r.cfg.Sources) == 0 {
		return
	}
	t := time.NewTicker(r.cfg.RefreshInterval)
	defer t.Stop()
	for {
		if _, err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("manifest refresh failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh fetches every source once, unless another replica is doing so.
// A source that fails keeps its last good copy; only its error changes.
func (r *Refresher) Refresh(ctx context.Context) (ran bool, err error) {
	return r.cfg.Store.Exclusive(ctx, LockName, func(ctx context.Context) error {
		var errs []error
		for _, url := range r.cfg.Sources {
			body, fetchErr := r.fetch(ctx, url)
			result := "ok"
			msg := ""
			if fetchErr != nil {
				result, msg, body = "error", fetchErr.Error(), nil
				r.cfg.Logger.Warn("manifest fetch failed", "url", url, "err", msg)
			}
			r.cfg.Metrics.ManifestRefresh.WithLabelValues(result).Inc()
			if err := r.cfg.Store.RecordManifestFetch(ctx, url, r.cfg.Now().UTC(), body, msg); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// fetch GETs one manifest, within Timeout and MaxBytes, and checks it.
func (r *Refresher) fetch(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return nil, r.describe(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(r.cfg.MaxBytes)+1))
	if err != nil {
		return nil, r.describe(ctx, err)
	}
	if len(body) > r.cfg.MaxBytes {
		return nil, fmt.Errorf("larger than %d bytes", r.cfg.MaxBytes)
	}
	if _, err := Parse(body); err != nil {
		return nil, err
	}
	return body, nil
}

// describe names a transport failure without the hub's resolver address.
func (r *Refresher) describe(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("timed out: no complete answer within %s", r.cfg.Timeout)
	}
	return errors.New(destination.Describe(err))
}
