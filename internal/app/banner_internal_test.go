package app

import "testing"

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
