// Package kafka produces attempts to tenants' Kafka destinations
// (docs/brokers.md) with franz-go:
// binary-mode CloudEvents keyed by tenant, acks=all from an idempotent
// producer, TLS and SASL through internal/kafkasec, one client per
// destination, dropped and dialed again after an error a new client could
// cure.
package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
)

// Options configure a Producer.
type Options struct {
	// Dial opens connections to brokers: the SSRF-safe dialer. Required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds one record's delivery (the delivery timeout).
	Timeout time.Duration
	// CACert is PEM of the CAs to trust instead of the system roots: nil
	// in the hub (tenants' brokers are verified against the system
	// roots); tests trust their own CA.
	CACert []byte
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // the clock of idle clients; nil means time.Now
	// AutoCreateTopics asks the broker to create a topic a record names
	// when it does not exist yet (if the broker allows it): dev mode only,
	// whose embedded broker does, so a Kafka destination there needs no
	// topic made first. Never on a tenant's cluster in production.
	AutoCreateTopics bool
}

// Producer is the destination.Driver for Kafka: one client per destination
// (its brokers, TLS and credentials), shared by the process's attempts.
type Producer struct {
	o       Options
	clients *destination.Pool[*client]
}

// client is one destination's franz-go client and why its latest
// connection failed, for the attempt's error.
type client struct {
	*kgo.Client
	notAfter time.Time // of the client certificate (zero: none)
	mu       sync.Mutex
	lastErr  error
}

// OnBrokerConnect is franz-go's hook after each connection attempt.
func (c *client) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

func (c *client) connectErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// New returns a Producer.
func New(o Options) (*Producer, error) {
	if o.Dial == nil {
		return nil, errors.New("kafka.Options: Dial is required (the SSRF-safe dialer)")
	}
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("kafka.Options: Timeout must be positive, got %v", o.Timeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Producer{o: o, clients: destination.NewPool(o.Now, func(c *client) { c.Close() })}, nil
}

// Send produces m to t's topic, key = the tenant, as a binary-mode
// CloudEvent (the ce-*, X-Lerian-* and webhook-* headers, content-type),
// and waits for the acks=all acknowledgement. A failure a new client
// could cure drops t's client: this attempt fails, the next dials again.
func (p *Producer) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	return destination.Result{Err: p.send(ctx, t, m), Sent: sent(m)}
}

// sent are the record's headers, for the attempt log.
func sent(m destination.Message) map[string]string {
	hs := headers(m)
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Key] = string(h.Value)
	}
	return out
}

func (p *Producer) send(ctx context.Context, t destination.Target, m destination.Message) error {
	key := clientKey(t)
	cl, release, err := p.clients.Acquire(key, func() (*client, error) { return p.open(t) })
	if errors.Is(err, destination.ErrClosed) {
		err = errors.New("kafka: the producer is closed")
	}
	if err != nil {
		return err
	}
	defer release()
	if !cl.notAfter.IsZero() && !p.now().Before(cl.notAfter) {
		return fmt.Errorf("client certificate expired at %s", cl.notAfter.UTC().Format(time.RFC3339))
	}
	rec := &kgo.Record{Topic: t.Topic, Key: []byte(m.TenantID), Value: m.Body, Headers: headers(m)}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		why := "kafka: produce: " + err.Error()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout) {
			why = "kafka: no acknowledgement from the brokers within the delivery timeout"
		}
		cerr := cl.connectErr()
		if cerr != nil {
			why += " (the last connection to a broker failed: " + destination.Describe(cerr) + ")"
		}
		if curable(err) && p.clients.Discard(key, cl) {
			p.o.Logger.Warn("dropped a Kafka destination's client; the next attempt dials again",
				"brokers", strings.Join(t.Brokers, ","), "topic", t.Topic, "error", why)
		}
		if cerr != nil {
			// The connection's error under why: destination.Explain
			// names its kind and the broker as the tenant wrote it.
			return &destination.TenantError{Text: why, Err: cerr}
		}
		return errors.New(why)
	}
	return nil
}

// curable is whether a new client could cure a produce's err: all but the
// hub's own cancellation and the Kafka errors about the record or the
// client's rights (too large, invalid, not authorized), which come back
// the same on any connection. So: a topic with a new id (the cluster
// replaced, or the topic deleted and created again, which franz-go never
// adopts), unknown topics or partitions, leader and metadata errors,
// producer ids the brokers forgot, broken connections, and a client that
// gave no answer within the delivery timeout.
func curable(err error) bool {
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		return true // wedged; the timeout wraps the last error, whatever it was
	}
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		return true // the client's own: connections, producer id, closed
	}
	switch ke {
	case kerr.UnknownProducerID, kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping:
		return true // the idempotent producer's state, which a new cluster does not have
	}
	return ke.Retriable
}

// headers are m's headers in a stable order, content-type first.
func headers(m destination.Message) []kgo.RecordHeader {
	out := []kgo.RecordHeader{{Key: "content-type", Value: []byte(m.ContentType)}}
	for k, v := range m.BrokerHeaders() {
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return out
}

// Close closes every client.
func (p *Producer) Close() error {
	p.clients.Close()
	return nil
}

func (p *Producer) now() time.Time {
	if p.o.Now != nil {
		return p.o.Now()
	}
	return time.Now()
}

// Clients is how many clients are kept (one per destination and
// credentials in use; idle ones are closed after destination.IdleAfter,
// dropped ones once their sends are over).
func (p *Producer) Clients() int { return p.clients.Len() }

// clientKey is t's client's key in the pool: its brokers, TLS and
// credentials (the password hashed).
func clientKey(t destination.Target) string {
	sum := sha256.Sum256([]byte(t.Credentials.Password))
	return strings.Join([]string{strings.Join(t.Brokers, ","), fmt.Sprint(t.TLS), t.SASLMechanism, t.SASLUsername, hex.EncodeToString(sum[:]), destination.TLSKey(t)}, "|")
}

// open makes t's client.
func (p *Producer) open(t destination.Target) (*client, error) {
	sec, err := kafkasec.ForDestination(t.TLS, p.o.CACert, t.SASLMechanism, t.SASLUsername, t.Credentials.Password, p.o.Logger)
	c := &client{}
	if t.TLS && t.HasTLSSettings() {
		// The destination's own TLS: its client certificate, CAs, version.
		tc, terr := destination.TLSConfig(t, p.now())
		if terr != nil {
			return nil, terr
		}
		if len(tc.Certificates) > 0 {
			c.notAfter = tc.Certificates[0].Leaf.NotAfter
		}
		sec, err = kafkasec.ForDestinationTLS(tc, t.SASLMechanism, t.SASLUsername, t.Credentials.Password, p.o.Logger)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: %v", err)
	}
	opts := append(sec.OptsWithDialer(p.o.Dial),
		kgo.WithHooks(c),
		kgo.SeedBrokers(t.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with the idempotent producer (franz-go's default)
		kgo.RecordDeliveryTimeout(p.o.Timeout),
		kgo.ProduceRequestTimeout(p.o.Timeout),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(10000),
	)
	if p.o.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if c.Client, err = kgo.NewClient(opts...); err != nil {
		return nil, fmt.Errorf("kafka: %v", err)
	}
	return c, nil
}
