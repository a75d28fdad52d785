package hub

import "runtime/debug"

// Version is the hub's version: stamped by the build,
//
//	go build -ldflags "-X github.com/lerianstudio/streaming-hub.Version=v1.2.3" ./cmd/streaming-hub
//
// or else the module version `go install ...@v1.2.3` records, or "dev".
// Deliveries carry it as User-Agent: streaming-hub/<version>.
var Version = "dev"

func init() {
	if Version != "dev" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		Version = bi.Main.Version
	}
}

// UserAgent is the User-Agent of every request the hub sends.
func UserAgent() string { return "streaming-hub/" + Version }
