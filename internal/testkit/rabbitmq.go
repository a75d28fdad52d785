package testkit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// EnvAMQP names the RabbitMQ tests use; unset means the machine's own.
const EnvAMQP = "STREAMING_HUB_TEST_AMQP_URL"

// DefaultAMQPURL is the machine's RabbitMQ (.ci/run starts it).
const DefaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"

// AMQPURL returns the test RabbitMQ's URL; it skips the test when nothing
// answers there.
func AMQPURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvAMQP)
	if raw == "" {
		raw = DefaultAMQPURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", EnvAMQP, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5672")
	}
	conn, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		t.Skipf("RabbitMQ is not reachable at %s (%v): skipping (set %s; .ci/run starts one)", host, err, EnvAMQP)
	}
	conn.Close()
	return raw
}

// Rabbit is one test's exchange and queue on the test RabbitMQ, with a
// connection of the test's own to read the queue; deleted when the test
// ends.
type Rabbit struct {
	URL      string
	Exchange string // a topic exchange
	Queue    string // bound to Exchange with the binding key given
	ch       *amqp.Channel
}

// NewRabbit declares a uniquely named topic exchange and a queue bound to
// it with bindingKey ("#": everything).
func NewRabbit(t testing.TB, bindingKey string) *Rabbit {
	t.Helper()
	raw := AMQPURL(t)
	conn, err := amqp.Dial(raw)
	if err != nil {
		t.Fatalf("rabbitmq: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("rabbitmq: %v", err)
	}
	r := &Rabbit{URL: raw, Exchange: "test.x." + UniqueName(), Queue: "test.q." + UniqueName(), ch: ch}
	if err := ch.ExchangeDeclare(r.Exchange, "topic", false, false, false, false, nil); err != nil {
		t.Fatalf("rabbitmq: declare exchange: %v", err)
	}
	if _, err := ch.QueueDeclare(r.Queue, false, false, false, false, nil); err != nil {
		t.Fatalf("rabbitmq: declare queue: %v", err)
	}
	if err := ch.QueueBind(r.Queue, bindingKey, r.Exchange, false, nil); err != nil {
		t.Fatalf("rabbitmq: bind: %v", err)
	}
	t.Cleanup(func() {
		ch.QueueDelete(r.Queue, false, false, false)
		ch.ExchangeDelete(r.Exchange, false, false)
		conn.Close()
	})
	return r
}

// Take reads every message waiting in the queue now (acknowledged).
func (r *Rabbit) Take(t testing.TB) []amqp.Delivery {
	t.Helper()
	var out []amqp.Delivery
	for {
		d, ok, err := r.ch.Get(r.Queue, true)
		if err != nil {
			t.Fatalf("rabbitmq: get: %v", err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// UniqueName is a random name part for brokers' shared namespaces.
func UniqueName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AMQPConnections lists, with rabbitmqctl, the connections whose
// client-provided connection_name is name.
func AMQPConnections(t testing.TB, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rabbitmqctl", "list_connections", "-q", "--no-table-headers", "pid", "client_properties").CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl list_connections: %v: %s", err, out)
	}
	var conns []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		conn, props, ok := strings.Cut(sc.Text(), "\t")
		if ok && strings.Contains(props, `"`+name+`"`) {
			conns = append(conns, conn)
		}
	}
	return conns
}

// CloseAMQPConnections closes, with rabbitmqctl, every connection whose
// client-provided connection_name is name, and returns how many it closed.
func CloseAMQPConnections(t testing.TB, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	conns := AMQPConnections(t, name)
	for _, conn := range conns {
		if out, err := exec.CommandContext(ctx, "rabbitmqctl", "close_connection", conn, "closed by a test").CombinedOutput(); err != nil {
			t.Fatalf("rabbitmqctl close_connection: %v: %s", err, out)
		}
	}
	return len(conns)
}
