package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func keyring(t *testing.T, current byte, previous ...byte) *envelope.Keyring {
	t.Helper()
	var prev [][]byte
	for _, p := range previous {
		prev = append(prev, bytes.Repeat([]byte{p}, 32))
	}
	k, err := envelope.NewKeyring(bytes.Repeat([]byte{current}, 32), prev...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sealed stores n subscriptions of tenant acme whose secrets ring seals.
func sealed(t *testing.T, s store.Store, ring *envelope.Keyring, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sub := storetest.NewSubscription("acme", fmt.Sprintf("sub_%04d", i))
		blob, err := ring.SealJSON(hub.SubscriptionSecrets{}, sub.SecretsAAD())
		if err != nil {
			t.Fatal(err)
		}
		sub.Secrets = blob
		if _, err := s.CreateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRewrap_MovesEveryRowUnderTheCurrentKEK: after a rotation, rewrap
// re-seals the 1,000 rows still under the old KEK; none is left under its
// id, so STREAMING_HUB_KEK_PREVIOUS can drop it, and the new KEK alone
// opens every row.
func TestRewrap_MovesEveryRowUnderTheCurrentKEK(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		s := d.Open(t, store.Options{})
		old := keyring(t, 1)
		sealed(t, s, old, 1000)
		rotated := keyring(t, 2, 1)

		before, err := app.CountSealed(ctx, s)
		if err != nil || before[old.KeyID()] != 1000 || len(before) != 1 {
			t.Fatalf("before: %v %v", before, err)
		}
		res, err := app.Rewrap(ctx, s, rotated, 100)
		if err != nil || res.Rewritten != 1000 || res.Failed != 0 {
			t.Fatalf("rewrap: %+v %v", res, err)
		}
		after, _ := app.CountSealed(ctx, s)
		if after[old.KeyID()] != 0 || after[rotated.KeyID()] != 1000 {
			t.Fatalf("after: %v, want 1000 under %s and none under %s", after, rotated.KeyID(), old.KeyID())
		}
		newOnly := keyring(t, 2)
		if err := app.CheckKEK(ctx, s, newOnly); err != nil {
			t.Fatalf("the new KEK alone: %v", err)
		}
		again, _ := app.Rewrap(ctx, s, rotated, 100)
		if again.Rewritten != 0 {
			t.Fatalf("a second rewrap rewrote %d rows", again.Rewritten)
		}
	})
}

// TestCheckKEK_AWrongKEKRefusesTheStart: a KEK that opens none of the
// stored secrets fails naming STREAMING_HUB_KEK; with the old one among the
// previous KEKs the start goes on.
func TestCheckKEK_AWrongKEKRefusesTheStart(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		s := d.Open(t, store.Options{})
		if err := app.CheckKEK(ctx, s, keyring(t, 9)); err != nil {
			t.Fatalf("empty store: %v", err)
		}
		sealed(t, s, keyring(t, 1), 3)
		err := app.CheckKEK(ctx, s, keyring(t, 2))
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Var != "KEK" || !strings.Contains(err.Error(), "STREAMING_HUB_KEK: ") {
			t.Fatalf("wrong KEK: %v", err)
		}
		if err := app.CheckKEK(ctx, s, keyring(t, 2, 1)); err != nil {
			t.Fatalf("new KEK with the old as previous: %v", err)
		}
	})
}

// TestServe_WrongKEKDoesNotStart: serve itself refuses a KEK that opens
// nothing stored, before it reports ready.
func TestServe_WrongKEKDoesNotStart(t *testing.T) {
	testkit.Long(t)
	url := testkit.PostgresURL(t)
	ctx := context.Background()
	s, err := app.OpenStore(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sealed(t, s, keyring(t, 1), 2)
	s.Close()
	cfg, err := config.Load(config.Serve, func(k string) string {
		return map[string]string{
			"STREAMING_HUB_DATABASE_URL": url, "STREAMING_HUB_ROLE": "delivery", "STREAMING_HUB_HTTP_ADDR": "127.0.0.1:0",
			"STREAMING_HUB_ADMIN_TOKEN": "an-admin-token-of-16+", "STREAMING_HUB_KEK": "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &app.Hub{Config: cfg}
	err = h.Start(ctx)
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Var != "KEK" {
		h.Shutdown(ctx)
		t.Fatalf("serve with a wrong KEK: %v", err)
	}
}

// TestStart_UnreachableDatabaseIsNamedWithoutItsPassword: the start fails
// naming STREAMING_HUB_DATABASE_URL, and the password is not in the error.
func TestStart_UnreachableDatabaseIsNamedWithoutItsPassword(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	cfg, err := config.Load(config.Serve, func(k string) string {
		return map[string]string{
			"STREAMING_HUB_DATABASE_URL": fmt.Sprintf("postgres://hub:s3cr3t-pw@127.0.0.1:%d/hub?connect_timeout=2", port),
			"STREAMING_HUB_ROLE":         "delivery", "STREAMING_HUB_HTTP_ADDR": "127.0.0.1:0",
			"STREAMING_HUB_ADMIN_TOKEN": "an-admin-token-of-16+", "STREAMING_HUB_KEK": "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &app.Hub{Config: cfg}
	err = h.Start(context.Background())
	if err == nil {
		h.Shutdown(context.Background())
		t.Fatal("started without a database")
	}
	if !strings.HasPrefix(err.Error(), "STREAMING_HUB_DATABASE_URL: ") || strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("error: %v", err)
	}
}

// startDevOn starts `streaming-hub dev` on databaseURL with env, as the
// command would; stop shuts it down (also when the test ends).
func startDevOn(t *testing.T, databaseURL string, env map[string]string) (h *app.Hub, stop func(), err error) {
	t.Helper()
	vars := map[string]string{
		"STREAMING_HUB_HTTP_ADDR": "127.0.0.1:0", "STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0",
		"STREAMING_HUB_DATABASE_URL": databaseURL,
	}
	maps.Copy(vars, env)
	cfg, err := config.Load(config.Dev, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	h = &app.Hub{Config: cfg}
	if err := h.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
			defer cancel()
			if err := h.Shutdown(ctx); err != nil {
				t.Errorf("dev shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop, nil
}

// databaseURL is a fresh, empty database of the named driver.
func databaseURL(t *testing.T, driver string) string {
	if driver == "postgres" {
		return testkit.PostgresURL(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "hub.db")
}

// TestDev_WrongKEKDoesNotStart (docs/security.md): dev checks its KEK against
// what is stored, as serve does, on both drivers: a STREAMING_HUB_KEK that
// opens none of the stored secrets fails the start naming the variable; the
// right one starts.
func TestDev_WrongKEKDoesNotStart(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		t.Setenv("XDG_CONFIG_HOME", t.TempDir())
		url := databaseURL(t, d.Name)
		ctx := context.Background()
		s, err := app.OpenStore(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		sealed(t, s, keyring(t, 1), 2)
		s.Close()

		env := func(kek byte) map[string]string {
			return map[string]string{"STREAMING_HUB_ADMIN_TOKEN": "an-admin-token-of-16+",
				"STREAMING_HUB_KEK": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{kek}, 32))}
		}
		_, _, err = startDevOn(t, url, env(2))
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Var != "KEK" || !strings.Contains(err.Error(), "opens none of the 2 stored secrets") {
			t.Fatalf("dev with a wrong KEK: %v", err)
		}
		if _, _, err := startDevOn(t, url, env(1)); err != nil {
			t.Fatalf("dev with the KEK that sealed them: %v", err)
		}
	})
}

// TestDev_ItsOwnKEKPassesItsCheck: the KEK dev generates passes the check
// on the first run and on a restart, secrets stored meanwhile; a database
// sealed under a KEK dev no longer keeps (its file deleted) fails the start
// saying where dev keeps it and what to do. On both drivers.
func TestDev_ItsOwnKEKPassesItsCheck(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		folder := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", folder)
		url := databaseURL(t, d.Name)
		file := filepath.Join(folder, "streaming-hub", "dev-secrets.json")
		if d.Name == "sqlite" {
			file = strings.TrimPrefix(url, "sqlite://") + ".secrets.json"
		}

		h, stop, err := startDevOn(t, url, nil)
		if err != nil {
			t.Fatalf("first run: %v", err)
		}
		body := `{"name":"hooks","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"http://127.0.0.1:9/hook","auth":{"type":"bearer","token":"t"}}}`
		req, _ := http.NewRequest("POST", "http://"+h.HTTPAddr()+"/v1/subscriptions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.Config.AdminToken)
		req.Header.Set("X-Tenant-Id", "default")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("create a subscription: %d", resp.StatusCode)
		}
		stop()

		_, stop, err = startDevOn(t, url, nil)
		if err != nil {
			t.Fatalf("restart with the KEK dev kept in %s: %v", file, err)
		}
		stop()

		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		_, _, err = startDevOn(t, url, nil)
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Var != "KEK" || !strings.Contains(err.Error(), "STREAMING_HUB_KEK: unset, and the KEK dev keeps in "+file+" opens none") {
			t.Fatalf("dev with a new KEK over secrets sealed by the old one: %v", err)
		}
	})
}
