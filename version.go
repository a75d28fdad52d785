package hub

// Version is the hub's version, stamped by the build:
//
//	go build -ldflags "-X github.com/lerianstudio/streaming-hub.Version=v1.2.3" ./cmd/streaming-hub
//
// Deliveries carry it as User-Agent: streaming-hub/<version>.
var Version = "dev"

// UserAgent is the User-Agent of every request the hub sends.
func UserAgent() string { return "streaming-hub/" + Version }
