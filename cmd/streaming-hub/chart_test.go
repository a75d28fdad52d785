package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// syncBuffer is a bytes.Buffer the hub's logger and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chartEnv reads testdata/lerian-chart.env with its ${...} filled in.
func chartEnv(t *testing.T, fill map[string]string) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/lerian-chart.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		vars[k] = os.Expand(v, func(name string) string {
			val, ok := fill[name]
			if !ok {
				t.Fatalf("lerian-chart.env: nothing fills ${%s}", name)
			}
			return val
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vars
}

// `streaming-hub serve` with exactly the environment of Lerian's chart (no
// admin token, the KEK in STREAMING_HUB_DEV_KEK named by KEK_REF, the
// chart's names for the database, the listen address and the pool, the
// access manager on, the lab's opt-ins for plaintext Kafka and PostgreSQL
// without TLS) migrates its database, becomes ready, lets an operator in
// with a JWT the access manager allows, warns about none of the names it
// reads, serves its one tenant (a tenant JWT subscribes and receives its
// event; another tenant's record is rejected as tenant_not_served), and on
// SIGTERM answers /readyz 503 while draining, then exits 0.
func TestServe_StartsWithLerianChartEnvironment(t *testing.T) {
	testkit.Long(t)
	dsn := testkit.PostgresPoolURL(t)
	kafka := testkit.Kafka(t, 1, "lerian.streaming.ledger")
	var asked sync.Map
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		asked.Store(body["resource"], body["action"])
		json.NewEncoder(w).Encode(map[string]bool{"authorized": true})
	}))
	t.Cleanup(am.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	kek := make([]byte, 32)
	rand.Read(kek)

	// The chart's DSN carries the password its POSTGRES_PASSWORD holds
	// (the server trusts loopback: any password is accepted).
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const password = "chart pw@:/?#"
	u.User = url.UserPassword(u.User.Username(), password)
	vars := chartEnv(t, map[string]string{
		"HTTP_LISTEN_ADDR": addr, "KAFKA_BROKERS": strings.Join(kafka.ListenAddrs(), ","),
		"PLUGIN_AUTH_ADDRESS": am.URL, "POSTGRES_DSN": u.String(), "DEV_KEK": base64.StdEncoding.EncodeToString(kek),
		"POSTGRES_HOST": u.Hostname(), "POSTGRES_PORT": u.Port(), "POSTGRES_USER": u.User.Username(),
		"POSTGRES_PASSWORD": password, "POSTGRES_DB": strings.TrimPrefix(u.Path, "/"),
	})
	if len(vars) != 43 {
		t.Fatalf("lerian-chart.env has %d names, want 43", len(vars))
	}
	// The receiver of this lab is on loopback, which the SSRF rule refuses
	// unless told: the one name added to the chart's. The API reference is
	// turned on (the chart's value is false).
	vars["STREAMING_HUB_ALLOW_PRIVATE_SINKS"] = "true"
	vars["STREAMING_HUB_SWAGGER_ENABLED"] = "true"
	received := make(chan string, 16)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var probe struct{ Challenge string }
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &probe) == nil && probe.Challenge != "" {
			io.WriteString(w, probe.Challenge) // the verification probe
			return
		}
		received <- r.Header.Get("X-Lerian-Event-Id")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sink.Close)
	if _, ok := vars["STREAMING_HUB_ADMIN_TOKEN"]; ok {
		t.Fatal("the chart sets no admin token")
	}
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve"}, env{&syncBuffer{}, stderr, func(k string) string { return vars[k] }, strings.NewReader(""), environOf(vars)})
	}()
	base := "http://" + addr
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testkit.Eventually(t, 60*time.Second, "serve to become ready", func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		default:
		}
		return get("/readyz", "") == 200
	})

	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ": unknown") {
			t.Errorf("warned about a name of the chart: %s", line)
		}
		if strings.Contains(line, "are both set") || strings.Contains(line, "differ from the database URL") {
			t.Errorf("unexpected warning: %s", line)
		}
	}
	if get("/metrics", "") != 200 {
		t.Error("/metrics: STREAMING_HUB_METRICS_ENABLED=true serves it")
	}
	// An operator's JWT (no tenantId), as the access manager issues them;
	// with no verify certificate the access manager judges it.
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	jwt := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." +
		enc(map[string]any{"type": "normal-user", "owner": "lerian", "sub": "ops", "exp": time.Now().Add(time.Hour).Unix()}) + ".c2ln"
	if st := get("/v1/tenants", jwt); st != 200 {
		t.Errorf("GET /v1/tenants with an operator JWT: %d", st)
	}
	if a, _ := asked.Load("tenants"); a != "get" {
		t.Errorf("the access manager was not asked tenants/get")
	}
	// The API reference (STREAMING_HUB_SWAGGER_ENABLED=true), behind the
	// same credentials: the operator's JWT as a browser sends it, the
	// password of HTTP Basic.
	req, _ := http.NewRequest("GET", base+"/swagger/openapi.json", nil)
	req.SetBasicAuth("ops", jwt)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /swagger/openapi.json with the operator's JWT: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if st := get("/swagger", ""); st != 401 {
		t.Errorf("GET /swagger without credentials: %d, want 401", st)
	}

	// The one tenant the chart serves (MULTI_TENANT_ENABLED=false,
	// STREAMING_HUB_TENANT_ID=default) was made at start: a tenant JWT of it
	// subscribes, verifies and receives its event; another tenant's record
	// is rejected as tenant_not_served.
	tenantJWT := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." +
		enc(map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice", "tenantId": "default", "exp": time.Now().Add(time.Hour).Unix()}) + ".c2ln"
	call := func(method, path, token, body string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	st, b := call("POST", "/v1/subscriptions", tenantJWT, `{"name":"chart","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"`+sink.URL+`"}}`)
	var sub struct{ ID string }
	if json.Unmarshal(b, &sub); st != 201 || sub.ID == "" {
		t.Fatalf("a tenant JWT subscribing: %d %s", st, b)
	}
	if st, b := call("POST", "/v1/subscriptions/"+sub.ID+"/verify", tenantJWT, ""); st != 200 {
		t.Fatalf("verify: %d %s", st, b)
	}
	prod := testkit.Producer(t, kafka)
	testkit.Produce(t, prod, testkit.CERecord("lerian.streaming.ledger", 0, "default", "evt-chart-1"),
		testkit.CERecord("lerian.streaming.ledger", 0, "globex", "evt-chart-2"))
	select {
	case id := <-received:
		if id != "evt-chart-1" {
			t.Fatalf("the receiver got %q, want evt-chart-1", id)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("the served tenant's event was not delivered")
	}
	testkit.WaitFor(t, "the other tenant's record rejected as tenant_not_served", func() bool {
		_, b := call("GET", "/v1/admin/rejections", jwt, "")
		return bytes.Contains(b, []byte("tenant_not_served")) && bytes.Contains(b, []byte("evt-chart-2"))
	})
	select {
	case id := <-received:
		t.Fatalf("the receiver also got %q", id)
	default:
	}

	// SIGTERM: /readyz answers 503 at once while the hub drains (5s), then
	// it stops and exits 0.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "/readyz 503 during the drain", func() bool { return get("/readyz", "") == 503 })
	if st := get("/v1/tenants", jwt); st != 200 {
		t.Errorf("the API during the drain: %d", st)
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
