package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
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
