package loadtest_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/loadtest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// On PostgreSQL the limits are loopback HTTP and durable single-row
// commits from 1 and from 8 connections, whatever the URL says of
// synchronous_commit (the test URL turns it off); the scratch schema the
// commits went to is gone afterwards.
func TestMeasureLimits_OnPostgreSQLCommitsDurablyAndDropsItsSchema(t *testing.T) {
	testkit.Long(t)
	url := testkit.PostgresURL(t)
	var out bytes.Buffer
	lim, err := loadtest.MeasureLimits(context.Background(), 300*time.Millisecond, url, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if lim.HTTP.Clients != 64 || lim.HTTP.Body != 512 || lim.HTTP.Requests <= 0 || lim.HTTP.Rate() <= 0 || lim.HTTP.CPU <= 0 {
		t.Errorf("HTTP %+v", lim.HTTP)
	}
	if len(lim.Commits) != 2 || lim.Commits[0].Clients != 1 || lim.Commits[1].Clients != 8 {
		t.Fatalf("commits %+v", lim.Commits)
	}
	for _, c := range lim.Commits {
		if c.Commits <= 0 || c.Rate() <= 0 || c.Elapsed < 300*time.Millisecond {
			t.Errorf("commits %+v", c)
		}
	}
	if lim.SynchronousCommit != "on" || lim.Fsync == "" || lim.LoadAverage[0] == "" || lim.LoadAverage[1] == "" {
		t.Errorf("limits %+v", lim)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", lim.Scratch).Scan(&left); err != nil || left != 0 || lim.Scratch == "" {
		t.Errorf("scratch schema %q: %d left (%v)", lim.Scratch, left, err)
	}
	var report bytes.Buffer
	loadtest.ReportLimits(&report, lim)
	for _, want := range []string{"\nmachine (", "limits          loopback HTTP ", " req/s at 64 concurrent; PostgreSQL commits ", "/s from 1 client, ",
		"from 8 connections", "synchronous_commit on"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("missing %q in\n%s", want, report.String())
		}
	}
}

// Without PostgreSQL (no database, or SQLite) only loopback HTTP is
// measured, and the report says why the commits are not.
func TestMeasureLimits_WithoutPostgreSQLOnlyHTTP(t *testing.T) {
	for _, db := range []string{"", "sqlite://" + filepath.Join(t.TempDir(), "bench.db")} {
		var out bytes.Buffer
		lim, err := loadtest.MeasureLimits(context.Background(), 300*time.Millisecond, db, &out)
		if err != nil {
			t.Fatalf("%q: %v", db, err)
		}
		if lim.HTTP.Requests <= 0 || lim.Commits != nil || lim.Scratch != "" {
			t.Errorf("%q: %+v", db, lim)
		}
		loadtest.ReportLimits(&out, lim)
		if !strings.Contains(out.String(), "not measured: the run is not on PostgreSQL") || strings.Contains(out.String(), "commits/s") {
			t.Errorf("%q:\n%s", db, out.String())
		}
	}
}

// The one-line summary reads like the issue's own figures.
func TestLimits_SummaryReadsLikeTheIssue(t *testing.T) {
	lim := loadtest.Limits{HTTP: loadtest.HTTPLimit{Clients: 64, Requests: 30_177, Elapsed: time.Second},
		Commits: []loadtest.CommitLimit{{Clients: 1, Commits: 14_000, Elapsed: 2 * time.Second}, {Clients: 8, Commits: 13_700, Elapsed: time.Second}}}
	if got, want := lim.Summary(), "loopback HTTP 30,177 req/s at 64 concurrent; PostgreSQL commits 7,000/s from 1 client, 13,700/s from 8"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	lim.Commits = nil
	lim.HTTP.Requests = 999
	if got := lim.Summary(); got != "loopback HTTP 999 req/s at 64 concurrent" {
		t.Errorf("got %q", got)
	}
}

func TestOptions_LimitsTooShortAreRefused(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 99 * time.Millisecond} {
		if _, err := (loadtest.Options{Limits: d}).Normalize(); err == nil || !strings.Contains(err.Error(), "want 100ms or more") {
			t.Errorf("%v: %v", d, err)
		}
		if _, err := loadtest.MeasureLimits(context.Background(), d, "", &bytes.Buffer{}); err == nil {
			t.Errorf("%v measured", d)
		}
	}
	o, err := loadtest.Options{Limits: 5 * time.Second}.Normalize()
	if err != nil || o.Timeout != 10*time.Minute+15*time.Second {
		t.Errorf("%+v, %v", o, err)
	}
}
