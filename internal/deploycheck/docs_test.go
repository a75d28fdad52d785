package deploycheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocs_PagesShortAndLinksResolve keeps the docs readable top to bottom:
// no docs/*.md page passes 600 lines, and every relative markdown link in
// README.md and docs/*.md names a file that exists and, with a #anchor, a
// heading of that file (GitHub's anchor rules).
func TestDocs_PagesShortAndLinksResolve(t *testing.T) {
	const root = "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(raw), "\n"); n > 600 {
			t.Errorf("%s has %d lines, more than 600: split it", rel(root, p), n)
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchorCache := map[string]map[string]bool{}
	for _, p := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripFences(string(raw)), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := p
				if file != "" {
					dest = filepath.Join(filepath.Dir(p), file)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d links %s: no such file", rel(root, p), i+1, target)
					continue
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if anchorCache[dest] == nil {
					anchorCache[dest] = anchors(t, dest)
				}
				if !anchorCache[dest][anchor] {
					t.Errorf("%s:%d links %s: no heading with that anchor", rel(root, p), i+1, target)
				}
			}
		}
	}
}

func rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

// stripFences blanks the lines of fenced code blocks, keeping line numbers.
func stripFences(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// anchors returns the GitHub anchors of a markdown file's headings:
// lowercase, spaces to '-', punctuation other than '-' and '_' dropped,
// repeats suffixed -1, -2, ...
func anchors(t *testing.T, path string) map[string]bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(stripFences(string(raw)), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		if h == "" || strings.TrimLeft(l, "#") == l[len(l):] {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_':
				b.WriteRune(r)
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127 && !strings.ContainsRune("—–’‘“”…·", r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func itoa(n int) string {
	const d = "0123456789"
	if n < 10 {
		return d[n : n+1]
	}
	return itoa(n/10) + d[n%10:n%10+1]
}
