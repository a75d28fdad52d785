package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

type probeFailure struct {
	Error struct {
		Code    string
		Message string
		Probe   struct {
			StatusCode int `json:"status_code"`
			Error      string
		}
	}
}

func TestVerify_ProbeOutcomes(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		cases := []struct {
			name   string
			answer func(w http.ResponseWriter, challenge string)
			status int // probe's HTTP status in a 422; 0 for none
			err    string
		}{
			{"echo", func(w http.ResponseWriter, c string) { w.Write([]byte(`{"challenge":"` + c + `"}`)) }, 200, ""},
			{"no echo", func(w http.ResponseWriter, c string) { w.Write([]byte(`{"ok":true}`)) }, 200, "does not contain the challenge"},
			{"404", func(w http.ResponseWriter, c string) { w.WriteHeader(404); w.Write([]byte(c)) }, 404, "destination answered 404"},
			{"timeout", nil, 0, "timeout"}, // the destination never answers
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				// Only a destination that never answers may time out.
				o := apiOptions{allowPrivate: true}
				if tc.answer == nil {
					o.probeTimeout = 200 * time.Millisecond
				}
				h := newHubAPI(t, d, o)
				acme := h.tenant("acme")
				rc := newReceiver(t)
				rc.setAnswer(tc.answer)
				id, secret := acme.subscription(rc.URL)
				status, _, body := acme.do("POST", "/v1/subscriptions/"+id+"/verify", "")

				req, probeBody := rc.last()
				if req == nil {
					t.Fatal("the destination got no probe")
				}
				key, _ := destination.SecretKey(secret)
				ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
				var p map[string]string
				json.Unmarshal(probeBody, &p)
				if req.Header.Get("webhook-signature") != destination.Signature(key, req.Header.Get("webhook-id"), ts, probeBody) ||
					ts != h.clock.Now().Unix() || req.Header.Get("X-Lerian-Event-Type") != "hub.verification" ||
					p["type"] != "hub.verification" || p["subscription_id"] != id || p["challenge"] == "" {
					t.Fatalf("probe headers %v body %s", req.Header, probeBody)
				}

				var sub struct {
					VerificationState string `json:"verification_state"`
					Enabled           bool
				}
				acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
				if tc.err == "" {
					if status != 200 || sub.VerificationState != "active" || !sub.Enabled {
						t.Fatalf("passing probe: %d %s; now %+v", status, body, sub)
					}
					return
				}
				var f probeFailure
				json.Unmarshal(body, &f)
				if status != 422 || f.Error.Code != "probe_failed" || f.Error.Probe.StatusCode != tc.status || !strings.Contains(f.Error.Probe.Error, tc.err) {
					t.Fatalf("failing probe: %d %s", status, body)
				}
				if sub.VerificationState != "failed" {
					t.Fatalf("after a failing probe: %+v", sub)
				}
			})
		}
	})
}

func TestVerify_FailedReprobeDisablesAnActiveOneAndAPassReenablesInPlace(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		id, _ := acme.subscription(rc.URL)
		acme.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, nil)

		rc.setAnswer(func(w http.ResponseWriter, _ string) { w.WriteHeader(503) })
		if status, _, body := acme.do("POST", "/v1/subscriptions/"+id+"/verify", "{}"); status != 422 {
			t.Fatalf("failing re-probe = %d %s", status, body)
		}
		var sub map[string]any
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
		if sub["verification_state"] != "active" || sub["enabled"] != false ||
			!strings.HasPrefix(sub["disabled_reason"].(string), "verification probe failed: destination answered 503") {
			t.Fatalf("after a failed re-probe: %v", sub)
		}

		// An auto-disabled subscription with an open failure span: a
		// passing probe re-enables it in place and clears the span.
		s, _ := h.store.GetSubscription(context.Background(), "acme", id)
		s.FailureSpan = &hub.FailureSpan{First: h.clock.Now().Add(-130 * time.Hour), Last: h.clock.Now().Add(-time.Hour)}
		s.DisabledReason = "auto-disabled: failing for 130h"
		if _, err := h.store.UpdateSubscription(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		rc.setAnswer(func(w http.ResponseWriter, c string) { w.Write([]byte(c)) })
		acme.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, &sub)
		if sub["id"] != id || sub["verification_state"] != "active" || sub["enabled"] != true ||
			sub["disabled_reason"] != nil || sub["disabled_at"] != nil || sub["failure_span"] != nil {
			t.Fatalf("after recovery: %v", sub)
		}
	})
}

func TestRotateSecret_BothSignDuringTheOverlapThenOnlyTheNewOne(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		id, oldSecret := acme.subscription(rc.URL)

		var rot struct {
			SigningSecret string    `json:"signing_secret"`
			Expires       time.Time `json:"previous_secret_expires_at"`
		}
		acme.json("POST", "/v1/subscriptions/"+id+"/rotate-secret", `{"overlap":"1h"}`, 200, &rot)
		if rot.SigningSecret == oldSecret || !strings.HasPrefix(rot.SigningSecret, "whsec_") || !rot.Expires.Equal(h.clock.Now().Add(time.Hour)) {
			t.Fatalf("rotation = %+v", rot)
		}
		signatures := func() []string {
			acme.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, nil)
			req, body := rc.last()
			ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
			var want []string
			for _, s := range []string{rot.SigningSecret, oldSecret} {
				key, _ := destination.SecretKey(s)
				want = append(want, destination.Signature(key, req.Header.Get("webhook-id"), ts, body))
			}
			got := strings.Split(req.Header.Get("webhook-signature"), " ")
			for i, g := range got {
				if g != want[i] {
					t.Fatalf("signature %d = %s, want the %s secret's", i, g, []string{"new", "old"}[i])
				}
			}
			return got
		}
		if n := len(signatures()); n != 2 {
			t.Fatalf("inside the overlap: %d signatures, want 2 (new, old)", n)
		}
		h.clock.Advance(time.Hour + time.Second)
		if n := len(signatures()); n != 1 {
			t.Fatalf("after the overlap: %d signatures, want only the new one", n)
		}

		acme.json("POST", "/v1/subscriptions/"+id+"/rotate-secret", "", 200, &rot)
		if !rot.Expires.Equal(h.clock.Now().Add(24 * time.Hour)) {
			t.Fatalf("default overlap: previous expires %v, want 24h from now", rot.Expires)
		}
		for _, bad := range []string{`{"overlap":"169h"}`, `{"overlap":"-1s"}`, `{"overlap":"soon"}`, `{"overlap":1}`} {
			status, _, body := acme.do("POST", "/v1/subscriptions/"+id+"/rotate-secret", bad)
			wantError(t, status, body, 400, "invalid")
		}
	})
}

// lyingDNS answers a private address for a public-looking name.
type lyingDNS struct{ addr netip.Addr }

func (l lyingDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{l.addr}, nil
}

func TestSSRF_PrivateDestinationsAreRefusedAtCreateAndAtDialTime(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{resolver: lyingDNS{netip.MustParseAddr("127.0.0.1")}})
		acme := h.tenant("acme")
		rc := newReceiver(t) // listens on 127.0.0.1
		for _, u := range []string{"https://127.0.0.1/", "https://10.0.0.8/", "https://[fd00:ec2::254]/", "https://169.254.169.254/", "http://example.com/"} {
			status, _, body := acme.do("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"`+u+`"}}`)
			wantError(t, status, body, 400, "invalid")
		}
		// A public-looking name passes create (DNS may change), but the
		// dial refuses the private address it resolves to.
		port := mustPort(t, rc.URL)
		id, _ := acme.subscription("https://hooks.example.com:" + port + "/hook")
		status, _, body := acme.do("POST", "/v1/subscriptions/"+id+"/verify", "")
		var f probeFailure
		json.Unmarshal(body, &f)
		if status != 422 || !strings.Contains(f.Error.Probe.Error, "resolves to a private address") || strings.Contains(string(body), "127.0.0.1") {
			t.Fatalf("verify of a name resolving to loopback = %d %s", status, body)
		}
		if rc.count() != 0 {
			t.Fatalf("the private destination got %d requests", rc.count())
		}
	})
}

func mustPort(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// namesToLoopback resolves every name but those under .invalid (which
// nothing resolves) to 127.0.0.1.
type namesToLoopback struct{}

func (namesToLoopback) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".invalid") {
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestVerifyAndTest_ErrorsNameTheHostAsWrittenNeverAnAddress
// (docs/security.md#what-a-tenants-errors-reveal): verify and a test event
// say what failed naming the host the tenant wrote, never the address it
// resolved to nor the hub's resolver; the log keeps the whole error.
func TestVerifyAndTest_ErrorsNameTheHostAsWrittenNeverAnAddress(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{allowPrivate: true, resolver: namesToLoopback{}})
	acme := h.tenant("acme")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := mustPort(t, "http://"+l.Addr().String())
	l.Close() // nothing listens there now: refused

	unresolved, _ := acme.subscription("http://nowhere.invalid/hook")
	status, _, body := acme.do("POST", "/v1/subscriptions/"+unresolved+"/verify", "")
	var f probeFailure
	json.Unmarshal(body, &f)
	if status != 422 || f.Error.Probe.Error != "dns: no such host nowhere.invalid" || strings.Contains(string(body), " on ") {
		t.Fatalf("verify of a name that does not resolve = %d %s", status, body)
	}
	refused, _ := acme.subscription("http://sink.example.com:" + port + "/hook")
	var res struct{ Error *string }
	acme.json("POST", "/v1/subscriptions/"+refused+"/test", "", 200, &res)
	if res.Error == nil || *res.Error != "connect: connection refused by sink.example.com:"+port {
		t.Fatalf("test event to a refused port: %v", res.Error)
	}
	if !strings.Contains(h.logs.String(), "127.0.0.1:"+port) {
		t.Fatalf("the log lacks the whole error (the address dialed):\n%s", h.logs.String())
	}
}
