package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// A replica's figures are read from its /metrics: the series the bench
// names are the hub's own, as its handler writes them.
func TestScrape_ReadsTheHubsSeries(t *testing.T) {
	m := metrics.New()
	m.Attempts.WithLabelValues("success").Add(3)
	m.Attempts.WithLabelValues("failure").Inc()
	m.InboxEvents.Add(5)
	m.PartitionsAssigned.Set(2)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	series, err := scrape(context.Background(), http.DefaultClient, strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if c := countsOf(series); c != (counts{success: 3, failure: 1, ingested: 5, partitions: 2}) {
		t.Fatalf("counts %+v", c)
	}
}

func TestParseMetrics_LabelsWithSpacesAndTimestamps(t *testing.T) {
	got, err := parseMetrics(strings.NewReader("# HELP x y\nplain 1.5\nwith{a=\"b c\",d=\"e\"} 7 1700000000000\nbroken{\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["plain"] != 1.5 || got[`with{a="b c",d="e"}`] != 7 {
		t.Fatalf("%v", got)
	}
}

// A replica gets the bench's hub's variables, not the bench's environment's
// (the bench's hub reads none of it), with its own URL, address and the
// embedded broker; a -set variable wins over what serve is given to run as
// the dev-mode hub does.
func TestReplicaEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "STREAMING_HUB_ROLE=ingest", "OTEL_TRACES_EXPORTER=otlp", "HOME=/root"}
	vars := map[string]string{
		"STREAMING_HUB_HTTP_ADDR": "127.0.0.1:0", "STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0", "STREAMING_HUB_DATABASE_URL": "postgres://db/x?application_name=a",
		"STREAMING_HUB_KEK": "k", "STREAMING_HUB_ADMIN_TOKEN": "t", "STREAMING_HUB_DISPATCH_WORKERS": "4", "STREAMING_HUB_LOG_FORMAT": "json",
	}
	env := replicaEnv(environ, vars, "postgres://db/x?application_name=a-r2", []string{"127.0.0.1:1", "127.0.0.1:2"}, "127.0.0.1:9")
	slices.Sort(env)
	want := []string{"HOME=/root", "PATH=/bin", "STREAMING_HUB_ADMIN_TOKEN=t", "STREAMING_HUB_ALLOW_PRIVATE_SINKS=true",
		"STREAMING_HUB_DATABASE_URL=postgres://db/x?application_name=a-r2", "STREAMING_HUB_DISPATCH_WORKERS=4", "STREAMING_HUB_HTTP_ADDR=127.0.0.1:9",
		"STREAMING_HUB_KAFKA_BROKERS=127.0.0.1:1,127.0.0.1:2", "STREAMING_HUB_KEK=k", "STREAMING_HUB_LOG_FORMAT=json", "STREAMING_HUB_SHUTDOWN_TIMEOUT=10s"}
	if !slices.Equal(env, want) {
		t.Fatalf("env\n%s\nwant\n%s", strings.Join(env, "\n"), strings.Join(want, "\n"))
	}
	if got := withApp("postgres://u@h/db?search_path=s&application_name=a", "a-r3"); got != "postgres://u@h/db?application_name=a-r3&search_path=s" {
		t.Fatalf("withApp: %s", got)
	}
}
