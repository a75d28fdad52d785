package deploycheck_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideCitation is a citation of the outside document the repository once
// cited by section number. The rules it stated live in the repository's own
// docs pages now, and code, tests and texts cite those pages. The pattern is
// built from two halves so that this file does not match itself; it
// matches inside identifiers too (a test named after a section).
var outsideCitation = regexp.MustCompile(`(^|[^A-Za-z])` + "SP" + "EC" + `([^A-Za-z]|$)`)

// TestNoOutsideDocumentCitation fails on any tracked file that cites the
// outside document, naming file:line.
func TestNoOutsideDocumentCitation(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not available: cannot list the repository's files")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files failed (not a git checkout?): %v", err)
	}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || strings.Contains(name, "node_modules/") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(raw, 0) >= 0 {
			continue // binary
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 0, 64*1024), len(raw)+1)
		for line := 1; sc.Scan(); line++ {
			if outsideCitation.MatchString(sc.Text()) {
				t.Errorf("%s:%d cites the outside document; cite the docs page that states the rule: %s",
					name, line, strings.TrimSpace(sc.Text()))
			}
		}
	}
}
