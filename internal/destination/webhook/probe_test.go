package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

type seen struct {
	header http.Header
	body   []byte
}

// probeServer answers probes as answer says; a nil answer never answers,
// until the client gives up.
func probeServer(t *testing.T, answer func(w http.ResponseWriter, challenge string)) (string, chan seen) {
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct{ Challenge string }
		json.Unmarshal(body, &p)
		got <- seen{r.Header.Clone(), body}
		if answer == nil {
			<-r.Context().Done()
			return
		}
		answer(w, p.Challenge)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

func TestProbe_PassesOnlyWhenTheChallengeComesBack(t *testing.T) {
	secret := destination.NewSecret()
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, challenge string)
		pass   bool
		status int
		err    string
	}{
		{"echo", func(w http.ResponseWriter, c string) { w.Write([]byte(`{"challenge":"` + c + `"}`)) }, true, 200, ""},
		{"no echo", func(w http.ResponseWriter, c string) { w.Write([]byte(`ok`)) }, false, 200, "does not contain the challenge"},
		{"404", func(w http.ResponseWriter, c string) { w.WriteHeader(404); w.Write([]byte(c)) }, false, 404, "answered 404"},
		{"timeout", nil, false, 0, "timeout"}, // the destination never answers
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, got := probeServer(t, tc.answer)
			// Only a destination that never answers may time out: every
			// other answer has all the time a loaded machine needs.
			timeout := time.Minute
			if tc.answer == nil {
				timeout = 100 * time.Millisecond
			}
			r := destination.NewRegistry(timeout, map[string]destination.Driver{
				hub.DestinationWebhook: New(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))})
			target := destination.Target{Destination: hub.Destination{Type: hub.DestinationWebhook, URL: url,
				AuthType: hub.AuthBearer, Headers: map[string]string{"X-Custom": "v"}},
				Secrets: []string{secret}, Credentials: hub.Credentials{Token: "t0k"}}
			now := time.Unix(1_800_000_000, 0)
			res := r.Probe(context.Background(), target, "tnt_1", "sub_1", now)
			if res.Passed != tc.pass || res.StatusCode != tc.status || !strings.Contains(res.Error, tc.err) {
				t.Fatalf("result %+v, want passed=%v status=%d error~%q", res, tc.pass, tc.status, tc.err)
			}
			s := <-got
			var body map[string]string
			if err := json.Unmarshal(s.body, &body); err != nil || body["type"] != "hub.verification" || body["subscription_id"] != "sub_1" || len(body["challenge"]) < 16 {
				t.Fatalf("probe body %s", s.body)
			}
			h := s.header
			key, _ := destination.SecretKey(secret)
			if h.Get("X-Lerian-Event-Type") != "hub.verification" || !strings.HasPrefix(h.Get("webhook-id"), "probe_") ||
				h.Get("webhook-timestamp") != strconv.FormatInt(now.Unix(), 10) ||
				h.Get("webhook-signature") != destination.Signature(key, h.Get("webhook-id"), now.Unix(), s.body) ||
				h.Get("Authorization") != "Bearer t0k" || h.Get("X-Custom") != "v" || h.Get("Content-Type") != "application/json" ||
				h.Get("User-Agent") != "streaming-hub/"+hub.Version {
				t.Fatalf("probe headers %v", h)
			}
		})
	}
}
