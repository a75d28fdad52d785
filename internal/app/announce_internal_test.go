package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// With the access manager on and no verify certificate, serve says at start,
// in one line naming AUTH_JWT_VERIFY_CERT, that signatures are left to the
// access manager; with a certificate (or without the access manager) it
// says nothing of the kind.
func TestAnnounce_SaysWhenJWTSignaturesAreLeftToTheAccessManager(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth config.Auth
		want bool
	}{
		{"no certificate", config.Auth{Enabled: true, Address: "http://am.example"}, true},
		{"a certificate", config.Auth{Enabled: true, Address: "http://am.example", Keys: []*rsa.PublicKey{&key.PublicKey}}, false},
		{"no access manager", config.Auth{}, false},
	} {
		var buf bytes.Buffer
		h := &Hub{Config: config.Config{Mode: config.Serve, Auth: tc.auth}, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
		h.announce(devSecretsFile{})
		var lines []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "AUTH_JWT_VERIFY_CERT") {
				lines = append(lines, l)
			}
		}
		if got := len(lines) == 1 && strings.Contains(lines[0], "left to the access manager"); got != tc.want || len(lines) > 1 {
			t.Errorf("%s: lines naming AUTH_JWT_VERIFY_CERT %q, want one: %v", tc.name, lines, tc.want)
		}
	}
}
