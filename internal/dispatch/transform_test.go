package dispatch_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// withTransform gives r's subscription the jq program src.
func (r *rig) withTransform(src string) {
	r.t.Helper()
	r.sub.Transform = src
	sub, err := r.store.UpdateSubscription(r.ctx, r.sub)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sub = sub
}

// verifyStandardWebhooks checks a request as a receiver would, with the
// Standard Webhooks algorithm written out here: HMAC-SHA256, keyed by the
// base64 after whsec_, over "<webhook-id>.<webhook-timestamp>.<body>",
// compared with each "v1,<base64>" of webhook-signature.
func verifyStandardWebhooks(t *testing.T, secret string, got received) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(got.header.Get("webhook-id") + "." + got.header.Get("webhook-timestamp") + "."))
	mac.Write(got.body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(got.header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return
		}
	}
	t.Fatalf("webhook-signature %q does not verify over the body received (%s)", got.header.Get("webhook-signature"), got.body)
}

// A subscription's transform
// (docs/filters-and-transforms.md) makes the body the
// receiver gets: JSON as application/json, a string as text/plain, and in
// both cases the signature verifies over what was received.
func TestTransform_TheReceiverGetsTheTransformedBodySigned(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.withTransform(`{kind: .type, ref: .data.id, tenant: .tenant_id, at: .time}`)
		r.publish(event("acme", "evt-1"))
		if n := r.step(); n != 1 {
			t.Fatalf("step attempted %d jobs", n)
		}
		got := r.sink.got()
		if len(got) != 1 {
			t.Fatalf("sink got %d requests", len(got))
		}
		want := `{"at":"2026-11-30T12:00:00.123456789Z","kind":"studio.lerian.transaction.posted","ref":"evt-1","tenant":"acme"}`
		if string(got[0].body) != want || got[0].header.Get("Content-Type") != "application/json" {
			t.Fatalf("received %s (%s), want %s (application/json)", got[0].body, got[0].header.Get("Content-Type"), want)
		}
		if got[0].header.Get("X-Lerian-Event-Id") != "evt-1" || got[0].header.Get("webhook-id") != "evt-1" {
			t.Fatalf("headers %v", got[0].header)
		}
		verifyStandardWebhooks(t, r.secret, got[0])

		r.withTransform(`"posted \(.data.id) for \(.tenant_id)"`)
		r.publish(event("acme", "evt-2"))
		r.step()
		got = r.sink.got()
		if len(got) != 2 || string(got[1].body) != "posted evt-2 for acme" || got[1].header.Get("Content-Type") != "text/plain" {
			t.Fatalf("received %q (%s)", got[len(got)-1].body, got[len(got)-1].header.Get("Content-Type"))
		}
		verifyStandardWebhooks(t, r.secret, got[1])
	})
}

// A program that runs past its time limit makes a failed attempt naming
// the limit; the job waits for its retry like any failure, and nothing
// reaches the receiver.
func TestTransform_AProgramOverItsTimeLimitFailsTheAttempt(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.withTransform(`def spin: spin; spin`)
		r.publish(event("acme", "evt-1"))
		r.step()
		if got := r.sink.got(); len(got) != 0 {
			t.Fatalf("sink got %d requests", len(got))
		}
		j, as := r.onlyJob()
		if j.Status != hub.JobPending || j.Attempts != 1 || len(as) != 1 {
			t.Fatalf("job %+v, attempts %+v", j, as)
		}
		const want = "transform: transform_limit: ran past its 50ms time limit"
		if as[0].Error != want || j.LastError != want || as[0].StatusCode != 0 {
			t.Fatalf("attempt error %q, job last error %q; want %q", as[0].Error, j.LastError, want)
		}
	})
}

// An attempt's duration counts its transform, the wait for a worker
// included (docs/filters-and-transforms.md#fair-workers): a program stopped
// at its 50 ms took at least those 50 ms of the attempt, although nothing
// was sent.
func TestTransform_TheAttemptsDurationCountsItsTransform(t *testing.T) {
	testkit.Long(t)
	r := newRig(t, testkit.Drivers[1], rigOptions{})
	r.withTransform(`def spin: spin; spin`)
	r.publish(event("acme", "evt-1"))
	r.step()
	_, as := r.onlyJob()
	if len(as) != 1 || !strings.HasPrefix(as[0].Error, "transform: transform_limit: ") || as[0].Duration < hub.TransformTimeout {
		t.Fatalf("attempts %+v; want one failed by its transform, lasting at least %s", as, hub.TransformTimeout)
	}
}

// A program past its memory or its time (docs/filters-and-transforms.md)
// fails its own attempts with transform_limit, each program in turn, while
// another tenant's subscription, without a transform, receives each of its
// events: the programs run in worker processes, and this process, the
// dispatcher's, goes on.
func TestTransform_ProgramsPastMemoryOrTimeFailTheirAttemptsOthersDeliver(t *testing.T) {
	testkit.Long(t)
	// The programs run in worker processes; one store driver does.
	r := newRig(t, testkit.Drivers[1], rigOptions{})
	if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "globex", Name: "Globex"}); err != nil {
		t.Fatal(err)
	}
	other := newSink(t)
	r.subscribe("globex", "sub_globex", other.URL, rigOptions{})
	for i, src := range testkit.HostileTransforms {
		sub, err := r.store.GetSubscription(r.ctx, "acme", r.sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		r.sub = sub // as the failed attempts left it
		r.withTransform(src)
		r.publish(event("acme", fmt.Sprintf("hostile-%d", i)), event("globex", fmt.Sprintf("plain-%d", i)))
		// The clock stands still: earlier failed jobs wait for their retry.
		testkit.WaitFor(t, "both events attempted", func() bool {
			r.step()
			return len(other.got()) == i+1 && r.attemptsOf("acme", r.sub.ID) == i+1
		})
		if got := other.got(); string(got[i].header.Get("X-Lerian-Event-Id")) != fmt.Sprintf("plain-%d", i) {
			t.Fatalf("globex received %s", got[i].header.Get("X-Lerian-Event-Id"))
		}
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.EventID != fmt.Sprintf("hostile-%d", i) {
				continue
			}
			_, as, err := r.store.GetJob(r.ctx, "acme", j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != hub.JobPending || len(as) != 1 || !strings.HasPrefix(as[0].Error, "transform: transform_limit: ") {
				t.Fatalf("%s: job %+v, attempts %+v; want one failed attempt naming transform_limit", src, j, as)
			}
			t.Logf("%s: %s", src, as[0].Error)
		}
	}
	if got := r.sink.got(); len(got) != 0 {
		t.Fatalf("acme's receiver got %d requests", len(got))
	}
}

// attemptsOf counts the attempts of tenant's jobs for sub.
func (r *rig) attemptsOf(tenant, sub string) int {
	n := 0
	for _, j := range r.jobsOf(tenant, sub) {
		n += j.Attempts
	}
	return n
}

// recorder is a broker destination that keeps what it is sent.
type recorder struct {
	mu   sync.Mutex
	msgs []destination.Message
}

func (rec *recorder) Send(_ context.Context, _ destination.Target, m destination.Message) destination.Result {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.msgs = append(rec.msgs, m)
	return destination.Result{}
}

func (rec *recorder) Close() error { return nil }

// A broker destination's message body is the transformed body too, with
// its content type, and its webhook-* headers sign it.
func TestTransform_BrokerMessagesCarryTheTransformedBody(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		rec := &recorder{}
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationKafka: rec})
		}})
		r.sub.Enabled = false // only the broker subscription delivers
		if _, err := r.store.UpdateSubscription(r.ctx, r.sub); err != nil {
			t.Fatal(err)
		}
		s := r.brokerSub("sub_kafka", hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"127.0.0.1:9"}, Topic: "out"}, hub.Credentials{})
		s.Transform = `{ref: .data.id}`
		if _, err := r.store.UpdateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}
		r.publish(event("acme", "evt-1"))
		r.step()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.msgs) != 1 {
			t.Fatalf("published %d messages", len(rec.msgs))
		}
		m := rec.msgs[0]
		if string(m.Body) != `{"ref":"evt-1"}` || m.ContentType != "application/json" {
			t.Fatalf("published %s (%s)", m.Body, m.ContentType)
		}
		verifyStandardWebhooks(t, r.secret, received{header: m.Headers, body: m.Body})
	})
}
