package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store/migrate"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/testkit/gomigrate"
)

// The folder the chart's migrations Job copies to /migrations.
const migrationsFolder = "../../internal/store/postgres/migrations"

// Lerian's chart runs golang-migrate's stock image as a Job before the
// hub's pods, which start `serve --no-migrate`: on a schema the Job left
// one version behind, serve refuses to start naming the version it found
// and the one it needs; once the Job brought it up to date, serve starts
// and makes the current week's partitions itself.
func TestServe_NoMigrateAfterTheChartsGolangMigrateJob(t *testing.T) {
	testkit.Long(t)
	dsn := testkit.PostgresPoolURL(t)
	ms, err := migrate.Load(os.DirFS(migrationsFolder), ".")
	if err != nil {
		t.Fatal(err)
	}
	last := len(ms)
	job := gomigrate.New(t, os.DirFS(migrationsFolder), ".", dsn)
	if err := job.Migrate(uint(last - 1)); err != nil {
		t.Fatalf("golang-migrate to %d: %v", last-1, err)
	}
	kek := make([]byte, 32)
	rand.Read(kek)
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	vars := map[string]string{
		"STREAMING_HUB_POSTGRES_DSN":     dsn,
		"STREAMING_HUB_ROLE":             "delivery",
		"STREAMING_HUB_HTTP_ADDR":        addr,
		"STREAMING_HUB_KEK":              base64.StdEncoding.EncodeToString(kek),
		"STREAMING_HUB_ADMIN_TOKEN":      "admin-token-long-enough",
		"STREAMING_HUB_SHUTDOWN_TIMEOUT": "5s",
	}
	code, _, errOut := runCmd(vars, "serve", "--no-migrate")
	want := fmt.Sprintf("database schema is at version %d, this binary needs version %d (%s)", last-1, last, ms[last-1].File())
	if code != exitError || !strings.Contains(errOut, want) {
		t.Fatalf("serve --no-migrate one version behind: exit %d, stderr %q; want exit %d naming %q", code, errOut, exitError, want)
	}

	if err := job.Up(); err != nil {
		t.Fatalf("golang-migrate up: %v", err)
	}
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--no-migrate"}, env{&syncBuffer{}, stderr, func(k string) string { return vars[k] }, strings.NewReader(""), environOf(vars)})
	}()
	testkit.Eventually(t, 60*time.Second, "serve --no-migrate to become ready", func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve --no-migrate exited %d:\n%s", code, stderr.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	// golang-migrate makes no weekly partition (the hub's own runner makes
	// this week's after migration 019): serve's partition pass does.
	conn, err := pgx.Connect(context.Background(), gomigrate.URL(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	monday := time.Now().UTC().Truncate(24 * time.Hour)
	for monday.Weekday() != time.Monday {
		monday = monday.AddDate(0, 0, -1)
	}
	week := "events_w" + monday.Format("20060102")
	testkit.WaitFor(t, week+" made by serve", func() bool {
		var ok bool
		return conn.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, week).Scan(&ok) == nil && ok
	})

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}
