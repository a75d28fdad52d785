package ingest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// FuzzIngestPostgres feeds whatever the parser makes of arbitrary headers
// into the PostgreSQL driver's Ingest: the batch must always commit, since a
// batch that cannot would stop its partition forever (docs/wire-contract.md).
//
//	STREAMING_HUB_TEST_POSTGRES_URL=... go test ./internal/ingest -run '^$' -fuzz FuzzIngestPostgres -fuzztime 30s
func FuzzIngestPostgres(f *testing.F) {
	f.Add("ce-id", "evt\x00", "x-bad\x00nul", "a\xffb", "acme", []byte("{}"))
	f.Add("ce-\xff", "\x00", "ce-x", "\x01", "acme", []byte{0})
	f.Add("CE-TYPE", "studio.lerian.hub.x.y", "traceparent", "00-0-0-0", "a\x00", []byte(nil))
	s := testkit.OpenPostgres(f, store.Options{})
	if _, err := s.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		f.Fatal(err)
	}
	var offset int64
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, tenant string, value []byte) {
		offset++
		r := testkit.CERecord("lerian.streaming.fuzz", 0, tenant, "fuzz-id", kgo.RecordHeader{Key: k1, Value: []byte(v1)}, kgo.RecordHeader{Key: k2, Value: []byte(v2)})
		r.Value, r.Offset = value, offset
		p := split([]*kgo.Record{r}, 1<<20, nil, "")
		if _, err := s.Ingest(context.Background(), p.IngestParams); err != nil {
			t.Fatalf("Ingest of %q=%q %q=%q: %v", k1, v1, k2, v2, err)
		}
	})
}
