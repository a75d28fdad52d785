package console_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// attemptAt claims the one pending delivery and completes it with an
// attempt that started at, succeeded or not.
func (h *hub) attemptAt(at time.Time, ok bool) {
	h.t.Helper()
	ctx := context.Background()
	cs, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
	if err != nil || len(cs) != 1 {
		h.t.Fatalf("claimed %d, %v", len(cs), err)
	}
	c := cs[0]
	done := store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hubpkg.JobSucceeded,
		SubscriptionID: c.Job.SubscriptionID,
		Attempt:        &hubpkg.Attempt{ID: hubpkg.NewID("att", at), StartedAt: at, Duration: 300 * time.Millisecond, StatusCode: 200}}
	if !ok {
		done.Status, done.NextAttemptAt, done.LastError = hubpkg.JobDeadLettered, time.Time{}, "destination answered 500"
		done.Attempt.StatusCode, done.Attempt.Error = 500, "destination answered 500"
	}
	if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{done}}); err != nil {
		h.t.Fatal(err)
	}
}

var (
	currentWindow = regexp.MustCompile(`aria-current="true">([^<]+)</a>`)
	bucketTitle   = regexp.MustCompile(`<g class="bucket"><title>([^<]*)</title>`)
)

func TestSubscriptionChart_WindowFitsTheActivity(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		h := w.h
		h.attemptAt(h.clock.Now().Add(-5*time.Minute), true) // evt-1, 5 minutes ago
		tenant := h.signIn(w.acmeKey)
		page := "/console/subscriptions/" + w.acmeSub

		got := tenant.get(page)
		if cur := currentWindow.FindStringSubmatch(got.body); got.status != 200 || cur == nil || cur[1] != "1 h" {
			t.Fatalf("activity only in the last 10 minutes: window %v, want 1 h\n%s", cur, got.body)
		}
		titles := bucketTitle.FindAllStringSubmatch(got.body, -1)
		if len(titles) < 12 || len(titles) > 13 {
			t.Fatalf("%d bucket titles on a 1 h chart, want 12 or 13", len(titles))
		}
		var delivered []string
		for _, m := range titles {
			if strings.Contains(m[1], "1 delivered, 0 failed, p99 ") {
				delivered = append(delivered, m[1])
			}
		}
		if len(delivered) != 1 || !regexp.MustCompile(`^\d\d:\d\d–\d\d:\d\d: 1 delivered, 0 failed, p99 \d+ ms$`).MatchString(delivered[0]) {
			t.Errorf("the attempt's bucket title: %q", delivered)
		}
		if !regexp.MustCompile(`<text class="tick x" [^>]*>\d\d:\d\d</text>`).MatchString(got.body) || !strings.Contains(got.body, `href="?window=168h#health"`) {
			t.Errorf("the chart lacks its time labels or the window links:\n%s", got.body)
		}

		// An attempt 3 hours ago widens the fitted window to 6 h.
		h.ingest(storetest.NewEvent("acme", "evt-2"))
		h.attemptAt(h.clock.Now().Add(-3*time.Hour), false)
		got = tenant.get(page)
		if cur := currentWindow.FindStringSubmatch(got.body); cur == nil || cur[1] != "6 h" {
			t.Fatalf("activity 3 hours ago: window %v, want 6 h", cur)
		}
		// The user's choice wins, and the page offers the fitted one back.
		got = tenant.get(page + "?window=168h")
		if cur := currentWindow.FindStringSubmatch(got.body); cur == nil || cur[1] != "7 d" || !strings.Contains(got.body, "fit to the activity") {
			t.Fatalf("chosen 7 d: window %v", cur)
		}
		if !regexp.MustCompile(`<text class="tick x" [^>]*>[A-Z][a-z]{2} \d{1,2}</text>`).MatchString(got.body) {
			t.Errorf("a 7-day chart labels its ticks with dates:\n%s", got.body)
		}
	})
}

func TestOperatorOverview_HubRatesAndP99OnTheFirstLook(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		h := w.h
		h.attemptAt(h.clock.Now().Add(-2*time.Minute), true)
		h.ingest(storetest.NewEvent("globex", "evt-g"))
		h.attemptAt(h.clock.Now().Add(-1*time.Minute), false)

		got := h.signIn(adminToken).get("/console/")
		for _, want := range []string{`id="rate-chart"`, `id="p99-chart"`, `class="chart-rates"`, `class="chart-p99"`, "Ingest verdicts", "Breakers open"} {
			if !strings.Contains(got.body, want) {
				t.Errorf("operator overview lacks %s", want)
			}
		}
		m := regexp.MustCompile(`id="delivered-rate">([^<]+)<`).FindStringSubmatch(got.body)
		if m == nil || !regexp.MustCompile(`^[0-9.]+/(h|min|s)$`).MatchString(m[1]) {
			t.Fatalf("delivered per minute on the first look: %v", m)
		}
		// The chart's caption names the unit the card is written in.
		unit := map[string]string{"h": "per hour", "min": "per minute", "s": "per second"}[m[1][strings.Index(m[1], "/")+1:]]
		if !strings.Contains(got.body, "Delivered and failed attempts "+unit+" in each bucket") {
			t.Errorf("the card says %s, the chart's caption not %q", m[1], unit)
		}
		if m := regexp.MustCompile(`id="hub-p99">([^<]+)<`).FindStringSubmatch(got.body); m == nil || !regexp.MustCompile(`^(\d+|<1) ms$`).MatchString(m[1]) {
			t.Errorf("hub p99: %v", m)
		}
		var rate, p99 bool
		for _, m := range bucketTitle.FindAllStringSubmatch(got.body, -1) {
			rate = rate || regexp.MustCompile(`^\d\d:\d\d–\d\d:\d\d: [0-9.]+/(h|min|s) delivered, [0-9.]+/(h|min|s) failed \(1 delivered, 1 failed( so far)?\)$`).MatchString(m[1])
			p99 = p99 || regexp.MustCompile(`^\d\d:\d\d–\d\d:\d\d: p99 (\d+|<1) ms over 2 attempts$`).MatchString(m[1])
		}
		if !rate || !p99 {
			t.Errorf("hover titles: rate %v, p99 %v\n%q", rate, p99, bucketTitle.FindAllStringSubmatch(got.body, -1))
		}
		if got := h.signIn(adminToken).get("/console/?window=bogus"); got.status != 200 || !strings.Contains(got.body, "window: a Go duration") {
			t.Errorf("a bad window: %d, the API's message shown in place of the charts", got.status)
		}
	})
}
