// Package e2e drives the console in headless Chromium (playwright-core from
// npm, Debian's chromium) against a dev hub: the browser test of docs/console.md.
// It skips, saying why, when node, /usr/bin/chromium or the npm packages
// (npm ci in this folder) are missing; .ci/run installs them.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const chromium = "/usr/bin/chromium"

func TestConsoleInChromium(t *testing.T) {
	testkit.Long(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("browser test skipped: node is not installed (apt-get install nodejs)")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("browser test skipped: " + chromium + " is missing (apt-get install chromium)")
	}
	if _, err := os.Stat("node_modules/playwright-core"); err != nil {
		t.Skip("browser test skipped: playwright-core is missing (npm ci in internal/console/e2e)")
	}

	clock := testkit.NewClock()
	dbPath := filepath.Join(t.TempDir(), "hub.db") // seedDeliveries writes to it
	h := devhub.Start(t, devhub.Options{Now: clock.Now, Env: map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20",
		"STREAMING_HUB_DATABASE_URL": "sqlite://" + dbPath}})
	prod, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.AllowAutoTopicCreation()) // the DLQ topic is new
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)

	// The control server: what the script asks of the world (produce, move
	// the clock, heal the receiver), the URL hostile content points at
	// (never to be requested), and a page of another site with a form
	// aimed at the console.
	var evilHits atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	control := httptest.NewServer(nil)
	t.Cleanup(control.Close)
	evil := control.URL + "/evil"
	hostile := func(where string) string {
		return `<script>alert("` + where + `")</script><img src="` + evil + `/` + where + `" onerror="alert('` + where + `')">`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/evil/", func(w http.ResponseWriter, r *http.Request) { evilHits.Add(1) })
	mux.HandleFunc("GET /hits", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, evilHits.Load()) })
	mux.HandleFunc("POST /advance", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		clock.Advance(d)
	})
	mux.HandleFunc("POST /seed", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := seedDeliveries(r.Context(), dbPath, q.Get("tenant"), q.Get("subscription"), 10_000, clock.Now()); err != nil {
			http.Error(w, err.Error(), 500)
		}
	})
	mux.HandleFunc("POST /heal", func(w http.ResponseWriter, r *http.Request) { failing.Store(false) })
	mux.HandleFunc("POST /break", func(w http.ResponseWriter, r *http.Request) { failing.Store(true) })
	mux.HandleFunc("POST /produce", func(w http.ResponseWriter, r *http.Request) {
		id, tenant := r.URL.Query().Get("id"), r.URL.Query().Get("tenant")
		rec := testkit.CERecord(app.DevTopic, 0, tenant, id, kgo.RecordHeader{Key: "ce-subject", Value: []byte(hostile("subject"))})
		var payload bytes.Buffer
		enc := json.NewEncoder(&payload)
		enc.SetEscapeHTML(false) // the bytes carry the markup itself
		enc.Encode(map[string]any{"note": hostile("payload"), "link": "javascript:alert('payload-link')", "amount": "10.00"})
		rec.Value = bytes.TrimSpace(payload.Bytes())
		if err := prod.ProduceSync(r.Context(), rec).FirstErr(); err != nil {
			http.Error(w, err.Error(), 500)
		}
	})
	mux.HandleFunc("GET /crosssite", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>another site</title><form method="post" action="%s"><input type="hidden" name="name" value="x"><button id="go" type="submit">go</button></form>`,
			strings.ReplaceAll(r.URL.Query().Get("target"), `"`, ""))
	})
	control.Config.Handler = mux

	// The tenant's destination: challenges echoed; events whose id starts
	// with fail- answered 500 until healed; every body hostile.
	var mu sync.Mutex
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		var probe struct{ Challenge string }
		if json.Unmarshal(buf.Bytes(), &probe) == nil && probe.Challenge != "" {
			w.Write([]byte(probe.Challenge))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.Header.Get("ce-id"), "fail-") && failing.Load() {
			w.WriteHeader(500)
		}
		w.Write([]byte(hostile("response")))
	}))
	t.Cleanup(receiver.Close)

	// Another tenant with a subscription the portal session must not see.
	if st := h.Do("POST", "/v1/tenants", "", `{"id":"globex"}`, nil); st != 201 {
		t.Fatalf("create globex: %d", st)
	}
	var other struct{ ID string }
	if st := h.Do("POST", "/v1/subscriptions", "globex", `{"name":"globex-secret-hooks","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+receiver.URL+`"}}`, &other); st != 201 {
		t.Fatalf("globex subscription: %d", st)
	}

	// A record a producer quarantined on its DLQ topic, for the operator's
	// producer DLQ page: acme's, with hostile text in a header and the
	// value. The hub's DLQ consumer keeps it (docs/lerian-platform.md); the
	// script waits for it.
	dlq := testkit.CERecord(app.DevTopic+".dlq", 0, "acme", "dlq-e2e-1",
		kgo.RecordHeader{Key: "x-lerian-dlq-source-topic", Value: []byte(app.DevTopic)},
		kgo.RecordHeader{Key: "x-lerian-dlq-source-partition", Value: []byte("0")},
		kgo.RecordHeader{Key: "x-lerian-dlq-source-offset", Value: []byte("7")},
		kgo.RecordHeader{Key: "x-lerian-dlq-error-message", Value: []byte(hostile("dlq-header"))})
	dlq.Value = []byte(`{"note":"` + strings.ReplaceAll(hostile("dlq-value"), `"`, `\"`) + `"}`)
	if err := prod.ProduceSync(context.Background(), dlq).FirstErr(); err != nil {
		t.Fatalf("produce the DLQ record: %v", err)
	}

	shots, err := filepath.Abs("screenshots")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(shots)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", shots)
	ctx, cancel := context.WithTimeout(context.Background(), 5*testkit.Patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "console.e2e.js")
	cmd.Env = append(os.Environ(),
		"HUB_URL="+h.URL(), "ADMIN_TOKEN="+h.Config.AdminToken, "CONTROL_URL="+control.URL,
		"RECEIVER_URL="+receiver.URL, "OTHER_SUBSCRIPTION="+other.ID, "EVIL_URL="+evil,
		"CHROMIUM="+chromium, "SCREENSHOTS="+shots)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("browser script:\n%s", out.String())
	if err != nil {
		t.Fatalf("browser script failed: %v", err)
	}
	if n := evilHits.Load(); n != 0 {
		t.Fatalf("hostile content made %d requests to its URL", n)
	}
}
