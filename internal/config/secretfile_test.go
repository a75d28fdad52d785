package config

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeSecret(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// STREAMING_HUB_KEK_FILE, _KEK_PREVIOUS_FILE and _ADMIN_TOKEN_FILE read the
// value from a mounted file, one trailing newline ignored
// (docs/lerian-platform.md).
func TestLoad_SecretsFromFiles(t *testing.T) {
	previous := base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))
	for _, nl := range []string{"", "\n", "\r\n"} {
		e := serveEnv()
		delete(e, "STREAMING_HUB_KEK")
		delete(e, "STREAMING_HUB_ADMIN_TOKEN")
		e["STREAMING_HUB_KEK_FILE"] = writeSecret(t, "kek", kek+nl)
		e["STREAMING_HUB_KEK_PREVIOUS_FILE"] = writeSecret(t, "kek-previous", previous+nl)
		e["STREAMING_HUB_ADMIN_TOKEN_FILE"] = writeSecret(t, "admin-token", "a token from a file"+nl)
		c, err := Load(Serve, env(e))
		if err != nil {
			t.Fatalf("newline %q: %v", nl, err)
		}
		if string(c.KEK) != "0123456789abcdef0123456789abcdef" || len(c.PreviousKEKs) != 1 ||
			string(c.PreviousKEKs[0]) != "fedcba9876543210fedcba9876543210" || c.AdminToken != "a token from a file" {
			t.Fatalf("newline %q: KEK %q, previous %q, admin token %q", nl, c.KEK, c.PreviousKEKs, c.AdminToken)
		}
	}
	// Only one trailing newline is the file's end: the rest is the value.
	e := serveEnv()
	delete(e, "STREAMING_HUB_ADMIN_TOKEN")
	e["STREAMING_HUB_ADMIN_TOKEN_FILE"] = writeSecret(t, "admin-token", " padded token value \n\n")
	if c, err := Load(Serve, env(e)); err != nil || c.AdminToken != " padded token value \n" {
		t.Fatalf("admin token %q, %v", c.AdminToken, err)
	}
	// rewrap reads the same files.
	k, err := LoadKeys(env(map[string]string{
		"STREAMING_HUB_DATABASE_URL": "postgres://hub@db/hub",
		"STREAMING_HUB_KEK_FILE":     writeSecret(t, "kek", kek+"\n"),
	}))
	if err != nil || string(k.KEK) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("LoadKeys: %q, %v", k.KEK, err)
	}
	for _, name := range []string{"KEK_FILE", "KEK_PREVIOUS_FILE", "ADMIN_TOKEN_FILE"} {
		if w := Unknown([]string{Prefix + name + "=/run/secrets/x"}); len(w) != 0 {
			t.Errorf("%s is reported unknown: %v", name, w)
		}
	}
}

// A variable and its _FILE both set, a file that cannot be read, an empty
// file or a bad value in a file: one line naming the variable, never the
// file's content.
func TestLoad_SecretFileProblems(t *testing.T) {
	secret := "c2VjcmV0LWJ1dC10b28tc2hvcnQ=" // base64 of 20 bytes: too short
	missing := filepath.Join(t.TempDir(), "nope")
	short, bad := writeSecret(t, "short", secret+"\n"), writeSecret(t, "bad", "not base64!")
	cases := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"STREAMING_HUB_KEK_FILE": writeSecret(t, "kek", kek)},
			"STREAMING_HUB_KEK: and STREAMING_HUB_KEK_FILE are both set: set only one of them"},
		{map[string]string{"STREAMING_HUB_ADMIN_TOKEN_FILE": writeSecret(t, "tok", "x")},
			"STREAMING_HUB_ADMIN_TOKEN: and STREAMING_HUB_ADMIN_TOKEN_FILE are both set"},
		{map[string]string{"STREAMING_HUB_KEK_PREVIOUS": kek, "STREAMING_HUB_KEK_PREVIOUS_FILE": writeSecret(t, "p", kek)},
			"STREAMING_HUB_KEK_PREVIOUS: and STREAMING_HUB_KEK_PREVIOUS_FILE are both set"},
		{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": missing},
			fmt.Sprintf("STREAMING_HUB_KEK_FILE: cannot read %q: no such file or directory", missing)},
		{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": t.TempDir()},
			"STREAMING_HUB_KEK_FILE: cannot read "},
		{map[string]string{"STREAMING_HUB_ADMIN_TOKEN": "", "STREAMING_HUB_ADMIN_TOKEN_FILE": writeSecret(t, "empty", "\n")},
			"STREAMING_HUB_ADMIN_TOKEN_FILE: the file "},
		{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": short},
			"STREAMING_HUB_KEK_FILE: the file " + strconv.Quote(short) + ": must decode to exactly 32 bytes, got 20"},
		{map[string]string{"STREAMING_HUB_KEK_PREVIOUS_FILE": bad},
			"STREAMING_HUB_KEK_PREVIOUS_FILE: the file " + strconv.Quote(bad) + ": must be base64"},
		{map[string]string{"STREAMING_HUB_ADMIN_TOKEN": "", "STREAMING_HUB_ADMIN_TOKEN_FILE": writeSecret(t, "short-token", "short\n")},
			"STREAMING_HUB_ADMIN_TOKEN_FILE: must be at least 16 characters"},
	}
	for _, c := range cases {
		e := serveEnv()
		for k, v := range c.set {
			if v == "" {
				delete(e, k)
			} else {
				e[k] = v
			}
		}
		_, err := Load(Serve, env(e))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: error %v, want prefix %q", c.set, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans lines or reports twice: %q", c.set, err)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), kek) {
			t.Errorf("%v: error shows a secret: %q", c.set, err)
		}
	}
}
