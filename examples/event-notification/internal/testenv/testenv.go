// Package testenv gives the example's tests what they share: a real Redis
// with a private keyspace that is deleted afterwards, and a real payments API
// on an httptest server whose requests are counted and which can be taken
// down on demand.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
)

// RedisURLEnv names the Redis the tests use.
const RedisURLEnv = "STREAMING_HUB_TEST_REDIS_URL"

// Redis returns a client to the test Redis and a keyspace unique to this test
// (name + random suffix), deleted when the test ends. Without RedisURLEnv the
// test is skipped, saying why.
func Redis(t testing.TB) (*redis.Client, keyspace.Layout) {
	t.Helper()
	raw := os.Getenv(RedisURLEnv)
	if raw == "" {
		t.Skip(RedisURLEnv + " not set: skipping Redis test")
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatalf("%s: %v", RedisURLEnv, err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		t.Fatalf("redis at %s unreachable: %v", raw, err)
	}
	keys, err := keyspace.New(uniqueName(t.Name()))
	if err != nil {
		t.Fatalf("keyspace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := keyspace.DeleteAll(ctx, rdb, keys); err != nil {
			t.Errorf("cleanup %s: %v", keys.Prefix(), err)
		}
		_ = rdb.Close()
	})
	return rdb, keys
}

func uniqueName(testName string) string {
	var b strings.Builder
	b.WriteString("test-")
	for _, r := range testName {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 100 {
		name = name[:100]
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return name + "-" + hex.EncodeToString(suffix)
}

// API is a payments API served by httptest with a request counter and a
// switch that makes it answer 503, the way an unhealthy source would.
type API struct {
	*httptest.Server
	Store    *payments.Store
	Requests *payments.RequestCounter
	down     atomic.Bool
	delay    atomic.Int64
}

// StartAPI serves the payments API over store until the test ends.
func StartAPI(t testing.TB, store *payments.Store) *API {
	t.Helper()
	a := &API{Store: store, Requests: &payments.RequestCounter{}}
	inner := payments.NewHandler(store, nil)
	a.Server = httptest.NewServer(a.Requests.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(a.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if a.down.Load() {
			http.Error(w, `{"error":"source unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, r)
	})))
	t.Cleanup(a.Server.Close)
	return a
}

// Restart brings a closed server back on the same address, as a restarted
// source would come back. The client keeps its base URL.
func (a *API) Restart(t testing.TB) {
	t.Helper()
	addr := a.Listener.Addr().String()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("re-listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(a.Config.Handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	a.Server = srv
	t.Cleanup(srv.Close)
}

// SetDown makes every request answer 503 (true) or be served again (false).
func (a *API) SetDown(down bool) { a.down.Store(down) }

// SetDelay makes every request wait d before being answered (0 = none), to
// drive a client into its timeout.
func (a *API) SetDelay(d time.Duration) { a.delay.Store(int64(d)) }

// NewStore is a payments store over keys for tests.
func NewStore(t testing.TB, rdb *redis.Client, keys keyspace.Layout) *payments.Store {
	t.Helper()
	s, err := payments.NewStore(rdb, keys, "")
	if err != nil {
		t.Fatalf("payments store: %v", err)
	}
	return s
}

// Entries returns every entry of the layout's notification stream.
func Entries(t testing.TB, rdb *redis.Client, stream string) []redis.XMessage {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatalf("xrange %s: %v", stream, err)
	}
	return msgs
}
