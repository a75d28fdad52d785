package transform_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

func event() transform.Input {
	return transform.Input{ID: "ev_1", Type: "studio.lerian.transaction.posted", Source: "midaz", Subject: "acc_1",
		Time: "2026-12-01T10:00:00Z", TenantID: "t1",
		Data: []byte(`{"amount": 12345678901234567890, "currency": "BRL", "tags": ["a","b"]}`), DataContentType: "application/json"}
}

// run compiles src and runs it on in. A run that is not meant to reach the
// time limit is tried again when it did: on a loaded machine (CI, -race)
// a stall of the test process alone can outlast 50 ms.
func run(t *testing.T, src string, in transform.Input) (res transform.Result, err error) {
	t.Helper()
	p, err := transform.Compile(src)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	for range 5 {
		if res, err = p.Run(context.Background(), in); !errors.Is(err, transform.ErrTimeout) {
			return res, err
		}
	}
	return res, err
}

func TestRunShapesTheBody(t *testing.T) {
	cases := []struct {
		name, src, body, contentType string
	}{
		{"object", `{kind: .type, amount: .data.amount, who: .tenant_id}`,
			`{"amount":12345678901234567890,"kind":"studio.lerian.transaction.posted","who":"t1"}`, "application/json"},
		{"every field", `[.id, .source, .subject, .time]`, `["ev_1","midaz","acc_1","2026-12-01T10:00:00Z"]`, "application/json"},
		{"string is text", `"\(.data.currency) \(.data.tags | join(","))"`, `BRL a,b`, "text/plain"},
		{"identity", `.data`, `{"amount":12345678901234567890,"currency":"BRL","tags":["a","b"]}`, "application/json"},
		{"number", `.data.tags | length`, `2`, "application/json"},
		{"null", `.nothing`, `null`, "application/json"},
		{"env is empty", `{env: env, ENV: $ENV}`, `{"ENV":{},"env":{}}`, "application/json"},
		{"first of a stream", `first(.data.tags[])`, `a`, "text/plain"},
		{"halt after one", `.data.currency, halt`, `BRL`, "text/plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := run(t, c.src, event())
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != c.body || res.ContentType != c.contentType {
				t.Fatalf("got %s (%s), want %s (%s)", res.Body, res.ContentType, c.body, c.contentType)
			}
		})
	}
}

func TestDataThatIsNotJSONIsAString(t *testing.T) {
	in := event()
	in.Data, in.DataContentType = []byte("<a>1</a>"), "application/xml"
	res, err := run(t, `{xml: .data}`, in)
	if err != nil || string(res.Body) != `{"xml":"<a>1</a>"}` {
		t.Fatalf("got %s, %v", res.Body, err)
	}
	// Declared JSON that does not parse is a string too, never an error.
	in.Data, in.DataContentType = []byte("{not json"), "application/cloudevents+json"
	res, err = run(t, `.data`, in)
	if err != nil || string(res.Body) != "{not json" || res.ContentType != "text/plain" {
		t.Fatalf("got %s (%s), %v", res.Body, res.ContentType, err)
	}
}

func TestCompileRefusals(t *testing.T) {
	cases := map[string]string{
		"syntax":     `{a: }`,
		"empty":      `   `,
		"input":      `input`,
		"inputs":     `[inputs]`,
		"import":     `import "a" as a; .`,
		"include":    `include "a"; .`,
		"unknown fn": `nope(1)`,
		"too big":    `.` + strings.Repeat(" ", hub.MaxTransformBytes),
		"control":    ".a\x00",
		"bad utf8":   ".a \xff",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := transform.Compile(src)
			if err == nil {
				t.Fatalf("Compile(%q) passed", src)
			}
			if hub.ErrorCode(err) != hub.EINVALID || !strings.HasPrefix(hub.ErrorMessage(err), "transform: ") {
				t.Fatalf("Compile(%q): %v; want an invalid error naming transform", src, err)
			}
		})
	}
	// Exactly the limit compiles; tabs and newlines are fine.
	if _, err := transform.Compile("{\n\ta: 1\n}" + strings.Repeat(" ", hub.MaxTransformBytes-10)); err != nil {
		t.Fatal(err)
	}
}

func TestRunErrorsNameTheRule(t *testing.T) {
	cases := []struct {
		name, src string
		want      error
		contains  string
	}{
		{"no output", `empty`, transform.ErrNoOutput, ""},
		{"halt", `halt`, transform.ErrNoOutput, ""},
		{"two outputs", `.data.tags[]`, transform.ErrManyOutputs, ""},
		{"program error", `error("no amount")`, nil, "no amount"},
		{"halt_error", `"stop here" | halt_error`, nil, "halt_error: stop here"},
		{"type error", `.data.tags + 1`, nil, "cannot add"},
		{"loop", `def f: f; f`, transform.ErrTimeout, ""},
		// An endless stream into an array grows: its memory limit or its
		// time limit ends it, whichever the machine's speed meets first
		// (a loaded CI machine met the memory limit); both are
		// transform_limit.
		{"endless stream", `[repeat(1)]`, transform.ErrTimeout, ""},
		// Over 1 MiB from a big event, not from a big computation: gojq's
		// string operations are slow enough under -race to meet the time
		// limit first.
		{"big string", `.data`, transform.ErrTooLarge, ""},
		{"big array", `[.data]`, transform.ErrTooLarge, ""},
		{"self-doubling", `reduce range(60) as $i ([1]; [., .])`, transform.ErrTooLarge, ""},
	}
	alsoRight := map[string]error{"endless stream": transform.ErrMemory}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			in := event()
			if strings.HasPrefix(c.name, "big ") {
				in.Data, in.DataContentType = []byte(strings.Repeat("x", 1<<20+1)), "text/plain"
			}
			_, err := run(t, c.src, in)
			if err == nil {
				t.Fatal("ran without an error")
			}
			if c.want != nil && !errors.Is(err, c.want) && (alsoRight[c.name] == nil || !errors.Is(err, alsoRight[c.name])) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "transform: ") || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("got %q, want it to name transform and %q", err, c.contains)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	}
	if !strings.Contains(transform.ErrTimeout.Error(), "50ms") || !strings.Contains(transform.ErrTooLarge.Error(), "1 MiB") {
		t.Fatalf("the limit errors name their limits: %v; %v", transform.ErrTimeout, transform.ErrTooLarge)
	}
}

func TestRunHonoursCancellation(t *testing.T) {
	p, err := transform.Compile(`def f: f; f`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Run(ctx, event()); err == nil {
		t.Fatal("a cancelled run passed")
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"": true, "application/json": true, "application/json; charset=utf-8": true,
		"application/cloudevents+json": true, "text/plain": false, "application/xml": false,
	} {
		if got := transform.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v", ct, got)
		}
	}
}
