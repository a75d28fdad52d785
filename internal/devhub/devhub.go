// Package devhub starts a whole dev-mode hub inside a test: embedded Kafka,
// ingest, dispatch and the HTTP API on free ports, its database in a temp
// dir unless the test names one. Tests across packages (app, examples) use
// it to run the hub exactly as `streaming-hub dev` does.
package devhub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Options tune the hub; every field is optional.
type Options struct {
	// Env overrides STREAMING_HUB_* variables (full names).
	Env map[string]string
	// Now is the hub's clock (nil: time.Now).
	Now func() time.Time
	// Out receives dev mode's banner (nil: none).
	Out io.Writer
	// Telemetry is the OpenTelemetry export (zero: none).
	Telemetry telemetry.Config
}

// Hub is a started dev-mode hub, shut down when the test ends.
type Hub struct {
	*app.Hub
	t testing.TB
}

// Start runs the hub and returns once /readyz answers 200.
func Start(t testing.TB, o Options) *Hub {
	t.Helper()
	vars := map[string]string{
		"STREAMING_HUB_HTTP_ADDR":      "127.0.0.1:0",
		"STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0",
		"STREAMING_HUB_DATABASE_URL":   "sqlite://" + filepath.Join(t.TempDir(), "hub.db"),
	}
	for k, v := range o.Env {
		vars[k] = v
	}
	if !strings.HasPrefix(vars["STREAMING_HUB_DATABASE_URL"], "sqlite://") {
		// Dev mode keeps generated secrets beside an SQLite file, or else in
		// the user's config folder: outside the test. Give them.
		if vars["STREAMING_HUB_KEK"] == "" {
			key := make([]byte, 32)
			rand.Read(key)
			vars["STREAMING_HUB_KEK"] = base64.StdEncoding.EncodeToString(key)
		}
		if vars["STREAMING_HUB_ADMIN_TOKEN"] == "" {
			vars["STREAMING_HUB_ADMIN_TOKEN"] = "devhub-admin-token-" + t.Name()
		}
	}
	cfg, err := config.Load(config.Dev, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	// The hub's log is shown when the test fails: what it did is the first
	// thing to read then.
	logs := &testkit.Buffer{}
	h := &app.Hub{Config: cfg, Now: o.Now, Out: o.Out, Telemetry: o.Telemetry,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the hub's log:\n%s", logs.String())
		}
	})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("hub shutdown: %v", err)
		}
	})
	d := &Hub{Hub: h, t: t}
	testkit.WaitFor(t, "/readyz to answer 200", func() bool {
		resp, err := http.Get(d.URL() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return d
}

// URL is the base URL of the hub's API.
func (h *Hub) URL() string { return "http://" + h.HTTPAddr() }

// Do calls the API with the admin token, acting on tenant when it is not
// empty, decodes a JSON answer into out when out is not nil, and returns
// the status code.
func (h *Hub) Do(method, path, tenant, body string, out any) int {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL()+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Config.AdminToken)
	if tenant != "" {
		req.Header.Set("X-Tenant-Id", tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			h.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}
