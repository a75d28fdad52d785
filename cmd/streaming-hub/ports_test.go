package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestServerOfListenAddr(t *testing.T) {
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{nil, defaultServer},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "127.0.0.1:8181"}, "http://127.0.0.1:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": ":8181"}, "http://127.0.0.1:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "0.0.0.0:8181"}, "http://127.0.0.1:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "[::]:8181"}, "http://127.0.0.1:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "[::1]:8181"}, "http://[::1]:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "hub.local:80"}, "http://hub.local:80"},
		{map[string]string{"STREAMING_HUB_HTTP_LISTEN_ADDR": "127.0.0.1:9191"}, "http://127.0.0.1:9191"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "127.0.0.1:8181", "STREAMING_HUB_HTTP_LISTEN_ADDR": "127.0.0.1:9191"}, "http://127.0.0.1:8181"},
		{map[string]string{"STREAMING_HUB_HTTP_ADDR": "no port"}, defaultServer},
	} {
		e := env{getenv: func(k string) string { return c.vars[k] }}
		if got := serverOfListenAddr(e); got != c.want {
			t.Errorf("%v: %q, want %q", c.vars, got, c.want)
		}
	}
}

// One set of ports: with dev moved by STREAMING_HUB_HTTP_ADDR in the shell,
// the client commands follow it unless --server, STREAMING_HUB_SERVER or
// the current context names the hub.
func TestClientCommands_FollowDevsHTTPAddrWhenNothingElseNamesTheHub(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"id":"acme","name":"Acme","active":true}],"next_cursor":null}`))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	dead := deadAddr(t)

	vars := map[string]string{"STREAMING_HUB_TOKEN": "t", "STREAMING_HUB_HTTP_ADDR": ":" + port, "XDG_CONFIG_HOME": t.TempDir()}
	if code, out, errOut := runCmd(vars, "tenants", "list"); code != exitOK || !strings.Contains(out, "acme") || calls.Load() != 1 {
		t.Fatalf("STREAMING_HUB_HTTP_ADDR alone: exit %d, %d calls\n%s%s", code, calls.Load(), out, errOut)
	}
	// Its own settings win: the variable, the flag, the current context.
	vars["STREAMING_HUB_HTTP_ADDR"] = dead
	vars["STREAMING_HUB_SERVER"] = srv.URL
	if code, _, errOut := runCmd(vars, "tenants", "list"); code != exitOK || calls.Load() != 2 {
		t.Fatalf("STREAMING_HUB_SERVER over STREAMING_HUB_HTTP_ADDR: exit %d %s", code, errOut)
	}
	delete(vars, "STREAMING_HUB_SERVER")
	if code, _, errOut := runCmd(vars, "tenants", "list", "--server", srv.URL); code != exitOK || calls.Load() != 3 {
		t.Fatalf("--server over STREAMING_HUB_HTTP_ADDR: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(vars, "config", "set-context", "here", "--url", srv.URL, "--token", "t"); code != exitOK {
		t.Fatalf("set-context: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(vars, "tenants", "list"); code != exitOK || calls.Load() != 4 {
		t.Fatalf("the current context over STREAMING_HUB_HTTP_ADDR: exit %d %s", code, errOut)
	}
}

// produce follows dev's broker address (STREAMING_HUB_DEV_KAFKA_ADDR) when
// neither --brokers nor STREAMING_HUB_KAFKA_BROKERS names one.
func TestProduce_FollowsDevsKafkaAddrWhenNoBrokersAreNamed(t *testing.T) {
	testkit.Long(t)
	const topic = "lerian.streaming.ledger_transaction.posted"
	kafka := testkit.KafkaWith(t, 1, []string{topic})
	addr := kafka.ListenAddrs()[0]
	patience := testkit.Patience.String()

	vars := map[string]string{"STREAMING_HUB_DEV_KAFKA_ADDR": addr}
	if code, out, errOut := runCmd(vars, "produce", "--id", "evt-dev-addr", "--timeout", patience); code != exitOK || !strings.HasPrefix(out, "produced ce-id=evt-dev-addr") {
		t.Fatalf("STREAMING_HUB_DEV_KAFKA_ADDR alone: exit %d\n%s%s", code, out, errOut)
	}
	vars = map[string]string{"STREAMING_HUB_DEV_KAFKA_ADDR": deadAddr(t), "STREAMING_HUB_KAFKA_BROKERS": addr}
	if code, out, errOut := runCmd(vars, "produce", "--id", "evt-brokers", "--timeout", patience); code != exitOK || !strings.HasPrefix(out, "produced ce-id=evt-brokers") {
		t.Fatalf("STREAMING_HUB_KAFKA_BROKERS over STREAMING_HUB_DEV_KAFKA_ADDR: exit %d\n%s%s", code, out, errOut)
	}
	vars = map[string]string{"STREAMING_HUB_DEV_KAFKA_ADDR": deadAddr(t)}
	if code, out, errOut := runCmd(vars, "produce", "--brokers", addr, "--id", "evt-flag", "--timeout", patience); code != exitOK || !strings.HasPrefix(out, "produced ce-id=evt-flag") {
		t.Fatalf("--brokers over STREAMING_HUB_DEV_KAFKA_ADDR: exit %d\n%s%s", code, out, errOut)
	}
	recs := testkit.ReadRecords(t, kafka, topic, 3)
	var ids []string
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == "ce-id" {
				ids = append(ids, string(h.Value))
			}
		}
	}
	if strings.Join(ids, ",") != "evt-dev-addr,evt-brokers,evt-flag" {
		t.Fatalf("the broker holds %v", ids)
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
