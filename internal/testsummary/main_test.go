package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func run(t *testing.T, fixture string, o options) (string, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(f); err != nil {
		t.Fatal(err)
	}
	ok := s.report(o)
	return out.String(), ok
}

// A run with failures: each failure's output once (a parent of failed
// subtests is not repeated), the build's compiler output, the skips with
// their reasons, the counts of tests without subtests, and a FAIL.
func TestReport_FailuresSkipsAndCounts(t *testing.T) {
	out, ok := run(t, "mixed.json", options{tail: 200, names: 6})
	if ok {
		t.Fatalf("a run with failures reported as passed:\n%s", out)
	}
	for _, want := range []string{
		"FAIL  jt/b  (build failed)\n",
		"FAIL  jt/a  0.5s  (3 passed, 2 failed, 3 skipped)\n",
		"=== BUILD FAILED: jt/b [jt/b.test]\n# jt/b [jt/b.test]\nb/b_test.go:3:33: undefined: undefined\n",
		"=== FAIL: TestFail (jt/a)\n    a_test.go:5: some context\n    a_test.go:5: boom\n",
		"=== FAIL: TestSubFail/postgres (jt/a)\n    a_test.go:7: want 3 attempts, got 4\n",
		"     1  STREAMING_HUB_TEST_POSTGRES_URL is not set\n        TestSkip\n",
		"     1  no chromium\n        TestSub/x\n",
		"     1  no chromium: install it with apt-get install chromium\n        TestMultiLineSkip\n",
		"\nFAIL: 3 passed, 2 failed, 3 skipped, 1 build failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=== FAIL: TestSubFail (jt/a)") || strings.Contains(out, "=== RUN") || strings.Contains(out, "--- FAIL") {
		t.Errorf("framing lines or a parent's failure repeated:\n%s", out)
	}
}

func TestReport_APassingRunSaysPassWithItsSkipReasons(t *testing.T) {
	out, ok := run(t, "pass.json", options{})
	want := "ok    jt/c  0.5s  (1 passed, 1 skipped)\n\nSkipped, by reason:\n" +
		"     1  STREAMING_HUB_TEST_POSTGRES_URL is not set: the PostgreSQL tests skip\n        TestSkipDB\n\nPASS: 1 passed, 0 failed, 1 skipped\n"
	if !ok || out != want {
		t.Fatalf("ok=%v, got\n%s\nwant\n%s", ok, out, want)
	}
}

// Nothing read is not a pass: a go test that could not start prints no
// events, and the run must not look green.
func TestReport_NoEventsIsAFailure(t *testing.T) {
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader("go: cannot find main module\n")); err != nil {
		t.Fatal(err)
	}
	if s.report(options{}) {
		t.Fatalf("passed with no events:\n%s", out.String())
	}
	if !strings.HasPrefix(out.String(), "go: cannot find main module\n") || !strings.Contains(out.String(), "No test events read") {
		t.Fatalf("got\n%s", out.String())
	}
}

// A package that panicked (or timed out) outside a test fails the run and
// shows its own output; a stream cut short leaves a package unfinished,
// which fails too.
func TestReport_APackageFailingOutsideATestAndACutStream(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"p","Output":"\trunning tests:\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t600.1s\n"}
{"Action":"fail","Package":"p","Elapsed":600.1}
{"Action":"start","Package":"q"}
{"Action":"run","Package":"q","Test":"TestA"}
`
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if s.report(options{}) {
		t.Fatalf("passed:\n%s", out.String())
	}
	for _, want := range []string{"=== PACKAGE FAILED: p\npanic: test timed out after 10m0s\n\trunning tests:\n",
		"=== NO RESULT: q", "Still running when their package ended: TestHang (p), TestA (q)", "FAIL: 0 passed, 0 failed, 0 skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReport_ALongFailureShowsItsTailAndHowToSeeAll(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"Action":"run","Package":"p","Test":"TestLoud/postgres"}` + "\n")
	for i := range 500 {
		b.WriteString(`{"Action":"output","Package":"p","Test":"TestLoud/postgres","Output":"    x_test.go:1: line ` + strings.Repeat("x", i%3) + `\n"}` + "\n")
	}
	b.WriteString(`{"Action":"fail","Package":"p","Test":"TestLoud/postgres"}` + "\n" + `{"Action":"fail","Package":"p","Test":"TestLoud"}` + "\n" + `{"Action":"fail","Package":"p"}` + "\n")
	var out strings.Builder
	s := newSummary(&out)
	s.read(strings.NewReader(b.String()))
	s.report(options{tail: 10})
	if !strings.Contains(out.String(), "(490 earlier lines left out; all of them: go test -count=1 -v -run '^TestLoud$/^postgres$' p)") ||
		strings.Count(out.String(), "x_test.go:1: line") != 10 {
		t.Fatalf("got\n%s", out.String())
	}
}

// A subtest whose name holds slashes is its parent's child, not a test of
// its own that never ended.
func TestReport_SubtestNamesWithSlashes(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestFilters"}
{"Action":"run","Package":"p","Test":"TestFilters/{\"source\":\"//midaz/ledger\"}"}
{"Action":"pass","Package":"p","Test":"TestFilters/{\"source\":\"//midaz/ledger\"}"}
{"Action":"run","Package":"p","Test":"TestFilters/plain"}
{"Action":"pass","Package":"p","Test":"TestFilters/plain"}
{"Action":"pass","Package":"p","Test":"TestFilters"}
{"Action":"pass","Package":"p","Elapsed":0.1}
`
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if !s.report(options{}) || strings.Contains(out.String(), "Still running") || !strings.Contains(out.String(), "PASS: 2 passed, 0 failed, 0 skipped") {
		t.Fatalf("got\n%s", out.String())
	}
}

func TestSkipReason(t *testing.T) {
	for _, c := range []struct {
		out  []string
		want string
	}{
		{[]string{"=== RUN   TestX\n", "    x_test.go:9: long test: skipped under -short (the full run has it)\n", "--- SKIP: TestX (0.00s)\n"},
			"long test: skipped under -short (the full run has it)"},
		{[]string{"=== RUN   TestX\n", "    x_test.go:3: seeded 3 rows\n", "    db.go:55: no database\n", "--- SKIP: TestX (0.00s)\n"}, "no database"},
		{[]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}, "(no reason given)"},
	} {
		if got := skipReason(c.out); got != c.want {
			t.Errorf("skipReason(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

// The pipe the README and .ci/run use: the program exits 1 on a failure,
// 0 on a pass.
func TestMain_ExitsOneWhenARunFailed(t *testing.T) {
	testkit.Long(t) // it builds the command
	bin := filepath.Join(t.TempDir(), "testsummary")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for fixture, wantCode := range map[string]int{"mixed.json": 1, "pass.json": 0} {
		f, _ := os.Open(filepath.Join("testdata", fixture))
		cmd := exec.Command(bin)
		cmd.Stdin = f
		out, _ := cmd.CombinedOutput()
		f.Close()
		if code := cmd.ProcessState.ExitCode(); code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s", fixture, code, wantCode, out)
		}
	}
}
