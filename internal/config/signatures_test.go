package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sigSecret(fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32))
}

func TestSignatures_Defaults(t *testing.T) {
	c, err := Load(Dev, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Ingest.Signatures; len(s.Keys) != 0 || s.Require || s.MaxSkew != 0 {
		t.Fatalf("signature defaults: %+v", s)
	}
}

func TestSignatures_KeysFromTheVariableAndTheFile(t *testing.T) {
	keys := "k1@ledger:" + sigSecret(1) + ", midaz.v2@urn:lerian:midaz@x:" + sigSecret(2)
	c, err := Load(Dev, env(map[string]string{
		"STREAMING_HUB_SIGNATURE_KEYS":     keys,
		"STREAMING_HUB_REQUIRE_SIGNATURES": "true",
		"STREAMING_HUB_SIGNATURE_MAX_SKEW": "5m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Ingest.Signatures
	if len(s.Keys) != 2 || s.Keys[0].ID != "k1" || s.Keys[0].Source != "ledger" || !bytes.Equal(s.Keys[0].Secret, bytes.Repeat([]byte{1}, 32)) ||
		s.Keys[1].ID != "midaz.v2" || s.Keys[1].Source != "urn:lerian:midaz@x" || !s.Require || s.MaxSkew != 5*time.Minute {
		t.Fatalf("signatures = %+v", s)
	}

	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(keys+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c2, err := Load(Dev, env(map[string]string{"STREAMING_HUB_SIGNATURE_KEYS_FILE": path, "STREAMING_HUB_SIGNATURE_MAX_SKEW": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Ingest.Signatures.Keys) != 2 || c2.Ingest.Signatures.Keys[1].Source != "urn:lerian:midaz@x" || c2.Ingest.Signatures.MaxSkew != 0 {
		t.Fatalf("from the file: %+v", c2.Ingest.Signatures)
	}
}

func TestSignatures_BadEntriesAreNamedByPositionNeverByTheirBytes(t *testing.T) {
	good := "k1@ledger:" + sigSecret(1)
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-bytes-xx"))
	path := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(path, []byte("x"), 0o600)
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": good + ",nokid" + sigSecret(9)}, "STREAMING_HUB_SIGNATURE_KEYS: entry 2: must be <kid>@<source>:<base64 secret>"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": "K1@ledger:" + sigSecret(9)}, "STREAMING_HUB_SIGNATURE_KEYS: entry 1: the key id must match"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": good + ",k2@:" + sigSecret(9)}, "STREAMING_HUB_SIGNATURE_KEYS: entry 2: the source must be"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": good + ",k2@ledger:not!base64secretvalue"}, "STREAMING_HUB_SIGNATURE_KEYS: entry 2: the secret must be standard base64"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": "k2@ledger:" + short}, "STREAMING_HUB_SIGNATURE_KEYS: entry 1: the secret must decode to at least 32 bytes, got 16"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": good + "," + good + "x"[:0] + ",k1@other:" + sigSecret(9)}, "STREAMING_HUB_SIGNATURE_KEYS: entry 2: the key id repeats entry 1's"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": good, "STREAMING_HUB_SIGNATURE_KEYS_FILE": path}, "STREAMING_HUB_SIGNATURE_KEYS: and STREAMING_HUB_SIGNATURE_KEYS_FILE are both set"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS_FILE": path}, "STREAMING_HUB_SIGNATURE_KEYS_FILE: entry 1: must be"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_KEYS_FILE": path + ".missing"}, "STREAMING_HUB_SIGNATURE_KEYS_FILE: cannot read the file"},
		{map[string]string{"STREAMING_HUB_REQUIRE_SIGNATURES": "true"}, "STREAMING_HUB_REQUIRE_SIGNATURES: true needs keys"},
		{map[string]string{"STREAMING_HUB_SIGNATURE_MAX_SKEW": "-1s"}, "STREAMING_HUB_SIGNATURE_MAX_SKEW: must be a Go duration"},
	} {
		_, err := Load(Dev, env(c.vars))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.vars, err, c.want)
			continue
		}
		for _, secret := range []string{sigSecret(1), sigSecret(9), short, "not!base64"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error %q echoes a secret", err)
			}
		}
	}
}

// A configuration printed with %+v or %#v, logged or encoded never shows a
// signature secret.
func TestSignatures_SecretsNeverPrint(t *testing.T) {
	raw := bytes.Repeat([]byte{0xAB}, 32)
	c, err := Load(Dev, env(map[string]string{"STREAMING_HUB_SIGNATURE_KEYS": "k1@ledger:" + base64.StdEncoding.EncodeToString(raw)}))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("cfg", "signatures", c.Ingest.Signatures, "key", c.Ingest.Signatures.Keys[0].Secret)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "signatures", c.Ingest.Signatures, "key", c.Ingest.Signatures.Keys[0].Secret)
	js, _ := json.Marshal(c.Ingest)
	outs := []string{fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", c.Ingest.Signatures.Keys), fmt.Sprintf("%x", c.Ingest.Signatures.Keys[0].Secret),
		fmt.Sprintf("%s", c.Ingest.Signatures.Keys[0].Secret), logged.String(), string(js)}
	forms := []string{base64.StdEncoding.EncodeToString(raw), fmt.Sprintf("%x", raw), fmt.Sprint(raw), fmt.Sprint([]int{171, 171}), "171 171", "0xab, 0xab"}
	for _, out := range outs {
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("no [redacted] in %q", out)
		}
		for _, f := range forms {
			if strings.Contains(strings.ToLower(out), strings.ToLower(f)) {
				t.Errorf("the secret shows in %q", out)
			}
		}
	}
}
