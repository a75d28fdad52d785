package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tinyproxy is a tinyproxy of one test's own on 127.0.0.1 (Debian's
// package: .ci/run installs it): an egress proxy that allows CONNECT to
// the ports it was started with, and only those. Stopped when the test
// ends.
type Tinyproxy struct {
	Addr string // 127.0.0.1:<port>
	log  *Buffer
}

// TinyproxyOptions configure StartTinyproxy.
type TinyproxyOptions struct {
	ConnectPorts []int  // the ports CONNECT may reach
	User, Pass   string // BasicAuth, when set
}

// StartTinyproxy starts tinyproxy in the foreground, its log in memory;
// without the binary the test is skipped.
func StartTinyproxy(t testing.TB, o TinyproxyOptions) *Tinyproxy {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/tinyproxy"); serr != nil {
			t.Skip("tinyproxy is not installed: skipping the egress proxy tests (.ci/run installs it: apt-get install -y tinyproxy)")
		}
		bin = "/usr/bin/tinyproxy"
	}
	port := FreePort(t)
	var conf strings.Builder
	fmt.Fprintf(&conf, "Port %d\nListen 127.0.0.1\nTimeout 30\nLogLevel Info\nMaxClients 50\nAllow 127.0.0.1\nDisableViaHeader Yes\n", port)
	for _, p := range o.ConnectPorts {
		fmt.Fprintf(&conf, "ConnectPort %d\n", p)
	}
	if o.User != "" {
		fmt.Fprintf(&conf, "BasicAuth %s %s\n", o.User, o.Pass)
	}
	path := filepath.Join(t.TempDir(), "tinyproxy.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tp := &Tinyproxy{Addr: fmt.Sprintf("127.0.0.1:%d", port), log: &Buffer{}}
	cmd := exec.Command(bin, "-d", "-c", path)
	cmd.Stdout, cmd.Stderr = tp.log, tp.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("tinyproxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("tinyproxy's log:\n%s", tp.log.String())
		}
	})
	deadline := time.Now().Add(Patience)
	for {
		c, err := net.Dial("tcp", tp.Addr)
		if err == nil {
			c.Close()
			return tp
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not listen on %s: %v\n%s", tp.Addr, err, tp.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CONNECTs is how many CONNECT requests to target (host:port) the proxy
// logged.
func (p *Tinyproxy) CONNECTs(target string) int {
	return strings.Count(p.log.String(), "CONNECT "+target+" ")
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
