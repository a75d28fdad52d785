package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/sqlite"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The child process: a consumer that dies (exit 3, no deferred cleanup, no
// commit, no LeaveGroup) right after its first transaction commits.
func init() {
	if os.Getenv("INGEST_CRASH_CHILD") == "" {
		return
	}
	ctx := context.Background()
	var s store.Store
	var err error
	if dsn := os.Getenv("INGEST_CRASH_POSTGRES"); dsn != "" {
		s, err = postgres.Open(ctx, dsn, store.Options{})
	} else {
		s, err = sqlite.Open(ctx, os.Getenv("INGEST_CRASH_SQLITE"), store.Options{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := consumerConfig(strings.Split(os.Getenv("INGEST_CRASH_BROKERS"), ","), s)
	cfg.AfterPersist = func(string, int32) {
		os.Exit(3) // the crash window: persisted, offset not committed
	}
	cfg.ClientOpts = []kgo.Opt{kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100 * time.Millisecond)}
	c, err := ingest.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c.Run(ctx)
	os.Exit(4) // never reached: the first batch crashes us
}

func TestConsumer_CrashBetweenPersistAndCommitLosesNothingAndDuplicatesNothing(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		env := []string{"INGEST_CRASH_CHILD=1"}
		var s store.Store
		if d.Name == "postgres" {
			url := testkit.PostgresPoolURL(t)
			db, err := postgres.Open(context.Background(), url, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := db.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s, env = db, append(env, "INGEST_CRASH_POSTGRES="+url)
		} else {
			path := testkit.SQLitePath(t)
			db, err := sqlite.Open(context.Background(), path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := db.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s, env = db, append(env, "INGEST_CRASH_SQLITE="+path)
		}
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		var first []*kgo.Record
		for i := range 10 {
			first = append(first, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("e-%02d", i)))
		}
		testkit.Produce(t, prod, first...)

		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), append(env, "INGEST_CRASH_BROKERS="+strings.Join(kafka.ListenAddrs(), ","))...)
		out, err := child.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("child did not crash in the window: %v\n%s", err, out)
		}
		if got := len(inbox(t, s, "acme")); got != 10 {
			t.Fatalf("after the crash the inbox has %d events, want the 10 persisted", got)
		}
		if off, ok := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0]; ok {
			t.Fatalf("the crashed consumer committed offset %d", off)
		}

		// Restart: the 10 are read again and discarded as duplicates; new
		// events go on from there.
		for i := 10; i < 15; i++ {
			testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("e-%02d", i)))
		}
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		m := cfg.Metrics
		startConsumer(t, cfg)
		testkit.WaitFor(t, "offset 15 committed after restart", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 15
		})
		got := inbox(t, s, "acme")
		if len(got) != 15 {
			t.Fatalf("inbox has %d events, want 15 exactly once", len(got))
		}
		for i, ev := range got {
			if ev.ID != fmt.Sprintf("e-%02d", i) || ev.Sequence != int64(i+1) {
				t.Fatalf("event %d = %s#%d", i, ev.ID, ev.Sequence)
			}
		}
		if dup := testutil.ToFloat64(m.IngestRecords.WithLabelValues("discard", "duplicate")); dup != 10 {
			t.Errorf("duplicates discarded after restart = %v, want 10", dup)
		}
	})
}
