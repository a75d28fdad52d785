package ingest_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A single-tenant hub admits its tenant's records only: any other
// ce-tenantid is rejected as tenant_not_served, kept in the rejection log,
// never stored or delivered, and the offset moves on past it.
func TestConsumer_SingleTenantRejectsOtherTenantsAsNotServed(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme", "globex") // globex is in the roster, yet not served
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		cfg.ServedTenant = "acme"
		startConsumer(t, cfg)

		testkit.Produce(t, prod,
			testkit.CERecord(topic, 0, "acme", "a-1"),
			testkit.CERecord(topic, 0, "globex", "g-1"),
			testkit.CERecord(topic, 0, "nobody", "n-1"),
			testkit.CERecord(topic, 0, "acme", "a-2"),
		)
		testkit.WaitFor(t, "offset 4 committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 4
		})
		if got := ids(inbox(t, s, "acme")); got != "[a-1#1 a-2#2]" {
			t.Errorf("acme's inbox = %s", got)
		}
		if got := inbox(t, s, "globex"); len(got) != 0 {
			t.Errorf("globex's inbox = %s", ids(got))
		}
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{})
		if err != nil || len(rej) != 2 {
			t.Fatalf("rejections = %+v, %v", rej, err)
		}
		byID := map[string]hub.Rejection{}
		for _, r := range rej {
			byID[r.CEID] = r
		}
		for id, tenant := range map[string]string{"g-1": "globex", "n-1": "nobody"} {
			r := byID[id]
			if r.Reason != hub.ReasonTenantNotServed || r.Headers["ce-tenantid"] != tenant || r.Topic != topic {
				t.Errorf("rejection of %s = %+v", id, r)
			}
		}
		if got := testutil.ToFloat64(cfg.Metrics.IngestRecords.WithLabelValues("reject", hub.ReasonTenantNotServed)); got != 2 {
			t.Errorf("ingest_records_total{verdict=reject,reason=tenant_not_served} = %v, want 2", got)
		}
	})
}
