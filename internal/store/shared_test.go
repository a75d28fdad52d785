package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

func TestCleanText(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"kept as it came", "line 1\nline 2\t\"x\"", 100, "line 1\nline 2\t\"x\""},
		{"NUL replaced", "a\x00b", 100, "a\uFFFDb"},
		{"invalid UTF-8 replaced", "a\xffb", 100, "a\uFFFDb"},
		{"cut at max", "abcdef", 4, "abcd"},
		{"cut before a split rune", "aé", 2, "a"},
		{"a replacement counts its bytes", "\x00\x00", 4, "\uFFFD"},
	} {
		got := CleanText(c.in, c.max)
		if got != c.want || !utf8.ValidString(got) || len(got) > c.max {
			t.Errorf("%s: CleanText(%q, %d) = %q, want %q", c.name, c.in, c.max, got, c.want)
		}
	}
}

func TestAcceptedTenants_OnceEachInFirstOrder(t *testing.T) {
	evs := []hub.Event{{TenantID: "b"}, {TenantID: "a"}, {TenantID: "b"}, {TenantID: "c"}, {TenantID: "a"}}
	outs := []Outcome{{Verdict: hub.Accept}, {Verdict: hub.Discard}, {Verdict: hub.Accept}, {Verdict: hub.Discard}, {Verdict: hub.Accept}}
	if got := AcceptedTenants(evs, outs); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("AcceptedTenants = %v, want [b a]", got)
	}
	if got := AcceptedTenants(evs, []Outcome{{Verdict: hub.Discard}}); got != nil {
		t.Fatalf("nothing accepted: %v", got)
	}
}

// Success is the job's: an attempt answered 500 with no error text is a
// failure all the same.
func TestSpans_SuccessIsTheJobsStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	done := func(status hub.JobStatus, at time.Time, code int) Completion {
		return Completion{Status: status, SubscriptionID: "sub_1", Attempt: &hub.Attempt{StartedAt: at, StatusCode: code}}
	}
	us := Spans([]Completion{done(hub.JobSucceeded, t0, 200), done(hub.JobPending, t0.Add(time.Minute), 500)})
	if len(us) != 1 || !us[0].Reset || us[0].First == nil || !us[0].First.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a success then a 500 without error text: %+v, want the span reset to the 500", us)
	}
	if f := Failing([]Completion{done(hub.JobDeadLettered, t0, 410)}); !slices.Equal(f, []string{"sub_1"}) {
		t.Fatalf("a dead-lettered attempt is a failure: Failing = %v", f)
	}
}

func TestAutoDisable_GatesAndReason(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g := AutoDisable{Window: 120 * time.Hour, Spread: 12 * time.Hour}
	span := func(first, last time.Duration) OpenSpan {
		return OpenSpan{SubscriptionID: fmt.Sprint(first), FailureSpan: hub.FailureSpan{First: now.Add(-first), Last: now.Add(-last)}}
	}
	got := g.Disable([]OpenSpan{
		span(120*time.Hour, 0),                      // both gates met exactly
		span(119*time.Hour, 0),                      // not sustained
		span(121*time.Hour, 110*time.Hour),          // not spread (11h)
		span(121*time.Hour+500*time.Millisecond, 0), // the reason is to the second
	}, now)
	want := []Disabled{
		{SubscriptionID: "120h0m0s", Reason: "auto-disabled: failing since 2026-11-25T12:00:00Z, last failure 2026-11-30T12:00:00Z"},
		{SubscriptionID: "121h0m0.5s", Reason: "auto-disabled: failing since 2026-11-25T10:59:59Z, last failure 2026-11-30T12:00:00Z"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Disable = %+v, want %+v", got, want)
	}
	if !g.Cutoff(now).Equal(now.Add(-120 * time.Hour)) {
		t.Fatalf("Cutoff = %v", g.Cutoff(now))
	}
}

func TestWrap_NamesDriverAndOperationAndKeepsTheCode(t *testing.T) {
	err := SubscriptionNotFound("sub_1")
	Wrap(&err, "sqlite", "GetSubscription")
	if err.Error() != `sqlite: GetSubscription: not_found: subscription "sub_1" not found` {
		t.Fatalf("Error() = %q", err)
	}
	if hub.ErrorCode(err) != hub.ENOTFOUND || hub.ErrorMessage(err) != `subscription "sub_1" not found` {
		t.Fatalf("code %q, message %q: the API would answer differently", hub.ErrorCode(err), hub.ErrorMessage(err))
	}
	var none error
	Wrap(&none, "sqlite", "Ping")
	if none != nil {
		t.Fatalf("Wrap(nil) = %v", none)
	}
	boom := errors.New("boom")
	err = boom
	Wrap(&err, "postgres", "CompleteJobs")
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "postgres: CompleteJobs: ") {
		t.Fatalf("Wrap = %v", err)
	}
}
