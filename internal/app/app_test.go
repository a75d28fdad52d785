package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// startDev runs a dev-mode hub on free ports with its database in a temp
// dir, as `streaming-hub dev` would, and captures its banner.
func startDev(t *testing.T, env map[string]string) (*app.Hub, *bytes.Buffer) {
	t.Helper()
	out := &bytes.Buffer{}
	return devhub.Start(t, devhub.Options{Env: env, Out: out}).Hub, out
}

func get(t *testing.T, h *app.Hub, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+h.HTTPAddr()+path, nil)
	req.Header.Set("Authorization", "Bearer "+h.Config.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// kcat produces one record with the given headers, as the README does.
func kcat(t *testing.T, broker, value string, headers ...string) {
	t.Helper()
	args := []string{"-P", "-b", broker, "-t", app.DevTopic}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	cmd := exec.Command("kcat", args...)
	cmd.Stdin = strings.NewReader(value + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
}

func TestDev_KcatEventIsAcceptedAndMalformedOneIsListedAsRejected(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (apt-get install kcat; .ci/run installs it)")
	}
	h, out := startDev(t, nil)
	for _, want := range []string{"kcat -P -b " + h.KafkaAddrs()[0], "Admin token    " + h.Config.AdminToken, "Tenant         default"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dev banner lacks %q:\n%s", want, out)
		}
	}
	broker := h.KafkaAddrs()[0]
	kcat(t, broker, `{"amount":"10.00"}`,
		"ce-specversion=1.0", "ce-id=evt-1", "ce-source=//midaz/ledger", "ce-type=studio.lerian.transaction.posted",
		"ce-time=2026-11-30T12:00:00Z", "ce-tenantid=default", "ce-schemaversion=1.0.0", "content-type=application/json")
	kcat(t, broker, `{}`, "ce-specversion=0.3", "ce-id=bad-1")

	testkit.WaitFor(t, "the accepted event in /metrics", func() bool {
		return strings.Contains(get(t, h, "/metrics"), `streaming_hub_ingest_records_total{reason="accepted",verdict="accept"} 1`)
	})
	var rej struct {
		Data []struct {
			CEID    string `json:"ce_id"`
			Reason  string
			Headers map[string]string
		}
	}
	testkit.WaitFor(t, "the rejection", func() bool {
		json.Unmarshal([]byte(get(t, h, "/v1/admin/rejections")), &rej)
		return len(rej.Data) == 1
	})
	if r := rej.Data[0]; r.CEID != "bad-1" || r.Headers["ce-specversion"] != "0.3" {
		t.Fatalf("rejection = %+v", r)
	}
	if !strings.Contains(get(t, h, "/metrics"), `streaming_hub_ingest_records_total{reason="ce-specversion must be 1.0",verdict="reject"} 1`) {
		t.Fatal("reject not counted by reason")
	}
}

func TestDev_SecretsAreKeptBesideTheSQLiteFileAcrossRestartsUnlessGiven(t *testing.T) {
	cwd, config := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("XDG_CONFIG_HOME", config)
	dir := t.TempDir()
	db := "sqlite://" + filepath.Join(dir, "hub.db")
	file := filepath.Join(dir, "hub.db.secrets.json")

	h1, out1 := startDev(t, map[string]string{"STREAMING_HUB_DATABASE_URL": db})
	token, kek := h1.Config.AdminToken, h1.Config.KEK
	if !strings.HasPrefix(token, "dev_") || len(kek) != 32 {
		t.Fatalf("generated token %q, kek %d bytes", token, len(kek))
	}
	if want := "Secrets        generated and kept in " + file; !strings.Contains(out1.String(), want) {
		t.Fatalf("first start: banner lacks %q:\n%s", want, out1)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file beside the database: %v, %v", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	h1.Shutdown(ctx)

	h2, out2 := startDev(t, map[string]string{"STREAMING_HUB_DATABASE_URL": db})
	if h2.Config.AdminToken != token || !bytes.Equal(h2.Config.KEK, kek) {
		t.Fatal("restart generated new secrets: secrets stored under the old KEK would be lost")
	}
	if want := "Secrets        reused from " + file; !strings.Contains(out2.String(), want) || strings.Contains(out2.String(), "generated") {
		t.Fatalf("restart: banner lacks %q or says generated:\n%s", want, out2)
	}
	h2.Shutdown(ctx)

	h3, _ := startDev(t, map[string]string{"STREAMING_HUB_DATABASE_URL": db, "STREAMING_HUB_ADMIN_TOKEN": "mine-mine-mine-mine"})
	if h3.Config.AdminToken != "mine-mine-mine-mine" || !bytes.Equal(h3.Config.KEK, kek) {
		t.Fatal("the environment's admin token was not used, or the kept KEK was not")
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "mine-mine") || !strings.Contains(string(b), token) {
		t.Fatalf("the environment's token was written, or the kept one lost:\n%s", b)
	}
	for _, d := range []string{cwd, config} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Fatalf("dev on SQLite wrote %s in %s", entries[0].Name(), d)
		}
	}
}

func TestDev_TenantDefaultIsSeeded(t *testing.T) {
	h, _ := startDev(t, nil)
	if _, err := h.Store.GetTenant(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
}

func TestDev_ReadyzFailsWhileKafkaIsUnreachable(t *testing.T) {
	h, _ := startDev(t, nil)
	h.Broker.Close()
	testkit.WaitFor(t, "/readyz to answer 503 naming kafka", func() bool {
		resp, err := http.Get("http://" + h.HTTPAddr() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 503 && strings.Contains(string(b), `"kafka":"kafka unreachable`) && strings.Contains(string(b), `"store":"ok"`)
	})
}

func TestDev_ReadyzFailsWhileTheStoreIsUnreachable(t *testing.T) {
	h, _ := startDev(t, nil)
	h.Store.Close()
	resp, err := http.Get("http://" + h.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"store":`) || strings.Contains(string(b), `"store":"ok"`) {
		t.Fatalf("readyz = %d %s", resp.StatusCode, b)
	}
}

// Each role runs only its part, and /readyz checks only what that part
// needs: a delivery replica has no Kafka to wait for.
func TestRoles_RunTheirPartAndReadyzChecksWhatTheyNeed(t *testing.T) {
	readyz := func(h *app.Hub) (int, map[string]string) {
		resp, err := http.Get("http://" + h.HTTPAddr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Checks map[string]string }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Checks
	}
	delivery, _ := startDev(t, map[string]string{"STREAMING_HUB_ROLE": "delivery"})
	if delivery.Consumer != nil || delivery.Broker != nil || delivery.Dispatcher == nil || delivery.Housekeeper == nil {
		t.Fatalf("delivery role: consumer %v, broker %v, dispatcher %v", delivery.Consumer != nil, delivery.Broker != nil, delivery.Dispatcher != nil)
	}
	if st, checks := readyz(delivery); st != 200 || checks["store"] != "ok" || checks["results"] != "ok" || len(checks) != 2 {
		t.Fatalf("delivery readyz = %d %v, want the store and the delivery results written", st, checks)
	}
	ingest, _ := startDev(t, map[string]string{"STREAMING_HUB_ROLE": "ingest"})
	if ingest.Consumer == nil || ingest.Dispatcher != nil {
		t.Fatalf("ingest role: consumer %v, dispatcher %v", ingest.Consumer != nil, ingest.Dispatcher != nil)
	}
	if st, checks := readyz(ingest); st != 200 || checks["store"] != "ok" || checks["kafka"] != "ok" {
		t.Fatalf("ingest readyz = %d %v, want store and kafka", st, checks)
	}
}

// serve logs JSON: one object per line, for log pipelines.
func TestNewLogger_JSONInServe(t *testing.T) {
	var buf bytes.Buffer
	log := app.NewLogger(config.Config{Mode: config.Serve, LogFormat: "json"}, &buf)
	log.Info("started", "role", "all")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "started" || rec["role"] != "all" {
		t.Fatalf("log line %q: %v", buf.String(), err)
	}
}
