package dispatch_test

import (
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestAttempt_ErrorNamesTheHostAsWrittenNeverTheResolver: an attempt to a
// name that does not resolve stores "dns: no such host <name>", without
// the hub's resolver that Go's error names ("lookup x.invalid on
// 10.0.0.53:53: no such host").
func TestAttempt_ErrorNamesTheHostAsWrittenNeverTheResolver(t *testing.T) {
	r := newRig(t, testkit.Drivers[1], rigOptions{retrySchedule: []string{"1h"}})
	r.sub.Destination.URL = "http://nowhere.invalid/hook"
	if _, err := r.store.UpdateSubscription(r.ctx, r.sub); err != nil {
		t.Fatal(err)
	}
	r.publish(event("acme", "evt-1"))
	r.step()
	j, attempts := r.onlyJob()
	if len(attempts) != 1 || attempts[0].Error != "dns: no such host nowhere.invalid" || j.LastError != attempts[0].Error {
		t.Fatalf("job %+v, attempts %+v", j, attempts)
	}
	if strings.Contains(attempts[0].Error, " on ") || j.Status == hub.JobSucceeded {
		t.Fatalf("the attempt names the resolver: %q", attempts[0].Error)
	}
}
