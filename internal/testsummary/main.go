// Command testsummary reads `go test -json` on stdin and prints what a
// person needs from a whole run: a line per package as it ends, then the
// output of every failure, the skips grouped by their reason, and the
// counts of passed, failed and skipped tests. It exits 1 when anything
// failed (a test, a package, a build), so a pipe into it fails as go test
// would:
//
//	go test -p 2 -count=1 -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

func main() {
	tail := flag.Int("tail", 200, "lines of each failure's output to print (0: all of it)")
	names := flag.Int("names", 6, "tests to name under each skip reason (0: all of them)")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), "Usage: go test -json ./... | go run ./internal/testsummary [flags]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	start, load0 := time.Now(), loadAverage()
	s := newSummary(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: reading go test -json: %v\n", err)
		os.Exit(1)
	}
	ok := s.report(options{tail: *tail, names: *names, elapsed: time.Since(start), load: [2]string{load0, loadAverage()}})
	if !ok {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json), with the build
// events go test adds (Action build-output and build-fail, by ImportPath).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	OutputType string
	Elapsed    float64
	ImportPath string
}

type test struct {
	pkg, name string
	output    []string
	result    string // pass, fail, skip; "" while running
	parent    bool   // it ran subtests: they are counted, not it
}

type pkg struct {
	name    string
	output  []string // the package's own lines (a panic, a timeout, TestMain)
	result  string
	elapsed float64
	tests   []*test
}

type summary struct {
	w      io.Writer
	tests  map[string]*test // package + " " + test
	order  []*test
	pkgs   map[string]*pkg
	porder []*pkg
	builds map[string][]string // import path -> its build output
	border []string
	events int
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, tests: map[string]*test{}, pkgs: map[string]*pkg{}, builds: map[string][]string{}}
}

func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name}
		s.pkgs[name] = p
		s.porder = append(s.porder, p)
	}
	return p
}

func (s *summary) test(pkgName, name string) *test {
	key := pkgName + " " + name
	t := s.tests[key]
	if t == nil {
		t = &test{pkg: pkgName, name: name}
		s.tests[key] = t
		s.order = append(s.order, t)
		p := s.pkg(pkgName)
		p.tests = append(p.tests, t)
		// Its parent is the longest name before a '/' that ran: a
		// subtest's own name may hold slashes (t.Run(`{"source":"//x"}`)).
		for i := len(name) - 1; i > 0; i-- {
			if name[i] == '/' {
				if parent := s.tests[pkgName+" "+name[:i]]; parent != nil {
					parent.parent = true
					break
				}
			}
		}
	}
	return t
}

// read consumes the stream, printing a line per package as it ends. Lines
// that are not JSON (a tool's own message) are passed through.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(s.w, "%s\n", line)
			continue
		}
		s.events++
		s.add(e)
	}
	return sc.Err()
}

func (s *summary) add(e event) {
	switch e.Action {
	case "build-output":
		if _, seen := s.builds[e.ImportPath]; !seen {
			s.border = append(s.border, e.ImportPath)
		}
		s.builds[e.ImportPath] = append(s.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		if _, seen := s.builds[e.ImportPath]; !seen {
			s.border = append(s.border, e.ImportPath)
			s.builds[e.ImportPath] = nil
		}
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass", "fail", "skip":
			p.result, p.elapsed = e.Action, e.Elapsed
			s.packageDone(p)
		}
		return
	}
	t := s.test(e.Package, e.Test)
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "pass", "fail", "skip":
		t.result = e.Action
	}
}

// counted says whether t counts in the totals: a test without subtests,
// or one that failed while none of its subtests did.
func (s *summary) counted(t *test) bool {
	return !t.parent || (t.result == "fail" && !s.hasFailedChild(t))
}

// tally counts the tests of ts that count, by result.
func (s *summary) tally(ts []*test) (passed, failed, skipped []*test) {
	for _, t := range ts {
		if !s.counted(t) {
			continue
		}
		switch t.result {
		case "pass":
			passed = append(passed, t)
		case "fail":
			failed = append(failed, t)
		case "skip":
			skipped = append(skipped, t)
		}
	}
	return passed, failed, skipped
}

func (s *summary) packageDone(p *pkg) {
	passed, failed, skipped := s.tally(p.tests)
	c := counts(len(passed), len(failed), len(skipped))
	switch {
	case p.result == "skip" && len(p.tests) == 0:
		return // no test files: nothing to say
	case p.result == "fail" && isBuildFailure(p.output):
		fmt.Fprintf(s.w, "FAIL  %s  (build failed)\n", p.name)
	case p.result == "fail":
		fmt.Fprintf(s.w, "FAIL  %s  %.1fs  (%s)\n", p.name, p.elapsed, c)
	default:
		fmt.Fprintf(s.w, "ok    %s  %.1fs  (%s)\n", p.name, p.elapsed, c)
	}
}

func counts(passed, failed, skipped int) string {
	parts := []string{fmt.Sprintf("%d passed", passed)}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	return strings.Join(parts, ", ")
}

type options struct {
	tail, names int
	elapsed     time.Duration
	load        [2]string
}

// report prints failures, skips and counts, and says whether the run passed.
func (s *summary) report(o options) bool {
	passed, failed, skipped := s.tally(s.order)
	ok := len(failed) == 0 && s.events > 0

	// Builds that failed: their compiler output.
	for _, path := range s.border {
		ok = false
		fmt.Fprintf(s.w, "\n=== BUILD FAILED: %s\n", path)
		for _, l := range s.builds[path] {
			fmt.Fprint(s.w, l)
		}
	}
	// Failed tests (a parent whose subtests failed is not one: they carry
	// the output).
	for _, t := range failed {
		fmt.Fprintf(s.w, "\n=== FAIL: %s (%s)\n", t.name, t.pkg)
		printTail(s.w, userLines(t.output), o.tail, fmt.Sprintf("go test -count=1 -v -run '^%s$' %s", runPattern(t.name), t.pkg))
	}
	// Packages that failed outside any test (a panic, a timeout, TestMain,
	// a build): their own output. Tests still running then never ended.
	for _, p := range s.porder {
		if _, f, _ := s.tally(p.tests); p.result == "fail" && len(f) == 0 {
			ok = false
			if len(s.border) > 0 && isBuildFailure(p.output) {
				continue // said above
			}
			fmt.Fprintf(s.w, "\n=== PACKAGE FAILED: %s\n", p.name)
			printTail(s.w, userLines(p.output), o.tail, "go test -count=1 -v "+p.name)
		}
		if p.result == "" {
			ok = false
			fmt.Fprintf(s.w, "\n=== NO RESULT: %s (the stream ended before the package did)\n", p.name)
		}
	}
	var running []string
	for _, t := range s.order {
		if t.result == "" {
			running = append(running, t.name+" ("+t.pkg+")")
		}
	}
	if len(running) > 0 {
		fmt.Fprintf(s.w, "\nStill running when their package ended: %s\n", strings.Join(running, ", "))
	}

	// Skips by reason.
	if len(skipped) > 0 {
		byReason := map[string][]string{}
		var reasons []string
		for _, t := range skipped {
			r := skipReason(t.output)
			if _, seen := byReason[r]; !seen {
				reasons = append(reasons, r)
			}
			byReason[r] = append(byReason[r], t.name)
		}
		sort.SliceStable(reasons, func(i, j int) bool { return len(byReason[reasons[i]]) > len(byReason[reasons[j]]) })
		fmt.Fprintf(s.w, "\nSkipped, by reason:\n")
		for _, r := range reasons {
			ts := byReason[r]
			named := ts
			more := ""
			if o.names > 0 && len(ts) > o.names {
				named, more = ts[:o.names], fmt.Sprintf(" and %d more", len(ts)-o.names)
			}
			fmt.Fprintf(s.w, "  %4d  %s\n        %s%s\n", len(ts), r, strings.Join(named, ", "), more)
		}
	}

	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
	}
	fmt.Fprintf(s.w, "\n%s: %d passed, %d failed, %d skipped", verdict, len(passed), len(failed), len(skipped))
	if n := len(s.border); n == 1 {
		fmt.Fprint(s.w, ", 1 build failed")
	} else if n > 1 {
		fmt.Fprintf(s.w, ", %d builds failed", n)
	}
	if o.elapsed > 0 {
		fmt.Fprintf(s.w, " in %s", o.elapsed.Round(time.Second))
	}
	if o.load[0] != "" {
		fmt.Fprintf(s.w, " (load average %s at the start, %s at the end, %d CPUs)", o.load[0], o.load[1], runtime.NumCPU())
	}
	fmt.Fprintln(s.w)
	if s.events == 0 {
		fmt.Fprintln(s.w, "No test events read: give this the output of go test -json.")
	}
	return ok
}

func (s *summary) hasFailedChild(t *test) bool {
	prefix := t.name + "/"
	for _, c := range s.order {
		if c.pkg == t.pkg && c.result == "fail" && strings.HasPrefix(c.name, prefix) {
			return true
		}
	}
	return false
}

var (
	frameLine = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):)`)
	fileLine  = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)
)

// userLines drops the framing lines (=== RUN, --- PASS ...) of the
// output, keeping what the test and the code under test printed.
func userLines(out []string) []string {
	var keep []string
	for _, l := range out {
		if frameLine.MatchString(l) || l == "PASS\n" || l == "FAIL\n" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "ok  \t") {
			continue
		}
		keep = append(keep, l)
	}
	return keep
}

// skipReason is the message a test gave t.Skip: the last message it
// logged (with its continuation lines), without the file:line prefix.
func skipReason(out []string) string {
	lines := userLines(out)
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if fileLine.MatchString(lines[i]) {
			start = i
			break
		}
	}
	if start < 0 {
		return "(no reason given)"
	}
	var parts []string
	for i, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if i == 0 {
			l = strings.TrimSpace(fileLine.ReplaceAllString(l, ""))
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

func printTail(w io.Writer, lines []string, tail int, rerun string) {
	if tail > 0 && len(lines) > tail {
		fmt.Fprintf(w, "    (%d earlier lines left out; all of them: %s)\n", len(lines)-tail, rerun)
		lines = lines[len(lines)-tail:]
	}
	for _, l := range lines {
		fmt.Fprint(w, l)
		if !strings.HasSuffix(l, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// runPattern makes a test's name a -run pattern: each level anchored.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return strings.Join(parts, "$/^")
}

func isBuildFailure(out []string) bool {
	for _, l := range out {
		if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
			return true
		}
	}
	return false
}

// loadAverage is the one-minute load average, "" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}
