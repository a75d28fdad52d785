package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// kekSample is how many stored secrets the start check tries: enough to
// find one the KEKs open, few enough that a start stays fast.
const kekSample = 100

// CheckKEK fails the start when the current and previous KEKs open none of
// the stored secrets (docs/configuration.md): a wrong KEK must not start a
// hub whose every attempt then fails. An empty store passes.
func CheckKEK(ctx context.Context, s store.Secrets, k *envelope.Keyring) error {
	rows, err := s.ListSealed(ctx, "", kekSample)
	if err != nil {
		return fmt.Errorf("checking STREAMING_HUB_KEK against the stored secrets: %w", err)
	}
	for _, r := range rows {
		if _, err := k.Open(r.Blob, aad(r)); err == nil {
			return nil
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return &config.Error{Var: "KEK", Problem: fmt.Sprintf(
		"opens none of the %d stored secrets tried: it is not the KEK they were sealed with (add the old one to STREAMING_HUB_KEK_PREVIOUS to rotate)", len(rows))}
}

// devKEKError is CheckKEK's error when the KEK is the one dev mode keeps
// in path: the database was sealed under another KEK (given in the
// environment once, or kept in a file deleted since).
func devKEKError(err error, path string) error {
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		return err
	}
	return &config.Error{Var: "KEK", Problem: fmt.Sprintf(
		"unset, and the KEK dev keeps in %s opens none of the stored secrets: they were sealed under another KEK; set STREAMING_HUB_KEK to it, or start over with an empty database", path)}
}

func aad(r store.Sealed) []byte {
	sub := hub.Subscription{ID: r.SubscriptionID, TenantID: r.TenantID}
	return sub.SecretsAAD()
}

// RewrapResult is what streaming-hub rewrap did, and what is left.
type RewrapResult struct {
	Rewritten int            // rows re-sealed under the current KEK
	Failed    int            // rows no KEK of the ring opens
	ByKEK     map[string]int // rows per KEK id after the pass
}

// Rewrap re-seals every stored secret under the current KEK, in batches,
// and counts what each KEK id holds afterwards. A row changed meanwhile
// (an API write re-seals too) is simply left as that write made it.
func Rewrap(ctx context.Context, s store.Secrets, k *envelope.Keyring, batch int) (RewrapResult, error) {
	res := RewrapResult{ByKEK: map[string]int{}}
	after := ""
	for {
		rows, err := s.ListSealed(ctx, after, batch)
		if err != nil {
			return res, err
		}
		if len(rows) == 0 {
			return res, nil
		}
		for _, r := range rows {
			after = r.SubscriptionID
			if k.Current(r.Blob) {
				res.ByKEK[k.KeyID()]++
				continue
			}
			blob, err := k.Rewrap(r.Blob, aad(r))
			if err != nil {
				res.Failed++
				res.ByKEK[envelope.KeyIDOf(r.Blob)]++
				continue
			}
			ok, err := s.Reseal(ctx, r.SubscriptionID, r.Blob, blob)
			if err != nil {
				return res, err
			}
			if ok {
				res.Rewritten++
			}
			res.ByKEK[k.KeyID()]++
		}
	}
}

// CountSealed counts the stored secrets per KEK id: the gauge
// streaming_hub_secrets_sealed{kek_id}.
func CountSealed(ctx context.Context, s store.Secrets) (map[string]int, error) {
	out := map[string]int{}
	after := ""
	for {
		rows, err := s.ListSealed(ctx, after, 1000)
		if err != nil || len(rows) == 0 {
			return out, err
		}
		for _, r := range rows {
			after = r.SubscriptionID
			out[envelope.KeyIDOf(r.Blob)]++
		}
	}
}

// SortedKeys lists m's keys in order, for stable output.
func SortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// countSealed sets streaming_hub_secrets_sealed{kek_id}; a failure only
// leaves the gauge as it was.
func (h *Hub) countSealed(ctx context.Context) {
	counts, err := CountSealed(ctx, h.Store)
	if err != nil {
		h.Logger.Warn("counting sealed secrets failed", "err", err)
		return
	}
	h.Metrics.SecretsSealed.Reset()
	for id, n := range counts {
		h.Metrics.SecretsSealed.WithLabelValues(id).Set(float64(n))
	}
}

// recountSealed refreshes the gauge now and then, so a rewrap run by
// another process shows here too.
func (h *Hub) recountSealed(ctx context.Context) {
	t := time.NewTicker(sealedRecount)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.countSealed(ctx)
		}
	}
}

// sealedRecount is how often the gauge is refreshed.
const sealedRecount = 5 * time.Minute

// redactPassword hides the password of url wherever msg repeats it.
func redactPassword(msg, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return msg
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
