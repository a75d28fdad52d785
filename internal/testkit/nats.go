package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSServerBinary is the nats-server the tests start (.ci/run installs
// it); unset STREAMING_HUB_TEST_NATS_SERVER means the first one on PATH,
// then /usr/sbin/nats-server.
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("STREAMING_HUB_TEST_NATS_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	t.Skip("nats-server is not installed: skipping the NATS JetStream tests (.ci/run installs it; or set STREAMING_HUB_TEST_NATS_SERVER)")
	return ""
}

// NATS is a nats-server with JetStream of one test's own, on 127.0.0.1 and
// a free port, its store in a temporary directory; stopped when the test
// ends.
type NATS struct {
	URL  string // nats://127.0.0.1:<port> (tls:// with NewNATSTLS), without credentials
	User string // required of clients when not empty, with Pass
	Pass string
	bin  string
	port int
	dir  string
	pki  *PKI // the server's certificate and the CA that signed it (NewNATSTLS); nil: plaintext
	// verify: clients must present a certificate pki.CA signed
	// (NewNATSMutualTLS).
	verify bool
	cmd    *exec.Cmd
}

// NewNATS starts a nats-server with JetStream (skipping the test when the
// binary is missing). userPass, when given, is the user and password
// clients must present.
func NewNATS(t testing.TB, userPass ...string) *NATS {
	t.Helper()
	return newNATS(t, nil, false, userPass)
}

// NewNATSTLS is NewNATS with TLS required of every client: the server
// presents pki.Server (signed by pki.CA, valid for 127.0.0.1), and URL is
// tls://. The test's own clients (JetStream, CreateStream, Messages)
// trust pki.CA.
func NewNATSTLS(t testing.TB, pki *PKI, userPass ...string) *NATS {
	t.Helper()
	return newNATS(t, pki, false, userPass)
}

// NewNATSMutualTLS is NewNATSTLS with a client certificate signed by
// pki.CA required of every client (--tlsverify); the test's own clients
// present pki.Client.
func NewNATSMutualTLS(t testing.TB, pki *PKI, userPass ...string) *NATS {
	t.Helper()
	return newNATS(t, pki, true, userPass)
}

func newNATS(t testing.TB, pki *PKI, verify bool, userPass []string) *NATS {
	t.Helper()
	n := &NATS{bin: NATSServerBinary(t), dir: t.TempDir(), pki: pki, verify: verify}
	if len(userPass) == 2 {
		n.User, n.Pass = userPass[0], userPass[1]
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	scheme := "nats"
	if pki != nil {
		scheme = "tls"
	}
	n.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, n.port)
	n.Start(t)
	t.Cleanup(n.stop)
	return n
}

// Start starts the server (again, after Stop: the same port and store).
func (n *NATS) Start(t testing.TB) {
	t.Helper()
	args := []string{"-js", "-sd", n.dir, "-a", "127.0.0.1", "-p", strconv.Itoa(n.port)}
	if n.User != "" {
		args = append(args, "--user", n.User, "--pass", n.Pass)
	}
	if n.pki != nil {
		args = append(args, "--tls", "--tlscert", n.pki.Server.CertFile, "--tlskey", n.pki.Server.KeyFile)
		if n.verify {
			args = append(args, "--tlsverify", "--tlscacert", n.pki.CA.CertFile)
		}
	}
	n.cmd = exec.Command(n.bin, args...)
	n.cmd.Stdout, n.cmd.Stderr = os.Stderr, os.Stderr
	if os.Getenv("STREAMING_HUB_TEST_NATS_LOG") == "" {
		n.cmd.Stdout, n.cmd.Stderr = nil, nil
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	WaitFor(t, "nats-server to answer with JetStream", func() bool {
		nc, err := natsgo.Connect(n.URL, n.clientOptions(natsgo.Timeout(time.Second))...)
		if err != nil {
			return false
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return false
		}
		_, err = js.AccountInfo(t.Context())
		return err == nil
	})
}

// Stop stops the server; Start starts it again.
func (n *NATS) Stop(t testing.TB) {
	t.Helper()
	n.stop()
}

func (n *NATS) stop() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	n.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-done
	}
	n.cmd = nil
}

// clientOptions are the options of the test's own clients: the
// credentials and, with TLS, the CA trusted (and the client certificate,
// when the server requires one).
func (n *NATS) clientOptions(more ...natsgo.Option) []natsgo.Option {
	opts := append([]natsgo.Option{natsgo.UserInfo(n.User, n.Pass)}, more...)
	if n.pki != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(n.pki.CA.CertPEM)
		c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if n.verify {
			c.Certificates = []tls.Certificate{n.pki.Client.TLS}
		}
		opts = append(opts, natsgo.Secure(c))
	}
	return opts
}

// JetStream is a client of the test's own.
func (n *NATS) JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(n.URL, n.clientOptions()...)
	if err != nil {
		t.Fatalf("nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// CreateStream creates a stream capturing subjects.
func (n *NATS) CreateStream(t testing.TB, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	s, err := n.JetStream(t).CreateStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: subjects, Duplicates: time.Minute})
	if err != nil {
		t.Fatalf("nats: create stream %s: %v", name, err)
	}
	return s
}

// Messages are the messages stored in stream name, oldest first.
func (n *NATS) Messages(t testing.TB, name string) []*jetstream.RawStreamMsg {
	t.Helper()
	js := n.JetStream(t)
	s, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatalf("nats: stream %s: %v", name, err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			continue
		}
		out = append(out, m)
	}
	return out
}
