package webhook

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// Many tenants' endpoints on one host, attempted at once, as unordered
// subscriptions are: a second burst as wide as the first reuses the first
// one's connections instead of dialing again (a pool smaller than the
// attempts in flight closed and redialed most of them at every burst).
func TestTransport_ABurstToOneHostReusesTheLastBurstsConnections(t *testing.T) {
	var conns atomic.Int64
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := NewClient(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))

	const width = 400 // more than the old pool of 256 per host
	burst := func() {
		var done sync.WaitGroup
		arrived.Add(width)
		for i := range width {
			done.Add(1)
			go func() {
				defer done.Done()
				req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/t/"+string(rune('a'+i%26)), nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}()
		}
		arrived.Wait() // all width requests are in flight at once
		for range width {
			release <- struct{}{}
		}
		done.Wait()
	}
	burst()
	first := conns.Load()
	if first != width {
		t.Fatalf("the first burst opened %d connections, want %d", first, width)
	}
	burst()
	if again := conns.Load() - first; again != 0 {
		t.Fatalf("the second burst dialed %d new connections; the %d of the first were not kept", again, width)
	}
}
