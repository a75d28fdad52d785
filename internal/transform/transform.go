// Package transform runs a subscription's jq program
// (docs/filters-and-transforms.md): it turns an event,
// {"id","type","source","subject","time","tenant_id","data"}, into the body
// a destination receives.
//
// A program is bounded: at most hub.MaxTransformBytes of source, and per
// event hub.TransformTimeout of running, hub.MaxTransformMemory of memory
// and hub.MaxTransformOutput of output. It runs in a worker process of its
// own (worker.go, pool.go), never in the hub's: one builtin call can
// allocate gigabytes, so checks inside the evaluation cannot keep the hub
// alive; a worker's limits can. It reaches nothing outside the event: env
// and $ENV are {} (no environment loader), input and inputs do not compile
// (no input iterator), and neither do import and include (no module
// loader).
//
// A program must produce exactly one value. No value (empty, or halt before
// any) is an error, and so is a second value (halt after the first stops
// the program: the first stands): wrap a stream in [...] to send an
// array. A string is sent as it is, as text/plain; any other value as its
// JSON encoding, application/json.
package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"mime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/itchyny/gojq"

	hub "github.com/lerianstudio/streaming-hub"
)

// Content types of a transformed body.
const (
	ContentTypeJSON = "application/json"
	ContentTypeText = "text/plain"
)

// Program is a compiled transform, safe for concurrent use.
type Program struct {
	src  string
	code *gojq.Code
}

// Compile checks and compiles src. Its errors are hub.EINVALID naming the
// field transform.
func Compile(src string) (*Program, error) {
	if len(src) > hub.MaxTransformBytes {
		return nil, hub.Errorf(hub.EINVALID, "transform: at most %d bytes (got %d)", hub.MaxTransformBytes, len(src))
	}
	if strings.TrimSpace(src) == "" {
		return nil, hub.Errorf(hub.EINVALID, "transform: empty program (omit transform, or send null, to deliver the event's data unchanged)")
	}
	if !plainLines(src) {
		return nil, hub.Errorf(hub.EINVALID, "transform: must be valid UTF-8 without control characters other than tab and newline")
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "transform: does not parse: %s", describe(err))
	}
	// No environment loader, no input iterator, no module loader: the
	// program sees the event and nothing else.
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "transform: does not compile: %s", describe(err))
	}
	return &Program{src: src, code: code}, nil
}

// Source is the program's text.
func (p *Program) Source() string { return p.src }

// Input is what a program sees of an event.
type Input struct {
	ID, Type, Source, Subject, Time, TenantID string
	// Data is the event's data; DataContentType says whether it is JSON
	// ("" is JSON, the hub's default).
	Data            []byte
	DataContentType string
}

// InputOf is ev as a program sees it.
func InputOf(ev hub.Event) Input {
	return Input{ID: ev.ID, Type: ev.Type, Source: ev.Source, Subject: ev.Subject, Time: ev.Time,
		TenantID: ev.TenantID, Data: ev.Data, DataContentType: ev.DataContentType}
}

// Value is the program's input: data parsed when it is JSON (numbers kept
// exact), else a string.
func (in Input) Value() map[string]any {
	return map[string]any{
		"id": in.ID, "type": in.Type, "source": in.Source, "subject": in.Subject,
		"time": in.Time, "tenant_id": in.TenantID, "data": dataValue(in.Data, in.DataContentType),
	}
}

// IsJSON reports whether a content type is JSON: "", application/json or
// any +json type.
func IsJSON(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func dataValue(data []byte, contentType string) any {
	if IsJSON(contentType) && len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			return v
		}
	}
	if len(data) == 0 {
		return nil
	}
	return string(data)
}

// Result is a transformed body.
type Result struct {
	Body        []byte
	ContentType string // ContentTypeJSON or ContentTypeText
}

// Errors of a run. Each names the limit or the rule it broke; the time
// and memory limits say transform_limit.
var (
	ErrTimeout     = fmt.Errorf("transform: transform_limit: ran past its %s time limit", hub.TransformTimeout)
	ErrMemory      = fmt.Errorf("transform: transform_limit: used more than its %d MiB memory limit", hub.MaxTransformMemory>>20)
	ErrTooLarge    = fmt.Errorf("transform: output larger than its %d byte (1 MiB) limit", hub.MaxTransformOutput)
	ErrNoOutput    = errors.New("transform: produced no output (a program must produce exactly one value)")
	ErrManyOutputs = errors.New("transform: produced more than one output (a program must produce exactly one value; wrap a stream in [...] to send an array)")
)

// Run runs p on in, within hub.TransformTimeout (or ctx's deadline, if
// sooner) and hub.MaxTransformMemory, in a worker process, and returns the
// body to send: a delivery of in's tenant (RunAs).
func (p *Program) Run(ctx context.Context, in Input) (Result, error) {
	return p.RunAs(ctx, Caller{Tenant: in.TenantID}, in)
}

// RunAs is Run on behalf of c: the wait for a worker is c's tenant's, at
// most maxWait (ErrBusy past it), behind tenants that used the workers
// less lately (fair.go).
func (p *Program) RunAs(ctx context.Context, c Caller, in Input) (Result, error) {
	return workers.run(ctx, c, p.src, in)
}

// evaluate runs code on v in this process, within ctx: what a worker does
// with a request. Only its time and output are bounded here; its memory is
// bounded by the worker's limits.
func evaluate(ctx context.Context, code *gojq.Code, v any) (res Result, err error) {
	defer func() {
		// gojq is not expected to panic; if it does, the attempt fails
		// rather than the worker.
		if r := recover(); r != nil {
			res, err = Result{}, fmt.Errorf("transform: failed: %v", r)
		}
	}()
	iter := code.RunWithContext(ctx, v)
	var out any
	n := 0
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if e, isErr := x.(error); isErr {
			if halt := (*gojq.HaltError)(nil); errors.As(e, &halt) && halt.Value() == nil {
				break // halt: the program stops; what it output stands
			}
			return Result{}, runError(ctx, e)
		}
		if n++; n > 1 {
			return Result{}, ErrManyOutputs
		}
		out = x
	}
	// gojq checks ctx before every step and answers its error as a value:
	// a run that ended without one finished in time.
	if n == 0 {
		return Result{}, ErrNoOutput
	}
	if s, ok := out.(string); ok {
		if len(s) > hub.MaxTransformOutput {
			return Result{}, ErrTooLarge
		}
		return Result{Body: []byte(s), ContentType: ContentTypeText}, nil
	}
	if size(out, hub.MaxTransformOutput+1) > hub.MaxTransformOutput {
		return Result{}, ErrTooLarge
	}
	body, err := gojq.Marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("transform: cannot encode its output: %v", err)
	}
	if len(body) > hub.MaxTransformOutput {
		return Result{}, ErrTooLarge
	}
	return Result{Body: body, ContentType: ContentTypeJSON}, nil
}

// runError names why a run stopped: its time limit, a halt, or the
// program's own error.
func runError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrMemory) {
		return ErrMemory
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("transform: cancelled")
	}
	var halt *gojq.HaltError
	if errors.As(err, &halt) {
		return fmt.Errorf("transform: halt_error: %s", describeValue(halt.Value()))
	}
	return fmt.Errorf("transform: %s", describe(err))
}

// describe is an error's message, bounded.
func describe(err error) string {
	return clip(err.Error(), 512)
}

func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return clip(s, 512)
	}
	if size(v, 513) > 512 {
		return "(a value too large to show)"
	}
	b, _ := gojq.Marshal(v)
	return clip(string(b), 512)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// size is at least the length of v's JSON encoding, counted up to limit: it
// stops as soon as it passes limit, so a value built to be huge (an array
// holding itself twice, forty times over) is measured in bounded time.
func size(v any, limit int) int {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case nil:
			n += 4
		case bool:
			n += 4
		case int:
			n += 1
		case float64:
			n += 1
		case *big.Int:
			n += len(v.Bits()) * 8
		case json.Number:
			n += len(v)
		case string:
			n += len(v) + 2
		case []any:
			n += 2
			for _, x := range v {
				n++
				if n > limit || !walk(x) {
					return false
				}
			}
		case map[string]any:
			n += 2
			for k, x := range v {
				n += len(k) + 4
				if n > limit || !walk(x) {
					return false
				}
			}
		default:
			n += 1
		}
		return n <= limit
	}
	walk(v)
	return n
}

// plainLines reports whether s is valid UTF-8 whose only control
// characters are tab, newline and carriage return: what a program may hold.
func plainLines(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// Cache keeps compiled programs by their source, so that each is compiled
// once per process, not once per event. It holds at most cacheSize
// programs, starting afresh when full. Safe for concurrent use; the zero
// value is ready.
type Cache struct {
	mu sync.Mutex
	m  map[string]*Program
}

const cacheSize = 1024

// Program compiles src, or finds it compiled.
func (c *Cache) Program(src string) (*Program, error) {
	c.mu.Lock()
	p := c.m[src]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := Compile(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[string]*Program)
	}
	c.m[src] = p
	c.mu.Unlock()
	return p, nil
}

// Apply is what a destination receives of ev under the program src: the
// event's data and content type unchanged when src is "", else the
// program's result, run as a delivery of ev's tenant. Its errors name
// transform.
func (c *Cache) Apply(ctx context.Context, src string, ev hub.Event) (body []byte, contentType string, err error) {
	return c.ApplyAs(ctx, Caller{Tenant: ev.TenantID}, src, ev)
}

// ApplyAs is Apply on behalf of caller.
func (c *Cache) ApplyAs(ctx context.Context, caller Caller, src string, ev hub.Event) (body []byte, contentType string, err error) {
	if src == "" {
		return ev.Data, ev.DataContentType, nil
	}
	p, err := c.Program(src)
	if err != nil {
		// Stored programs compiled when they were saved; a hub whose gojq
		// changed might still refuse one.
		return nil, "", fmt.Errorf("%s", hub.ErrorMessage(err))
	}
	res, err := p.RunAs(ctx, caller, InputOf(ev))
	if err != nil {
		return nil, "", err
	}
	return res.Body, res.ContentType, nil
}
