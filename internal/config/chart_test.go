package config_test

import (
	"bufio"
	"encoding/base64"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

const chartValues = "../../deploy/helm/streaming-hub/values.yaml"

var (
	// "STREAMING_HUB_X (default V)" or "STREAMING_HUB_X (V)" in a comment.
	chartDefaultInComment = regexp.MustCompile(`STREAMING_HUB_([A-Z0-9_]+) \((?:default )?([^()\s]+)\)`)
	// `  NAME: ""   # V: ...` under config:, V the default of STREAMING_HUB_NAME.
	chartConfigLine = regexp.MustCompile(`^  ([A-Z0-9_]+): "" +# (\S+)`)
)

// chartDefault is one default the chart's values.yaml documents.
type chartDefault struct {
	line  int
	name  string // without the prefix
	value string
}

// documentedDefaults reads the defaults values.yaml writes in its comments.
func documentedDefaults(t *testing.T) []chartDefault {
	t.Helper()
	f, err := os.Open(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []chartDefault
	inConfig := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#") {
			inConfig = line == "config:"
		}
		if m := chartConfigLine.FindStringSubmatch(line); inConfig && m != nil {
			out = append(out, chartDefault{n, m[1], strings.TrimSuffix(m[2], ":")})
			continue
		}
		if _, comment, ok := strings.Cut(line, "#"); ok {
			for _, m := range chartDefaultInComment.FindAllStringSubmatch(comment, -1) {
				if m[2] != "required" {
					out = append(out, chartDefault{n, m[1], m[2]})
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The defaults the chart's values.yaml documents are the code's: setting a
// variable to its documented default changes nothing in what Load returns.
func TestChartValues_DocumentedDefaultsAreTheCodes(t *testing.T) {
	base := map[string]string{
		"STREAMING_HUB_DATABASE_URL":  "postgres://hub@db:5432/hub",
		"STREAMING_HUB_KEK":           base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"STREAMING_HUB_ADMIN_TOKEN":   "0123456789abcdef0123",
		"STREAMING_HUB_KAFKA_BROKERS": "kafka:9092",
	}
	load := func(name, value string) (config.Config, error) {
		return config.Load(config.Serve, func(k string) string {
			if k == config.Prefix+name {
				return value
			}
			return base[k]
		})
	}
	want, err := load("", "")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, k := range config.Known() {
		known[k] = true
	}
	// The comparison is not vacuous: a wrong default is seen.
	if got, err := load("DISPATCH_LEASE", "60s"); err != nil || reflect.DeepEqual(got, want) {
		t.Fatalf("DISPATCH_LEASE=60s: err %v, the same configuration as the default", err)
	}

	documented := documentedDefaults(t)
	if len(documented) < 30 {
		t.Fatalf("found only %d documented defaults in %s: has its format changed?", len(documented), chartValues)
	}
	seen := map[string]bool{}
	for _, d := range documented {
		seen[d.name] = true
		if !known[d.name] {
			t.Errorf("values.yaml:%d documents STREAMING_HUB_%s, which the hub does not read", d.line, d.name)
			continue
		}
		value := strings.ReplaceAll(d.value, "<env>", want.Env)
		got, err := load(d.name, value)
		if err != nil {
			t.Errorf("values.yaml:%d: STREAMING_HUB_%s=%s, its documented default, is refused: %v", d.line, d.name, value, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("values.yaml:%d documents STREAMING_HUB_%s's default as %s, but the code's differs (internal/config/defaults.go)", d.line, d.name, d.value)
		}
	}
	for _, name := range []string{"DISPATCH_LEASE", "KAFKA_SESSION_TIMEOUT", "SHUTDOWN_TIMEOUT", "DELIVERY_TIMEOUT"} {
		if !seen[name] {
			t.Errorf("values.yaml no longer documents the default of STREAMING_HUB_%s", name)
		}
	}
}
