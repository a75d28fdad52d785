// Package nats publishes attempts to NATS JetStream destinations
// (docs/brokers.md) with nats.go's
// jetstream API: Nats-Msg-Id = the ce-id (the stream's de-duplication), the
// ce-*, X-Lerian-* and webhook-* values as headers, and the stream's PubAck
// before an attempt counts as delivered. One connection per server URL and
// credentials, dropped and dialed again after an error a new connection could
// cure.
package nats

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// Options configure a Publisher.
type Options struct {
	// Dial opens the TCP connection to a server: the SSRF-safe dialer, so
	// a host that resolves to a private address is refused unless private
	// sinks are allowed. Required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Name is the connection name the server shows (default
	// "streaming-hub").
	Name string
	// TLS is the base TLS configuration of tls:// URLs (nil: the system
	// roots).
	TLS    *tls.Config
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // the clock of idle connections; nil means time.Now
}

// Publisher is the destination.Driver for NATS JetStream, shared by the
// process's attempts.
type Publisher struct {
	o     Options
	conns *destination.Pool[*conn]
}

// conn is one server's connection and its JetStream context.
type conn struct {
	nc       *natsgo.Conn
	js       jetstream.JetStream
	notAfter time.Time // of the client certificate (zero: none)
}

// New returns a Publisher.
func New(o Options) (*Publisher, error) {
	if o.Dial == nil {
		return nil, errors.New("nats.Options: Dial is required (the SSRF-safe dialer)")
	}
	if o.Name == "" {
		o.Name = "streaming-hub"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{o: o, conns: destination.NewPool(o.Now, func(c *conn) { c.nc.Close() })}, nil
}

// Send publishes m to t's subject, with Nats-Msg-Id = m.ID and, when t
// names a stream, that stream expected; it returns nil once the stream
// acknowledged the message. A verification (m.Probe) of a destination
// naming a stream first checks that the stream exists.
func (p *Publisher) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	return destination.Result{Err: p.send(ctx, t, m), Sent: sent(t, m)}
}

// sent are the message's headers, for the attempt log: headers(m) and
// those JetStream's publish options add (Nats-Msg-Id, and
// Nats-Expected-Stream when t names a stream).
func sent(t destination.Target, m destination.Message) map[string]string {
	h := headers(m)
	out := make(map[string]string, len(h)+2)
	for k, vs := range h {
		out[k] = strings.Join(vs, ", ")
	}
	out[jetstream.MsgIDHeader] = m.ID
	if t.Stream != "" {
		out[jetstream.ExpectedStreamHeader] = t.Stream
	}
	return out
}

func (p *Publisher) send(ctx context.Context, t destination.Target, m destination.Message) error {
	key := connKey(t)
	var c *conn
	var release func()
	for tries := 0; ; tries++ {
		var err error
		c, release, err = p.conns.Acquire(key, func() (*conn, error) { return p.connect(ctx, t) })
		if errors.Is(err, destination.ErrClosed) {
			return errors.New("nats: the publisher is closed")
		}
		if err != nil {
			return err
		}
		if !c.nc.IsClosed() || tries > 0 {
			break
		}
		// Closed since its last send (the server went away): dial again
		// now rather than fail this attempt.
		release()
		p.conns.Discard(key, c)
	}
	defer release()
	if !c.notAfter.IsZero() && !p.now().Before(c.notAfter) {
		return fmt.Errorf("client certificate expired at %s", c.notAfter.UTC().Format(time.RFC3339))
	}
	if m.Probe && t.Stream != "" {
		if _, err := c.js.Stream(ctx, t.Stream); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("nats: stream %q does not exist", t.Stream)
			}
			return p.failed(key, c, t, err)
		}
	}
	msg := &natsgo.Msg{Subject: t.Subject, Data: m.Body, Header: headers(m)}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(m.ID), jetstream.WithRetryAttempts(1)}
	if t.Stream != "" {
		opts = append(opts, jetstream.WithExpectStream(t.Stream))
	}
	if _, err := c.js.PublishMsg(ctx, msg, opts...); err != nil {
		return p.failed(key, c, t, err)
	}
	return nil
}

// failed describes a publish's err and drops c when a new connection
// could cure it.
func (p *Publisher) failed(key string, c *conn, t destination.Target, err error) error {
	var why string
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("nats: %v", err)
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, natsgo.ErrNoResponders):
		why = fmt.Sprintf("nats: no JetStream stream answered for subject %q (no stream captures it, or JetStream is unavailable)", t.Subject)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, natsgo.ErrTimeout):
		why = "nats: no acknowledgement from the stream within the delivery timeout"
	default:
		why = "nats: publish: " + err.Error()
	}
	if curable(err) && p.conns.Discard(key, c) {
		p.o.Logger.Warn("dropped a NATS destination's connection; the next attempt dials again",
			"host", hostOf(t.URL), "subject", t.Subject, "error", why)
	}
	return errors.New(why)
}

// curable is whether a new connection could cure err: a closed or broken
// connection, no responders (JetStream gone, or a server restarted
// without the stream yet), no answer in time. Not an error of the stream
// about the message (wrong expected stream, too large, no permission).
func curable(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &apiErr):
		return false
	case errors.Is(err, natsgo.ErrMaxPayload), errors.Is(err, natsgo.ErrBadSubject), errors.Is(err, natsgo.ErrPermissionViolation):
		return false
	}
	return true
}

// headers are m's headers, content-type first.
func headers(m destination.Message) natsgo.Header {
	h := natsgo.Header{}
	if m.ContentType != "" {
		h["content-type"] = []string{m.ContentType}
	}
	for k, v := range m.BrokerHeaders() {
		h[k] = []string{v}
	}
	return h
}

// Close closes every connection.
func (p *Publisher) Close() error {
	p.conns.Close()
	return nil
}

func (p *Publisher) now() time.Time {
	if p.o.Now != nil {
		return p.o.Now()
	}
	return time.Now()
}

// Conns is how many connections are kept.
func (p *Publisher) Conns() int { return p.conns.Len() }

// connKey is t's connection's key in the pool: its URL and credentials
// (the password hashed).
func connKey(t destination.Target) string {
	sum := sha256.Sum256([]byte(t.Credentials.Password))
	return t.URL + "|" + t.Credentials.Username + "|" + hex.EncodeToString(sum[:]) + "|" + destination.TLSKey(t)
}

// hostOf is a server URL's host, for logs (never its credentials).
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// dialer is nats.go's CustomDialer over the SSRF-safe dialer, within the
// connecting attempt's context.
type dialer struct {
	ctx  context.Context
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// err is the last dial's error: nats.go answers a failed dial as
	// "no servers available", and the tenant should read why.
	err *error
}

func (d dialer) Dial(network, addr string) (net.Conn, error) {
	conn, err := d.dial(d.ctx, network, addr)
	*d.err = err
	return conn, err
}

// connect dials t's server. The connection does not reconnect on its
// own: once closed it is dropped and the next attempt dials again.
func (p *Publisher) connect(ctx context.Context, t destination.Target) (*conn, error) {
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" {
		return nil, errors.New("nats: bad server URL")
	}
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return nil, errors.New("nats: no time left to connect within the delivery timeout")
	}
	var dialErr error
	opts := []natsgo.Option{
		natsgo.Name(p.o.Name),
		natsgo.NoReconnect(),
		natsgo.Timeout(timeout),
		// Used by Connect only (no reconnects): the attempt's context
		// bounds the dial, as nats.go's Timeout does not for a custom
		// dialer.
		natsgo.SetCustomDialer(dialer{ctx: ctx, dial: p.o.Dial, err: &dialErr}),
		natsgo.NoCallbacksAfterClientClose(),
	}
	if c := t.Credentials; c.Username != "" || c.Password != "" {
		opts = append(opts, natsgo.UserInfo(c.Username, c.Password))
	}
	var notAfter time.Time
	if u.Scheme == "tls" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if p.o.TLS != nil {
			cfg = p.o.TLS.Clone()
		}
		if t.HasTLSSettings() {
			// The destination's own TLS: its client certificate, CAs, version.
			if cfg, err = destination.TLSConfig(t, p.now()); err != nil {
				return nil, err
			}
			if len(cfg.Certificates) > 0 {
				notAfter = cfg.Certificates[0].Leaf.NotAfter
			}
		}
		opts = append(opts, natsgo.Secure(cfg))
	}
	nc, err := natsgo.Connect(u.Scheme+"://"+u.Host, opts...)
	if err != nil && dialErr != nil && errors.Is(err, natsgo.ErrNoServers) {
		err = dialErr
	}
	if err != nil {
		return nil, fmt.Errorf("nats: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: %v", err)
	}
	return &conn{nc: nc, js: js, notAfter: notAfter}, nil
}

// describe is an error as a tenant may read it: without the URL,
// credentials or addresses (destination.Explain).
func describe(err error) string {
	return destination.Describe(err)
}
