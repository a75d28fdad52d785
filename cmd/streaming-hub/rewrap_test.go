package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestRewrap_ReportsRowsRewrittenAndWhatEachKEKHolds runs the command on a
// SQLite file holding secrets under an old KEK.
func TestRewrap_ReportsRowsRewrittenAndWhatEachKEKHolds(t *testing.T) {
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "hub.db")
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, _ := envelope.NewKeyring(oldKey)
	s, err := app.OpenStore(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"})
	for _, id := range []string{"sub_1", "sub_2", "sub_3"} {
		sub := storetest.NewSubscription("acme", id)
		sub.Secrets, _ = old.SealJSON(hub.SubscriptionSecrets{}, sub.SecretsAAD())
		if _, err := s.CreateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b64 := base64.StdEncoding.EncodeToString
	vars := map[string]string{"STREAMING_HUB_DATABASE_URL": url, "STREAMING_HUB_KEK": b64(newKey), "STREAMING_HUB_KEK_PREVIOUS": b64(oldKey)}
	code, out, errOut := runCmd(vars, "rewrap")
	cur, _ := envelope.NewKeyring(newKey)
	if code != exitOK || !strings.Contains(out, "rewrote 3 rows under KEK "+cur.KeyID()) ||
		!strings.Contains(out, "KEK "+cur.KeyID()+" (current): 3 rows") || strings.Contains(out, old.KeyID()) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// Without the old KEK nothing would open: the missing variable is named.
	if code, _, errOut := runCmd(map[string]string{"STREAMING_HUB_DATABASE_URL": url}, "rewrap"); code != exitUsage || !strings.Contains(errOut, "STREAMING_HUB_KEK: required") {
		t.Fatalf("no KEK: exit %d %s", code, errOut)
	}
}

// rewrap reads the KEK wherever STREAMING_HUB_KEK_SOURCE and
// STREAMING_HUB_KEK_REF say: another variable (Lerian's chart), a file,
// or an AWS Secrets Manager secret (an in-process server speaking its API).
func TestRewrap_ReadsTheKEKFromEachSource(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{4}, 32)
	b64 := base64.StdEncoding.EncodeToString
	old, _ := envelope.NewKeyring(oldKey)
	cur, _ := envelope.NewKeyring(newKey)
	keyFile := filepath.Join(t.TempDir(), "kek")
	if err := os.WriteFile(keyFile, []byte(b64(newKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sm := testkit.NewSecretsManager(t, false)
	sm.PutString("prod/streaming-hub/kek", b64(newKey))
	sources := map[string]map[string]string{
		"env":            {"STREAMING_HUB_KEK_REF": "STREAMING_HUB_DEV_KEK", "STREAMING_HUB_DEV_KEK": b64(newKey)},
		"file":           {"STREAMING_HUB_KEK_SOURCE": "file", "STREAMING_HUB_KEK_REF": keyFile},
		"secretsmanager": {"STREAMING_HUB_KEK_SOURCE": "secretsmanager", "STREAMING_HUB_KEK_REF": "prod/streaming-hub/kek"},
	}
	for name, vars := range sources {
		t.Run(name, func(t *testing.T) {
			url := "sqlite://" + filepath.Join(t.TempDir(), "hub.db")
			s, err := app.OpenStore(ctx, url, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"})
			sub := storetest.NewSubscription("acme", "sub_1")
			sub.Secrets, _ = old.SealJSON(hub.SubscriptionSecrets{}, sub.SecretsAAD())
			if _, err := s.CreateSubscription(ctx, sub); err != nil {
				t.Fatal(err)
			}
			s.Close()
			vars["STREAMING_HUB_DATABASE_URL"] = url
			vars["STREAMING_HUB_KEK_PREVIOUS"] = b64(oldKey)
			code, out, errOut := runCmd(vars, "rewrap")
			if code != exitOK || !strings.Contains(out, "rewrote 1 rows under KEK "+cur.KeyID()) {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
		})
	}
	// A secret that is not there: the variable and the secret are named.
	code, _, errOut := runCmd(map[string]string{"STREAMING_HUB_DATABASE_URL": "sqlite://" + filepath.Join(t.TempDir(), "x.db"),
		"STREAMING_HUB_KEK_SOURCE": "secretsmanager", "STREAMING_HUB_KEK_REF": "nope"}, "rewrap")
	if code == exitOK || !strings.Contains(errOut, `STREAMING_HUB_KEK_REF: cannot read the Secrets Manager secret "nope"`) {
		t.Fatalf("missing secret: exit %d %s", code, errOut)
	}
}
