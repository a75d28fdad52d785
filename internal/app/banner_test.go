package app

import (
	"strings"
	"testing"
)

func TestRedactURL_NeverShowsAPassword(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://hub:s3cret@db:5432/hub?sslmode=disable":       "postgres://hub:xxxxx@db:5432/hub?sslmode=disable",
		"postgresql://hub@db/hub?password=s3cret&sslmode=require": "postgresql://hub@db/hub?password=xxxxx&sslmode=require",
		"postgres://hub@db/hub":                                   "postgres://hub@db/hub",
		"sqlite://./streaming-hub.db":                             "sqlite://./streaming-hub.db",
		"postgres://hub:s3cret@db:bad-port/hub":                   "",
	} {
		got := redactURL(raw)
		if strings.Contains(got, "s3cret") || (want != "" && got != want) {
			t.Errorf("redactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// The banner's produce command pastes as it is: the path the hub was
// started by, else the name on the PATH (and never go run's build path).
func TestProgram_TheNameTheBannerPrints(t *testing.T) {
	for arg0, want := range map[string]string{
		"./streaming-hub":                          "./streaming-hub",
		"/usr/local/bin/streaming-hub":             "/usr/local/bin/streaming-hub",
		"streaming-hub":                            "streaming-hub",
		"/tmp/go-build2731/b001/exe/streaming-hub": "streaming-hub",
	} {
		if got := program(arg0); got != want {
			t.Errorf("program(%q) = %q, want %q", arg0, got, want)
		}
	}
}
