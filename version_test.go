package hub

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	git := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-02T01:02:03Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	dirty := append(append([]debug.BuildSetting(nil), git[:3]...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, c := range []struct {
		name                string
		bi                  debug.BuildInfo
		flagV, flagC, flagD string
		wantV, wantC, wantD string
	}{
		{"go install at a tag", debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}},
			"dev", "", "", "v0.9.0", "", ""},
		{"go build in a clone", debug.BuildInfo{Main: debug.Module{Version: "v0.9.1-0.20261202010203-0123456789ab"}, Settings: git},
			"dev", "", "", "v0.9.1-0.20261202010203-0123456789ab", "0123456789abcdef0123456789abcdef01234567", "2026-12-02T01:02:03Z"},
		{"uncommitted changes", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty},
			"dev", "", "", "dev", "0123456789abcdef0123456789abcdef01234567+dirty", "2026-12-02T01:02:03Z"},
		{"linker flags win", debug.BuildInfo{Main: debug.Module{Version: "v0.0.1"}, Settings: git},
			"v0.9.0", "abc", "2026-12-02T00:00:00Z", "v0.9.0", "abc", "2026-12-02T00:00:00Z"},
		{"nothing known", debug.BuildInfo{}, "dev", "", "", "dev", "", ""},
	} {
		v, cm, d := fromBuildInfo(&c.bi, c.flagV, c.flagC, c.flagD)
		if v != c.wantV || cm != c.wantC || d != c.wantD {
			t.Errorf("%s: got %q %q %q, want %q %q %q", c.name, v, cm, d, c.wantV, c.wantC, c.wantD)
		}
	}
}
