//go:build faults

package faults

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	_ "modernc.org/sqlite"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The SQLite file of a dev hub on a disk that fills up: ingest cannot
// persist, no offset moves, /readyz answers 503 naming ingest while it
// lasts, and once space is freed every event is stored exactly once. The
// disk is a small tmpfs the test mounts (root only); elsewhere it skips.
func TestDiskFullSQLite(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v): skipping the disk-full scenario", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })

	kafka := testkit.Kafka(t, 1, topic)
	prod := testkit.Producer(t, kafka)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dbPath := filepath.Join(dir, "hub.db")
	logs := &bytes.Buffer{}
	cmd := exec.Command(binary, "dev")
	cmd.Env = append(os.Environ(),
		"STREAMING_HUB_DATABASE_URL=sqlite://"+dbPath,
		"STREAMING_HUB_KAFKA_BROKERS="+strings.Join(kafka.ListenAddrs(), ","),
		"STREAMING_HUB_KAFKA_GROUP=faults-diskfull",
		"STREAMING_HUB_KEK="+base64.StdEncoding.EncodeToString(kek),
		"STREAMING_HUB_ADMIN_TOKEN=faults-admin-token-0123456789",
		"STREAMING_HUB_HTTP_ADDR="+addr,
		"STREAMING_HUB_LOG_LEVEL=error",
	)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGKILL); <-done })
	readyz := func() (int, map[string]string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var body struct{ Checks map[string]string }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Checks
	}
	testkit.WaitFor(t, "the dev hub to be ready", func() bool {
		select {
		case <-done:
			t.Fatalf("dev exited:\n%s", logs)
		default:
		}
		st, _ := readyz()
		return st == 200
	})

	// Fill the disk, then produce.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	const n = 200
	var recs []*kgo.Record
	for i := range n {
		r := testkit.CERecord(topic, 0, "default", fmt.Sprintf("full-%03d", i))
		r.Value = bytes.Repeat([]byte("x"), 2048)
		recs = append(recs, r)
	}
	testkit.Produce(t, prod, recs...)
	full := time.Now()

	var checks map[string]string
	testkit.WaitFor(t, "/readyz to report ingest failing while the disk is full", func() bool {
		st, c := readyz()
		checks = c
		return st == 503 && c["ingest"] != "" && c["ingest"] != "ok"
	})
	fmt.Printf("\n== disk full (SQLite on a full tmpfs)\n   /readyz 503 %.1f s after the produce (STREAMING_HUB_INGEST_STALL_AFTER 10s): ingest: %s\n",
		time.Since(full).Seconds(), checks["ingest"])
	if off, ok := testkit.CommittedOffsets(t, prod, "faults-diskfull", topic)[0]; ok && off > 0 {
		t.Fatalf("offset %d committed while nothing could be persisted", off)
	}

	os.Remove(filler)
	testkit.WaitFor(t, "ingest to recover once space is freed", func() bool {
		st, _ := readyz()
		return st == 200 && testkit.CommittedOffsets(t, prod, "faults-diskfull", topic)[0] == n
	})
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored, distinct int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*), count(DISTINCT ce_id) FROM events WHERE tenant_id = 'default' AND ce_id LIKE 'full-%'`).Scan(&stored, &distinct); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("   after freeing space: %d of %d events stored, %d distinct\n", stored, n, distinct)
	if stored != n || distinct != n {
		t.Fatalf("%d events stored (%d distinct), want %d exactly once", stored, distinct, n)
	}
}
