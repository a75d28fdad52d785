package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The hub under a 1 GiB address-space limit (prlimit --as) survives every
// program of the floor of docs/filters-and-transforms.md in
// transform-preview (each is 422 naming transform_limit) and a 10,000-level
// body, and the same process answers /readyz after each. The binary is built as the image
// builds it (CGO_ENABLED=0).
func TestDev_UnderAnAddressSpaceLimitTransformsPastTheirLimitsLeaveTheHubUp(t *testing.T) {
	testkit.Long(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit is not installed (util-linux)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "streaming-hub")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	const token = "transform-limit-admin-token"
	hub := exec.Command(prlimit, "--as=1073741824", bin, "dev")
	hub.Dir = dir
	hub.Env = append(os.Environ(), "STREAMING_HUB_HTTP_ADDR="+addr, "STREAMING_HUB_DEV_KAFKA_ADDR=127.0.0.1:0",
		"STREAMING_HUB_ADMIN_TOKEN="+token, "STREAMING_HUB_DATABASE_URL=sqlite://"+filepath.Join(dir, "hub.db"))
	var log testkit.Buffer
	hub.Stdout, hub.Stderr = &log, &log
	if err := hub.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- hub.Wait() }()
	t.Cleanup(func() {
		hub.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the hub's log:\n%s", log.String())
		}
	})
	base := "http://" + addr
	ready := func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	testkit.WaitFor(t, "/readyz to answer 200", ready)
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Tenant-Id", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if status, b := call("POST", "/v1/tenants", `{"id":"acme","name":"Acme"}`); status != 201 {
		t.Fatalf("create tenant: %d %s", status, b)
	}
	status, b := call("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"https://hooks.example.com/x"}}`)
	var sub struct{ ID string }
	if json.Unmarshal(b, &sub); status != 201 || sub.ID == "" {
		t.Fatalf("create subscription: %d %s", status, b)
	}
	for _, src := range testkit.HostileTransforms {
		program, _ := json.Marshal(src)
		start := time.Now()
		status, b := call("POST", "/v1/subscriptions/"+sub.ID+"/transform-preview",
			`{"id":"ev_1","type":"studio.lerian.transaction.posted","data":{"a":1},"transform":`+string(program)+`}`)
		if status != http.StatusUnprocessableEntity || !bytes.Contains(b, []byte("transform_limit")) {
			t.Fatalf("%s: %d %s, want 422 naming transform_limit", src, status, b)
		}
		t.Logf("%s: %s in %s", src, bytes.TrimSpace(b), time.Since(start).Round(time.Millisecond))
		select {
		case err := <-exited:
			t.Fatalf("the hub exited after %s: %v", src, err)
		default:
		}
		if !ready() {
			t.Fatalf("after %s: /readyz does not answer 200", src)
		}
	}
	if status, b := call("POST", "/v1/subscriptions/"+sub.ID+"/transform-preview", `{"data":{"a":1},"transform":".data.a"}`); status != 200 {
		t.Fatalf("a plain program after them: %d %s", status, b)
	}
	// A body of 10,000 nested objects with 64-character keys (680 KB): 400
	// naming the depth, and the hub still up (docs/security.md, "Request
	// bodies"). It once took 3.27 GB.
	key := strings.Repeat("k", 64)
	deep := strings.Repeat(`{"`+key+`":`, 10_000) + "1" + strings.Repeat("}", 10_000)
	if status, b := call("POST", "/v1/subscriptions", deep); status != http.StatusBadRequest || !bytes.Contains(b, []byte("deeper than 64 levels")) {
		t.Fatalf("a 10,000-level body: %d %.300s, want 400 naming the depth", status, b)
	}
	select {
	case err := <-exited:
		t.Fatalf("the hub exited after a 10,000-level body: %v", err)
	default:
	}
	if !ready() {
		t.Fatal("after a 10,000-level body: /readyz does not answer 200")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr())
}
