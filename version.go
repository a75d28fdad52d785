package hub

import (
	"runtime/debug"
	"time"
)

// Version, Commit and Date describe the build: stamped by it,
//
//	go build -ldflags "-X github.com/lerianstudio/streaming-hub.Version=v1.2.3 \
//	  -X github.com/lerianstudio/streaming-hub.Commit=$(git rev-parse HEAD) \
//	  -X github.com/lerianstudio/streaming-hub.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/streaming-hub
//
// or else taken from the build information the go command records: the
// module version (`go install ...@v1.2.3`, or the version go build derives
// from the repository's tag and commit), vcs.revision and vcs.time, with
// "+dirty" on the commit when vcs.modified says the tree had changes.
// Version is "dev" and Commit and Date are empty when nothing says.
// Deliveries carry the version as User-Agent: streaming-hub/<version>.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

func init() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		Version, Commit, Date = fromBuildInfo(bi, Version, Commit, Date)
	}
}

// fromBuildInfo fills in what the linker flags left unset (version "dev",
// empty commit or date) from bi.
func fromBuildInfo(bi *debug.BuildInfo, version, commit, date string) (string, string, string) {
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	var revision, vcsTime string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit == "" && revision != "" {
		commit = revision
		if modified {
			commit += "+dirty"
		}
	}
	if date == "" && vcsTime != "" {
		// vcs.time is the commit's time, in RFC 3339: the closest to a
		// build date the build information has.
		if t, err := time.Parse(time.RFC3339, vcsTime); err == nil {
			date = t.UTC().Format(time.RFC3339)
		} else {
			date = vcsTime
		}
	}
	return version, commit, date
}

// UserAgent is the User-Agent of every request the hub sends.
func UserAgent() string { return "streaming-hub/" + Version }
