package housekeeping

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// busyPartitions is a store whose partitions pass finds the tables busy,
// or fails, as told.
type busyPartitions struct {
	Store
	err error
}

func (b busyPartitions) EnsurePartitions(context.Context, time.Time, int) (int, error) {
	return 2, b.err
}

// Busy tables are the hub's own load: the pass is deferred with a warning
// and tried again in a minute; any other failure is an error and waits for
// the next interval.
func TestPartitionsPass_BusyTablesRetrySoonAndWarn(t *testing.T) {
	for _, c := range []struct {
		err       error
		next      time.Duration
		level     string
		message   string
		noMessage string
	}{
		{fmt.Errorf("postgres: EnsurePartitions: %w (1 of them)", store.ErrPartitionsBusy), time.Minute, "WARN", "partitions pass deferred", "partitions pass failed"},
		{fmt.Errorf("postgres: EnsurePartitions: permission denied"), 6 * time.Hour, "ERROR", "partitions pass failed", "deferred"},
		{nil, 6 * time.Hour, "INFO", "partitions made", "failed"},
	} {
		var logs bytes.Buffer
		cfg := Config{Housekeeping: config.Defaults(config.Serve).Housekeeping, Metrics: metrics.New(),
			Store:  busyPartitions{Store: testkit.OpenSQLite(t, store.Options{}), err: c.err},
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}
		h, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if next := h.partitionsPass(context.Background()); next != c.next {
			t.Errorf("%v: next pass in %v, want %v", c.err, next, c.next)
		}
		out := logs.String()
		if !strings.Contains(out, "level="+c.level+` msg="`+c.message) || strings.Contains(out, c.noMessage) {
			t.Errorf("%v: logged\n%s", c.err, out)
		}
	}
}
