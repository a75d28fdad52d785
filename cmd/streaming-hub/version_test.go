package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A binary built from a git clone says which commit it is: the version and
// date the linker flags set (as the Containerfile's build does), the commit
// from the build information the go command records (vcs.revision).
func TestVersion_BuiltFromGit_NamesVersionAndCommit(t *testing.T) {
	testkit.Long(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git clone (or no git): %v", err)
	}
	commit := strings.TrimSpace(string(head))
	bin := filepath.Join(t.TempDir(), "streaming-hub")
	const pkg = "github.com/lerianstudio/streaming-hub"
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin,
		"-ldflags", "-X "+pkg+".Version=v9.8.7 -X "+pkg+".Date=2026-12-02T01:02:03Z", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	got := string(out)
	for _, want := range []string{"streaming-hub v9.8.7 (", "commit " + commit, "built 2026-12-02T01:02:03Z", "go1."} {
		if !strings.Contains(got, want) {
			t.Errorf("--version printed %q: no %q", got, want)
		}
	}
}
