package storetest

import (
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testCertificates: the subscriptions with a client certificate are listed
// across tenants (enabled, undeleted ones only), and EmitOperational
// writes a certificate-expiring event once a day: the same id again writes
// nothing, the next day's does, and each is matched like any event.
func testCertificates(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "acme", "")
	e.tenant(t, "globex", "")
	e.operational(t, "acme", "sub_watch", hub.EventSubscriptionCertificateExpiring)

	withCert := func(tenant, id string, enabled bool) hub.Subscription {
		t.Helper()
		s := NewSubscription(tenant, id)
		s.VerificationState, s.Enabled = hub.VerificationActive, enabled
		s.Destination.ClientCertificate = "-----BEGIN CERTIFICATE-----\n" + id + "\n-----END CERTIFICATE-----\n"
		out, err := e.store.CreateSubscription(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := withCert("acme", "sub_a", true)
	withCert("globex", "sub_b", true)
	withCert("acme", "sub_off", false)
	withCert("acme", "sub_gone", true)
	if err := e.store.DeleteSubscription(e.ctx, "acme", "sub_gone"); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.ListClientCertificateSubscriptions(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.TenantID+"/"+s.ID)
	}
	if len(got) != 2 || ids[0] != "acme/sub_a" || ids[1] != "globex/sub_b" || got[0].Destination.ClientCertificate != a.Destination.ClientCertificate {
		t.Fatalf("ListClientCertificateSubscriptions = %v, want acme/sub_a and globex/sub_b with their certificates", ids)
	}

	notAfter := e.clock.Now().Add(10 * 24 * time.Hour)
	emit := func() int {
		t.Helper()
		n, err := e.store.EmitOperational(e.ctx, []hub.Event{store.CertificateExpiringEvent(a, "ab12", notAfter, e.clock.Now())})
		if err != nil {
			t.Fatalf("EmitOperational: %v", err)
		}
		return n
	}
	if n := emit(); n != 1 {
		t.Fatalf("first emit wrote %d, want 1", n)
	}
	e.clock.Advance(time.Hour)
	if n := emit(); n != 0 {
		t.Fatalf("the same day again wrote %d, want 0", n)
	}
	if evs := e.hubEvents(t, "acme", hub.EventSubscriptionCertificateExpiring); len(evs) != 1 {
		t.Fatalf("%d events after two emits the same day, want 1", len(evs))
	}
	e.clock.Advance(24 * time.Hour)
	if n := emit(); n != 1 {
		t.Fatalf("the next day wrote %d, want 1", n)
	}
	evs := e.hubEvents(t, "acme", hub.EventSubscriptionCertificateExpiring)
	if len(evs) != 2 || evs[0].ID != "hub_certexp_sub_a_20261130" || evs[1].ID != "hub_certexp_sub_a_20261201" {
		t.Fatalf("events %+v, want one on each day", evs)
	}
	ev := evs[0]
	if ev.Source != hub.OperationalSource || ev.Type != "studio.lerian.hub.subscription.certificate_expiring" || ev.Subject != "sub_a" || ev.SchemaMajor != 1 {
		t.Fatalf("event %+v", ev)
	}
	d := dataOf(t, ev)
	if d["subscription_id"] != "sub_a" || d["name"] != a.Name || d["client_certificate_sha256"] != "ab12" ||
		d["expires_at"] != notAfter.UTC().Format(time.RFC3339Nano) || d["expires_in_days"] != float64(10) {
		t.Fatalf("data %v", d)
	}
	if d := dataOf(t, evs[1]); d["expires_in_days"] != float64(8) {
		t.Fatalf("the next day's expires_in_days = %v, want 8 (25 hours later)", d["expires_in_days"])
	}
	claimed := e.claim(t, 10)
	if len(claimed) != 2 || claimed[0].Job.SubscriptionID != "sub_watch" || claimed[1].Job.SubscriptionID != "sub_watch" {
		t.Fatalf("claimed %+v, want sub_watch's two jobs", claimed)
	}
}
