package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A KEK decodes to exactly 32 bytes, wherever it comes from, or the hub
// refuses to start naming where it came from; a file of megabytes is
// refused without being read whole (docs/security.md#the-kek).
func TestLoad_AKEKIsExactly32BytesReadWithinABound(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	huge := filepath.Join(t.TempDir(), "huge")
	if err := os.WriteFile(huge, make([]byte, 37<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{31, 33, 48, 64} {
		file := writeSecret(t, "kek", b64(n))
		for _, c := range []struct {
			set  map[string]string
			want string
		}{
			{map[string]string{"STREAMING_HUB_KEK": b64(n)}, "STREAMING_HUB_KEK: must decode to exactly 32 bytes, got " + strconv.Itoa(n)},
			{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": file},
				"STREAMING_HUB_KEK_FILE: the file " + strconv.Quote(file) + ": must decode to exactly 32 bytes, got " + strconv.Itoa(n)},
			{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_SOURCE": "file", "STREAMING_HUB_KEK_REF": file},
				"STREAMING_HUB_KEK_REF: the file " + strconv.Quote(file) + " (STREAMING_HUB_KEK_SOURCE=file, STREAMING_HUB_KEK_REF): must decode to exactly 32 bytes, got " + strconv.Itoa(n)},
			{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_REF": "STREAMING_HUB_DEV_KEK", "STREAMING_HUB_DEV_KEK": b64(n)},
				"STREAMING_HUB_KEK_REF: STREAMING_HUB_DEV_KEK (named by STREAMING_HUB_KEK_REF): must decode to exactly 32 bytes, got " + strconv.Itoa(n)},
		} {
			e := serveEnv()
			for k, v := range c.set {
				if v == "" {
					delete(e, k)
				} else {
					e[k] = v
				}
			}
			if _, err := Load(Serve, env(e)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%d bytes, %v: got %v\nwant %s", n, c.set, err, c.want)
			}
		}
	}
	for _, c := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": huge},
			"STREAMING_HUB_KEK_FILE: cannot read " + strconv.Quote(huge) + ": larger than 64 KiB"},
		{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_SOURCE": "file", "STREAMING_HUB_KEK_REF": huge},
			"STREAMING_HUB_KEK_REF: cannot read the file " + strconv.Quote(huge)},
		{map[string]string{"STREAMING_HUB_KEK": strings.Repeat("A", 4096)}, "STREAMING_HUB_KEK: must decode to exactly 32 bytes, got a value of 4096 characters"},
		{map[string]string{"STREAMING_HUB_KEK_PREVIOUS": b64(65)}, "STREAMING_HUB_KEK_PREVIOUS: must decode to 32 to 64 bytes, got 65"},
	} {
		e := serveEnv()
		for k, v := range c.set {
			if v == "" {
				delete(e, k)
			} else {
				e[k] = v
			}
		}
		start := time.Now()
		if _, err := Load(Serve, env(e)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: got %v\nwant %s", c.set, err, c.want)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("%v: took %s", c.set, time.Since(start))
		}
	}
	// A previous KEK may be a longer key taken before, to be rewrapped.
	e := serveEnv()
	e["STREAMING_HUB_KEK_PREVIOUS"] = b64(48)
	if c, err := Load(Serve, env(e)); err != nil || len(c.PreviousKEKs) != 1 || len(c.PreviousKEKs[0]) != 48 {
		t.Fatalf("a 48-byte previous KEK: %v", err)
	}
}

// A KEK file its group or others may read is a warning at start naming
// the file; with ENV=production the hub refuses to start
// (docs/security.md#the-kek).
func TestLoad_AKEKFileOthersMayReadIsAWarningRefusedInProduction(t *testing.T) {
	loose := func(name, content string, mode os.FileMode) string {
		p := writeSecret(t, name, content)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o444} {
		file := loose("kek", kek, mode)
		for _, c := range []struct {
			set  map[string]string
			name string
		}{
			{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_FILE": file}, "STREAMING_HUB_KEK_FILE"},
			{map[string]string{"STREAMING_HUB_KEK": "", "STREAMING_HUB_KEK_SOURCE": "file", "STREAMING_HUB_KEK_REF": file}, "STREAMING_HUB_KEK_REF"},
			{map[string]string{"STREAMING_HUB_KEK_PREVIOUS_FILE": file}, "STREAMING_HUB_KEK_PREVIOUS_FILE"},
		} {
			e := serveEnv()
			for k, v := range c.set {
				if v == "" {
					delete(e, k)
				} else {
					e[k] = v
				}
			}
			if _, err := Load(Serve, env(e)); err != nil {
				t.Fatalf("mode %04o, %v: %v", mode, c.set, err)
			}
			ws := Warnings(Serve, env(e))
			want := c.name + ": the file " + strconv.Quote(file) + " holding the KEK is readable by its group or others (mode " + "0" + strconv.FormatUint(uint64(mode), 8) + ")"
			if len(ws) != 1 || !strings.HasPrefix(ws[0], want) {
				t.Errorf("mode %04o, %v: warnings %q\nwant one starting %s", mode, c.set, ws, want)
			}
			e["STREAMING_HUB_ENV"] = "production"
			_, err := Load(Serve, env(e))
			if err == nil || !strings.Contains(err.Error(), want+": ENV=production refuses it") {
				t.Errorf("mode %04o, %v, production: %v", mode, c.set, err)
			}
		}
	}
	// Readable by its owner alone: nothing to say.
	e := serveEnv()
	delete(e, "STREAMING_HUB_KEK")
	e["STREAMING_HUB_KEK_FILE"] = loose("kek", kek, 0o400)
	if _, err := Load(Serve, env(e)); err != nil {
		t.Fatal(err)
	}
	if ws := Warnings(Serve, env(e)); len(ws) != 0 {
		t.Fatalf("warnings %q", ws)
	}
	// rewrap too refuses it in production.
	keys := map[string]string{"STREAMING_HUB_DATABASE_URL": "postgres://hub@db/hub", "STREAMING_HUB_KEK_FILE": loose("kek", kek, 0o644), "STREAMING_HUB_ENV": "production"}
	if _, err := LoadKeys(env(keys)); err == nil || !strings.Contains(err.Error(), "ENV=production refuses it") {
		t.Fatalf("LoadKeys: %v", err)
	}
}
