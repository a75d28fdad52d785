package console_test

import (
	"context"
	"regexp"
	"strconv"
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
		if !regexp.MustCompile(`<text class="tick x( minor)?" [^>]*>\d\d:\d\d</text>`).MatchString(got.body) || !strings.Contains(got.body, `href="?window=168h#health"`) {
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
		if !regexp.MustCompile(`<text class="tick x( minor)?" [^>]*>[A-Z][a-z]{2} \d{1,2}</text>`).MatchString(got.body) {
			t.Errorf("a 7-day chart labels its ticks with dates:\n%s", got.body)
		}
	})
}

// The overview's cards count the window's attempts and the chart beside
// them counts them per bucket: one unit, one window, the bars adding up to
// the cards (docs/console.md).
func TestOperatorOverview_CardsAndBarsCountTheSameAttemptsOnTheFirstLook(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		h := w.h
		h.attemptAt(h.clock.Now().Add(-2*time.Minute), true)
		h.ingest(storetest.NewEvent("globex", "evt-g"))
		h.attemptAt(h.clock.Now().Add(-1*time.Minute), false)

		got := h.signIn(adminToken).get("/console/")
		for _, want := range []string{`id="rate-chart"`, `id="p99-chart"`, `class="plot-area chart-rates"`, `class="plot-area chart-p99"`, "Ingest verdicts", "Breakers open"} {
			if !strings.Contains(got.body, want) {
				t.Errorf("operator overview lacks %s", want)
			}
		}
		delivered := regexp.MustCompile(`id="delivered-count">([^<]+)<`).FindStringSubmatch(got.body)
		failed := regexp.MustCompile(`id="failed-count">([^<]+)<`).FindStringSubmatch(got.body)
		if delivered == nil || delivered[1] != "1" || failed == nil || failed[1] != "1" {
			t.Fatalf("the cards on the first look: delivered %v, failed %v", delivered, failed)
		}
		if !strings.Contains(got.body, "attempts delivered in the last 1 h") || !strings.Contains(got.body, "Delivered and failed attempts per 5 min over the last 1 h: the bars add up to the counts above") {
			t.Errorf("the cards and the caption do not name one unit and window:\n%s", got.body)
		}
		if m := regexp.MustCompile(`id="hub-p99">([^<]+)<`).FindStringSubmatch(got.body); m == nil || !regexp.MustCompile(`^(\d+|<1) ms$`).MatchString(m[1]) {
			t.Errorf("hub p99: %v", m)
		}
		var sumOK, sumFail int
		var p99 bool
		bar := regexp.MustCompile(`^\d\d:\d\d–\d\d:\d\d: (\d+) delivered, (\d+) failed, p99 (\d+|<1) ms( so far)?$`)
		for _, m := range bucketTitle.FindAllStringSubmatch(got.body, -1) {
			if b := bar.FindStringSubmatch(m[1]); b != nil {
				ok, _ := strconv.Atoi(b[1])
				fail, _ := strconv.Atoi(b[2])
				sumOK, sumFail = sumOK+ok, sumFail+fail
			}
			p99 = p99 || regexp.MustCompile(`^\d\d:\d\d–\d\d:\d\d: p99 (\d+|<1) ms over 2 attempts( so far)?$`).MatchString(m[1])
		}
		if sumOK != 1 || sumFail != 1 || !p99 {
			t.Errorf("the bars count %d delivered and %d failed (the cards: 1 and 1); p99 title %v\n%q", sumOK, sumFail, p99, bucketTitle.FindAllStringSubmatch(got.body, -1))
		}
		if got := h.signIn(adminToken).get("/console/?window=bogus"); got.status != 200 || !strings.Contains(got.body, "window: a Go duration") {
			t.Errorf("a bad window: %d, the API's message shown in place of the charts", got.status)
		}
	})
}
