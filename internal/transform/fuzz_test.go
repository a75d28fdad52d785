package transform_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// FuzzTransform compiles any program and runs it on any data: it never
// panics, never runs long, and what it answers keeps the rules (one body of
// at most 1 MiB, JSON unless it is text; errors name transform). Each run
// goes through a worker process, as in the hub: about 0.05 to 0.3 ms a
// round trip, so -fuzztime 20000x takes seconds.
func FuzzTransform(f *testing.F) {
	f.Add(`{kind: .type, amount: .data.amount}`, []byte(`{"amount": 10}`), "application/json")
	f.Add(`.data | tostring`, []byte(`<x/>`), "application/xml")
	f.Add(`.data[] | .`, []byte(`[1,2,3]`), "")
	f.Add(`def f: f; f`, []byte(`{}`), "")
	f.Add(`"a" * 5000000`, []byte(`null`), "")
	f.Add(`reduce range(50) as $i ([0]; [., .])`, []byte(`1`), "")
	f.Add(`input`, []byte(`1`), "")
	f.Add(`$ENV.HOME`, []byte(`1`), "")
	f.Add(`halt_error(1)`, []byte(`{"a":1}`), "")
	f.Add(`.data | @base64d | fromjson`, []byte(`"eyJhIjoxfQ=="`), "")
	f.Add(`"x" * 2000000000 | length`, []byte(`null`), "")
	f.Add(`[] | .[300000000] = 1`, []byte(`null`), "")
	f.Fuzz(func(t *testing.T, src string, data []byte, contentType string) {
		p, err := transform.Compile(src)
		if err != nil {
			if hub.ErrorCode(err) != hub.EINVALID || !strings.HasPrefix(hub.ErrorMessage(err), "transform: ") {
				t.Fatalf("Compile(%q): %v", src, err)
			}
			return
		}
		in := transform.Input{ID: "ev", Type: "t", Source: "s", Time: "2026-12-01T00:00:00Z", TenantID: "t1",
			Data: data, DataContentType: contentType}
		res, err := p.Run(context.Background(), in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "transform: ") {
				t.Fatalf("Run(%q): error %q does not name transform", src, err)
			}
			return
		}
		if len(res.Body) > hub.MaxTransformOutput {
			t.Fatalf("Run(%q): %d bytes out", src, len(res.Body))
		}
		switch res.ContentType {
		case transform.ContentTypeJSON:
			if !json.Valid(res.Body) {
				t.Fatalf("Run(%q): %s is not JSON", src, res.Body)
			}
		case transform.ContentTypeText:
		default:
			t.Fatalf("Run(%q): content type %q", src, res.ContentType)
		}
	})
}
