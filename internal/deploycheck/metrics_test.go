// Package deploycheck_test checks that what deploy/ ships (the Grafana dashboard,
// the Prometheus alerts) names only metrics a running hub exports.
package deploycheck_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// metricName finds the metric names in a PromQL expression: the hub's own
// and the Go runtime and process collectors'.
var metricName = regexp.MustCompile(`\b(?:streaming_hub|go|process)_[a-z0-9_]+\b`)

// TestDeployedQueries_NameOnlyMetricsTheHubExports runs a dev hub, makes it
// ingest, deliver, answer a pull and run housekeeping, then reads /metrics:
// every metric the dashboard's queries and the alert rules name must be
// there.
func TestDeployedQueries_NameOnlyMetricsTheHubExports(t *testing.T) {
	exported := exportedByARunningHub(t)

	t.Run("grafana dashboard", func(t *testing.T) {
		raw, err := os.ReadFile("../../deploy/grafana/streaming-hub.json")
		if err != nil {
			t.Fatal(err)
		}
		var dash any
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("streaming-hub.json: %v", err)
		}
		var queries []string
		collectQueries(dash, &queries)
		if len(queries) < 10 {
			t.Fatalf("found only %d queries in the dashboard", len(queries))
		}
		checkNames(t, "dashboard", queries, exported)
	})
	t.Run("prometheus alerts", func(t *testing.T) {
		raw, err := os.ReadFile("../../deploy/helm/streaming-hub/files/prometheus/alerts.yaml")
		if err != nil {
			t.Fatal(err)
		}
		// Only the expr blocks: annotations may mention a metric in prose.
		var exprs []string
		var cur *strings.Builder
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "expr:"):
				cur = &strings.Builder{}
				exprs = append(exprs, "")
				cur.WriteString(strings.TrimPrefix(trimmed, "expr:"))
			case cur != nil && (strings.HasPrefix(line, "          ") || trimmed == ""):
				cur.WriteString(" " + trimmed)
			default:
				if cur != nil {
					exprs[len(exprs)-1] = cur.String()
				}
				cur = nil
			}
		}
		if len(exprs) != 7 {
			t.Fatalf("found %d alert expressions, want 7", len(exprs))
		}
		checkNames(t, "alerts", exprs, exported)
	})
}

// collectQueries gathers every "expr" of the dashboard's targets and every
// templating query.
func collectQueries(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
				*out = append(*out, s)
				continue
			}
			if k == "query" {
				if q, ok := x.(map[string]any); ok {
					if s, ok := q["query"].(string); ok {
						*out = append(*out, s)
					}
					continue
				}
			}
			collectQueries(x, out)
		}
	case []any:
		for _, x := range v {
			collectQueries(x, out)
		}
	}
}

func checkNames(t *testing.T, what string, queries []string, exported map[string]bool) {
	t.Helper()
	named := map[string]bool{}
	for _, q := range queries {
		for _, n := range metricName.FindAllString(q, -1) {
			named[n] = true
		}
	}
	var missing []string
	for n := range named {
		if !exported[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("the %s names metrics the hub does not export: %v", what, missing)
	}
	t.Logf("%s: %d metrics named, all exported", what, len(named))
}

// exportedByARunningHub starts a busy dev hub and returns the series names
// of its /metrics (histograms as _bucket, _sum and _count). A labelled
// metric appears only once it has a series, so the hub has done each thing
// the dashboard and alerts watch before it is read.
func exportedByARunningHub(t *testing.T) map[string]bool {
	h, _ := startBusyHub(t)
	var names map[string]bool
	testkit.WaitFor(t, "a housekeeping pass and a completed job in /metrics", func() bool {
		names = scrape(t, h.URL()+"/metrics")
		return names["streaming_hub_housekeeping_passes_total"] && names["streaming_hub_jobs_completed_total"]
	})
	return names
}

// startBusyHub starts a dev hub whose tenant "default" has a verified
// subscription to a local sink, and makes it ingest and deliver one event,
// reject one record and answer a pull. It returns the subscription's id.
func startBusyHub(t *testing.T) (*devhub.Hub, string) {
	h := devhub.Start(t, devhub.Options{Env: map[string]string{
		"STREAMING_HUB_HOUSEKEEPING_INTERVAL": "200ms",
	}})
	var delivered atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Lerian-Event-Type") == "transaction.posted" {
			delivered.Add(1)
		}
		w.Write(body) // echoes the verification challenge
	}))
	t.Cleanup(sink.Close)

	var sub struct{ ID string }
	if st := h.Do("POST", "/v1/subscriptions", "default", `{"name":"busy","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+sink.URL+`/hook","auth":{"type":"header","name":"X-Key","value":"k"}}}`, &sub); st != 201 {
		t.Fatalf("create subscription: %d", st)
	}
	if st := h.Do("POST", "/v1/subscriptions/"+sub.ID+"/verify", "default", "", nil); st != 200 {
		t.Fatalf("verify: %d", st)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	topic := "lerian.streaming.ledger_transaction.posted"
	bad := testkit.CERecord(topic, 0, "default", "bad-1", kgo.RecordHeader{Key: "ce-specversion", Value: []byte("0.3")})
	if err := cl.ProduceSync(ctx, testkit.CERecord(topic, 0, "default", "evt-busy-1"), bad).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	testkit.WaitFor(t, "the event to be delivered", func() bool { return delivered.Load() > 0 })
	if st := h.Do("GET", "/v1/events?limit=1", "default", "", nil); st != 200 {
		t.Fatalf("pull: %d", st)
	}
	return h, sub.ID
}

func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		names[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
