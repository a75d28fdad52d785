package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// STREAMING_HUB_KEK_SOURCE=secretsmanager: the KEK is GetSecretValue of
// the secret KEK_REF names, through the AWS SDK's default credential chain
// and region, as the environment sets them (the service-specific endpoint
// variable and the general one both work). A SecretString is base64, a
// SecretBinary the key's bytes. Errors name the variable and the secret,
// never the key.
func TestResolveKEK_FromSecretsManager(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	b64 := base64.StdEncoding.EncodeToString(key)
	for _, general := range []bool{false, true} {
		sm := testkit.NewSecretsManager(t, general)
		sm.PutString("prod/streaming-hub/kek", b64)
		sm.PutBinary("prod/streaming-hub/kek-binary", key)
		sm.PutString("short", base64.StdEncoding.EncodeToString([]byte("short")))
		ctx := context.Background()
		for _, name := range []string{"prod/streaming-hub/kek", "prod/streaming-hub/kek-binary"} {
			got, err := app.ResolveKEK(ctx, config.KEKSource{Source: config.KEKFromSecretsManager, Ref: name})
			if err != nil || !bytes.Equal(got, key) {
				t.Fatalf("general endpoint %v, %s: %v", general, name, err)
			}
		}
		auth := sm.Auth()
		if len(auth) != 2 || !strings.Contains(auth[0], "Credential=AKIDSTREAMINGHUBTEST/") || !strings.Contains(auth[0], "/us-east-2/secretsmanager/") {
			t.Fatalf("the requests were not signed with the environment's credentials and region: %q", auth)
		}

		_, err := app.ResolveKEK(ctx, config.KEKSource{Source: config.KEKFromSecretsManager, Ref: "missing"})
		if err == nil || !strings.HasPrefix(err.Error(), `STREAMING_HUB_KEK_REF: cannot read the Secrets Manager secret "missing"`) ||
			!strings.Contains(err.Error(), "ResourceNotFoundException") {
			t.Fatalf("a missing secret: %v", err)
		}
		_, err = app.ResolveKEK(ctx, config.KEKSource{Source: config.KEKFromSecretsManager, Ref: "short"})
		var cerr *config.Error
		if !errors.As(err, &cerr) || !strings.Contains(err.Error(), "must decode to exactly 32 bytes, got 5") || strings.Contains(err.Error(), "c2hvcnQ") {
			t.Fatalf("a short key: %v", err)
		}
	}
	// Other sources were read by Load: nothing to fetch.
	if got, err := app.ResolveKEK(context.Background(), config.KEKSource{Source: config.KEKFromEnv}); got != nil || err != nil {
		t.Fatalf("env: %v %v", got, err)
	}
}

// A KEK from Secrets Manager is exactly 32 bytes, and its answer is read
// within a bound: a 50 MiB value, or a key of the wrong size, refuses the
// start naming the secret (docs/security.md#the-kek).
func TestResolveKEK_ExactlyThirtyTwoBytesReadWithinABound(t *testing.T) {
	sm := testkit.NewSecretsManager(t, false)
	sm.PutString("huge", strings.Repeat("A", 50<<20))
	sm.PutBinary("long", bytes.Repeat([]byte{7}, 48))
	sm.PutString("long-string", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 33)))
	ctx := context.Background()
	for name, want := range map[string]string{
		"huge":        `STREAMING_HUB_KEK_REF: the Secrets Manager secret "huge" (STREAMING_HUB_KEK_SOURCE=secretsmanager, STREAMING_HUB_KEK_REF): its answer is larger than 256 KiB`,
		"long":        `STREAMING_HUB_KEK_REF: the Secrets Manager secret "long" (STREAMING_HUB_KEK_SOURCE=secretsmanager, STREAMING_HUB_KEK_REF): its SecretBinary must be exactly 32 bytes, got 48`,
		"long-string": `STREAMING_HUB_KEK_REF: the Secrets Manager secret "long-string" (STREAMING_HUB_KEK_SOURCE=secretsmanager, STREAMING_HUB_KEK_REF): its SecretString must decode to exactly 32 bytes, got 33`,
	} {
		_, err := app.ResolveKEK(ctx, config.KEKSource{Source: config.KEKFromSecretsManager, Ref: name})
		var cerr *config.Error
		if !errors.As(err, &cerr) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v\nwant %s", name, err, want)
		}
	}
}
