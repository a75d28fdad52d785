package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// MotoRegion is the region the tests' AWS resources live in.
const MotoRegion = "us-east-1"

// Moto is a moto server of one test's own (`moto_server`, the AWS APIs on
// loopback: STS, SQS, SNS, EventBridge, Kinesis), on 127.0.0.1 and a free
// port; stopped when the test ends.
type Moto struct {
	URL string // http://127.0.0.1:<port>
	t   testing.TB
}

// MotoServerBinary is the moto_server the tests start (.ci/run installs
// it with pip); the test skips, saying so, when there is none.
func MotoServerBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed: skipping the AWS destination tests (pip install 'moto[server]'; .ci/run tries to)")
	}
	return p
}

// NewMoto starts a moto server (skipping the test when moto_server is
// missing) and waits until it answers. env is added to the server's
// environment: INITIAL_NO_AUTH_ACTION_COUNT=n has it check every request
// after the first n against its IAM users, roles and policies, as AWS
// does (access denied included).
func NewMoto(t testing.TB, env ...string) *Moto {
	t.Helper()
	bin := MotoServerBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// No AWS settings of the machine's reach the server.
	// Its recorder's file goes in the test's temporary directory, never
	// the package's.
	dir := t.TempDir()
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"MOTO_RECORDER_FILEPATH="+filepath.Join(dir, "moto_recording")), env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("moto_server: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its own process group: only what it started
		<-done
	})
	m := &Moto{URL: fmt.Sprintf("http://127.0.0.1:%d", port), t: t}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(m.URL + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		select {
		case <-done:
			t.Fatalf("moto_server exited: %s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer on %s within 60s: %v\n%s", m.URL, err, out.String())
		}
	}
}

// HubConfig is the hub's own AWS configuration pointed at the server, as
// AWS_ENDPOINT_URL would: static credentials of the hub's account (moto's
// default, 123456789012), region MotoRegion, no shared files.
func (m *Moto) HubConfig() aws.Config {
	return aws.Config{
		Region:       MotoRegion,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSTREAMINGHUBHUB", "hub-secret", ""),
		BaseEndpoint: aws.String(m.URL),
	}
}

// TenantConfig is a configuration acting in the account of role (as the
// tenant, making their queue, topic, bus or stream): moto gives an
// assumed role's credentials the role's account.
func (m *Moto) TenantConfig(role string) aws.Config {
	m.t.Helper()
	out, err := sts.NewFromConfig(m.HubConfig()).AssumeRole(context.Background(), &sts.AssumeRoleInput{
		RoleArn: aws.String(role), RoleSessionName: aws.String("tenant-setup")})
	if err != nil {
		m.t.Fatalf("moto: AssumeRole %s: %v", role, err)
	}
	c := out.Credentials
	cfg := m.HubConfig()
	cfg.Credentials = credentials.NewStaticCredentialsProvider(*c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken)
	return cfg
}

// MotoRequest is one request the server recorded.
type MotoRequest struct {
	Method  string
	URL     string
	Headers map[string]string
	Body    string
}

// StartRecording makes the server record every request from now on
// (moto's recorder, POST /moto-api/recorder/start-recording).
func (m *Moto) StartRecording() {
	m.t.Helper()
	for _, op := range []string{"reset-recording", "start-recording"} {
		resp, err := http.Post(m.URL+"/moto-api/recorder/"+op, "", nil)
		if err != nil {
			m.t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// Recording is every request recorded since StartRecording (GET
// /moto-api/recorder/download-recording).
func (m *Moto) Recording() []MotoRequest {
	m.t.Helper()
	resp, err := http.Get(m.URL + "/moto-api/recorder/download-recording")
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []MotoRequest
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r struct {
			Method      string            `json:"method"`
			URL         string            `json:"url"`
			Headers     map[string]string `json:"headers"`
			Body        string            `json:"body"`
			BodyEncoded bool              `json:"body_encoded"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			m.t.Fatalf("moto recording: %v: %s", err, line)
		}
		body := r.Body
		if r.BodyEncoded {
			b, err := base64.StdEncoding.DecodeString(r.Body)
			if err != nil {
				m.t.Fatalf("moto recording body: %v", err)
			}
			body = string(b)
		}
		out = append(out, MotoRequest{Method: r.Method, URL: r.URL, Headers: r.Headers, Body: body})
	}
	if err := sc.Err(); err != nil {
		m.t.Fatal(err)
	}
	return out
}

// AssumeRoleCall is one sts:AssumeRole the server saw.
type AssumeRoleCall struct {
	RoleArn, ExternalId, RoleSessionName string
	AccessKey                            string // the access key that signed the request
}

// AssumeRoleCalls are the AssumeRole requests recorded since
// StartRecording.
func (m *Moto) AssumeRoleCalls() []AssumeRoleCall {
	var out []AssumeRoleCall
	for _, r := range m.Recording() {
		v, err := url.ParseQuery(r.Body)
		if err != nil || v.Get("Action") != "AssumeRole" {
			continue
		}
		c := AssumeRoleCall{RoleArn: v.Get("RoleArn"), ExternalId: v.Get("ExternalId"), RoleSessionName: v.Get("RoleSessionName")}
		if _, cred, ok := strings.Cut(r.Headers["Authorization"], "Credential="); ok {
			c.AccessKey, _, _ = strings.Cut(cred, "/")
		}
		out = append(out, c)
	}
	return out
}
