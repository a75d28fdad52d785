package manifest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/manifest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// ledgerManifest is lib-streaming's manifest (version 1.0.0) as Midaz's
// ledger serves it at GET /v1/streaming/manifest.
func ledgerManifest(schema string) string {
	return `{
  "version": "1.0.0",
  "publisher": {"serviceName": "ledger", "source": "//midaz/ledger", "version": "3.4.0"},
  "topic": "lerian.streaming.ledger",
  "events": [
    {"key": "transaction.posted", "resourceType": "transaction", "eventType": "posted", "schemaVersion": "` + schema + `",
     "dataContentType": "application/json", "dataSchema": "https://schemas.lerian.studio/transaction.posted.json",
     "systemEvent": false, "description": "A transaction was posted", "class": "domain"},
    {"key": "ledger.heartbeat", "resourceType": "ledger", "eventType": "heartbeat", "schemaVersion": "1.0.0",
     "dataContentType": "application/json", "dataSchema": "", "systemEvent": true, "description": "liveness", "class": "system"}
  ]
}`
}

type producer struct {
	mu   sync.Mutex
	body string
	slow time.Duration
}

func (p *producer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	body, slow := p.body, p.slow
	p.mu.Unlock()
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(body))
}

func (p *producer) set(body string, slow time.Duration) {
	p.mu.Lock()
	p.body, p.slow = body, slow
	p.mu.Unlock()
}

func TestRefresh_KeepsTheLastGoodCopyWhateverGoesWrong(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		p := &producer{body: ledgerManifest("1.2.0")}
		srv := httptest.NewServer(p)
		defer srv.Close()
		url := srv.URL + "/v1/streaming/manifest"
		m := metrics.New()
		cfg := config.Defaults(config.Serve).Manifests
		cfg.Sources, cfg.Timeout, cfg.MaxBytes = []string{url}, 300*time.Millisecond, 4096
		r, err := manifest.New(manifest.Config{Manifests: cfg, Store: s, Metrics: m, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		refresh := func() store.ManifestSource {
			t.Helper()
			if ran, err := r.Refresh(ctx); err != nil || !ran {
				t.Fatalf("Refresh = %v, %v", ran, err)
			}
			ms, err := s.ListManifests(ctx)
			if err != nil || len(ms) != 1 {
				t.Fatalf("ListManifests = %+v, %v", ms, err)
			}
			return ms[0]
		}
		catalogMajors := func() []int {
			ms, _ := s.ListManifests(ctx)
			for _, e := range manifest.Catalog(nil, ms) {
				if e.Type == "ledger.heartbeat" {
					t.Fatal("a system event is subscribable")
				}
				if e.Type == "transaction.posted" {
					return e.SchemaMajors
				}
			}
			return nil
		}

		src := refresh()
		if src.LastError != "" || src.LastSuccessAt == nil || catalogMajors()[0] != 1 {
			t.Fatalf("first fetch %+v, majors %v", src, catalogMajors())
		}
		// Changed: the new copy replaces the old.
		p.set(ledgerManifest("2.0.0"), 0)
		clock.Advance(5 * time.Minute)
		if src = refresh(); src.LastError != "" || !src.LastSuccessAt.Equal(clock.Now()) || catalogMajors()[0] != 2 {
			t.Fatalf("changed: %+v, majors %v", src, catalogMajors())
		}
		good := string(src.Manifest)
		for _, c := range []struct {
			name, body string
			slow       time.Duration
			want       string
		}{
			{"malformed", `{"version": "1.0.0", "events": [`, 0, "not a manifest"},
			{"wrong version", strings.Replace(ledgerManifest("1.0.0"), `"version": "1.0.0"`, `"version": "2.0.0"`, 1), 0, "version"},
			{"bad schema version", ledgerManifest("one"), 0, "schemaVersion"},
			{"too large", `{"version":"1.0.0","x":"` + strings.Repeat("a", 5000) + `"}`, 0, "larger than 4096 bytes"},
			{"slow", ledgerManifest("3.0.0"), 2 * time.Second, "timed out"},
		} {
			p.set(c.body, c.slow)
			clock.Advance(5 * time.Minute)
			src = refresh()
			if !strings.Contains(src.LastError, c.want) || string(src.Manifest) != good || catalogMajors()[0] != 2 || !src.LastFetchedAt.Equal(clock.Now()) {
				t.Fatalf("%s: last_error %q (want %q), copy kept %v, majors %v", c.name, src.LastError, c.want, string(src.Manifest) == good, catalogMajors())
			}
		}
		srv.Close() // unreachable
		src = refresh()
		if src.LastError == "" || string(src.Manifest) != good {
			t.Fatalf("unreachable: %+v", src)
		}
		if ok, bad := testutil.ToFloat64(m.ManifestRefresh.WithLabelValues("ok")), testutil.ToFloat64(m.ManifestRefresh.WithLabelValues("error")); ok != 2 || bad != 6 {
			t.Fatalf("refresh_total ok=%v error=%v, want 2 and 6", ok, bad)
		}
	})
}

func TestRefresh_OneReplicaAtATime(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		s := d.Open(t, store.Options{})
		cfg := config.Defaults(config.Serve).Manifests
		cfg.Sources = []string{"http://127.0.0.1:1/never"}
		r, err := manifest.New(manifest.Config{Manifests: cfg, Store: s, Metrics: metrics.New()})
		if err != nil {
			t.Fatal(err)
		}
		// Another holder of the lock: this replica skips.
		ran, err := s.Exclusive(ctx, manifest.LockName, func(ctx context.Context) error {
			ran, err := r.Refresh(ctx)
			if ran || err != nil {
				t.Errorf("Refresh while the lock is held = %v, %v; want skipped", ran, err)
			}
			return nil
		})
		if !ran || err != nil {
			t.Fatal(ran, err)
		}
	})
}
