package housekeeping_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// selfSigned is a PEM self-signed client certificate valid until notAfter.
func selfSigned(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub-client"},
		NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// A client certificate that expires within 14 days emits
// hub.subscription.certificate_expiring once a day, delivered to the
// tenant's subscription to it, with a warning each check; one that
// expires later emits nothing; an expired one goes on emitting it until it
// is replaced; the check runs at most once an hour.
func TestPass_EmitsCertificateExpiringOnceADay(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		if _, err := s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		watch := storetest.NewSubscription("acme", "sub_watch")
		watch.VerificationState, watch.MaxInFlight = hub.VerificationActive, 10
		watch.EventTypes = []hub.EventTypeRef{{Type: hub.EventSubscriptionCertificateExpiring, SchemaMajor: 1}}
		if _, err := s.CreateSubscription(ctx, watch); err != nil {
			t.Fatal(err)
		}
		soonPEM := selfSigned(t, clock.Now().Add(10*24*time.Hour))
		for id, certPEM := range map[string]string{"sub_soon": soonPEM, "sub_later": selfSigned(t, clock.Now().Add(30*24*time.Hour)),
			"sub_expired": selfSigned(t, clock.Now().Add(-36*time.Hour))} {
			sub := storetest.NewSubscription("acme", id)
			sub.VerificationState = hub.VerificationActive
			sub.Destination.ClientCertificate = certPEM
			if _, err := s.CreateSubscription(ctx, sub); err != nil {
				t.Fatal(err)
			}
		}
		var logs bytes.Buffer
		cfg := newConfig(s)
		cfg.Now, cfg.Logger = clock.Now, slog.New(slog.NewTextHandler(&logs, nil))
		hk := newHousekeeper(t, cfg)
		pass := func() {
			t.Helper()
			if _, _, err := hk.Pass(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// expiring are the events of subject, in arrival order.
		expiring := func(subject string) []hub.Event {
			t.Helper()
			all, err := s.ListEvents(ctx, store.ListEventsParams{TenantID: "acme", Types: []string{hub.EventSubscriptionCertificateExpiring}, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var evs []hub.Event
			for _, ev := range all {
				if ev.Subject == subject {
					evs = append(evs, ev)
				}
			}
			return evs
		}
		warnings := func() int {
			return strings.Count(logs.String(), `level=WARN msg="client certificate expiring"`)
		}

		pass()
		evs := expiring("sub_soon")
		if len(evs) != 1 || evs[0].ID != "hub_certexp_sub_soon_20261130" {
			t.Fatalf("sub_soon's events after the first pass: %+v, want one", evs)
		}
		if evs := expiring("sub_later"); len(evs) != 0 {
			t.Fatalf("sub_later, 30 days from expiry, has %d events", len(evs))
		}
		if evs := expiring("sub_expired"); len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"expires_in_days":-2`) {
			t.Fatalf("sub_expired's events: %+v, want one with expires_in_days -2", evs)
		}
		var data map[string]any
		if err := json.Unmarshal(evs[0].Data, &data); err != nil {
			t.Fatal(err)
		}
		sum, _, _ := hub.ClientCertificateInfo(soonPEM)
		if data["subscription_id"] != "sub_soon" || data["client_certificate_sha256"] != sum || data["expires_in_days"] != float64(10) ||
			data["expires_at"] != clock.Now().Add(10*24*time.Hour).UTC().Format(time.RFC3339) {
			t.Fatalf("data %v", data)
		}
		if w := warnings(); w != 2 || !strings.Contains(logs.String(), "subscription_id=sub_soon") || strings.Contains(logs.String(), "sub_later") {
			t.Fatalf("%d warnings, want one for sub_soon and one for sub_expired:\n%s", w, logs.String())
		}
		claimed, err := s.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed) != 2 || claimed[0].Job.SubscriptionID != "sub_watch" || claimed[1].Job.SubscriptionID != "sub_watch" ||
			claimed[0].Event.EventType != hub.EventSubscriptionCertificateExpiring {
			t.Fatalf("claimed %+v, want two jobs of sub_watch", claimed)
		}

		clock.Advance(30 * time.Minute) // not an hour since the check: none
		pass()
		if w := warnings(); w != 2 {
			t.Fatalf("%d warnings half an hour later, want still 2: the check waits an hour", w)
		}
		clock.Advance(30 * time.Minute) // an hour, the same day: the check runs and adds nothing
		pass()
		if w, evs := warnings(), expiring("sub_soon"); w != 4 || len(evs) != 1 {
			t.Fatalf("an hour later: %d warnings, %d events of sub_soon; want 4 and still 1", w, len(evs))
		}
		if n, err := hk.CheckCertificates(ctx); err != nil || n != 0 {
			t.Fatalf("CheckCertificates the same day = %d, %v; want 0", n, err)
		}
		clock.Advance(24 * time.Hour) // the next day: one more
		pass()
		if evs := expiring("sub_soon"); len(evs) != 2 || evs[1].ID != "hub_certexp_sub_soon_20261201" {
			t.Fatalf("sub_soon's events the next day: %+v, want a second", evs)
		}
		if evs := expiring("sub_expired"); len(evs) != 2 {
			t.Fatalf("sub_expired's events the next day: %d, want a second until it is replaced", len(evs))
		}
	})
}
