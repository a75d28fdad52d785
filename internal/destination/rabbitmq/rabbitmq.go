// Package rabbitmq publishes attempts to RabbitMQ destinations
// (docs/brokers.md) with amqp091-go:
// persistent messages, publisher confirms, mandatory routing, one connection
// and channel per broker URL, dialed again after they failed (closed, a
// channel error, no confirm in time).
package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// Options configure a Publisher.
type Options struct {
	// Dial opens the TCP connection to a broker: the SSRF-safe dialer, so
	// a broker host that resolves to a private address is refused unless
	// private sinks are allowed. Required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Name is the connection_name the hub's connections show in RabbitMQ's
	// management (default "streaming-hub").
	Name string
	// TLS is the base TLS configuration of amqps (nil: the system roots).
	TLS    *tls.Config
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // the clock of idle connections; nil means time.Now
}

// Publisher is the destination.Driver for RabbitMQ, shared by the process's
// attempts: one connection and one confirming channel per broker URL.
type Publisher struct {
	o     Options
	links *destination.Pool[*link] // by full URL (with credentials)
}

// New returns a Publisher.
func New(o Options) (*Publisher, error) {
	if o.Dial == nil {
		return nil, errors.New("rabbitmq.Options: Dial is required (the SSRF-safe dialer)")
	}
	if o.Name == "" {
		o.Name = "streaming-hub"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{o: o, links: destination.NewPool(o.Now, (*link).close)}, nil
}

// Send publishes m to t's exchange with t's routing key (templated) as a
// persistent, mandatory message and waits for the broker's confirm. A
// message the broker returns (no queue bound) or nacks is a failure; a
// verification (m.Probe) is not mandatory.
func (p *Publisher) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	return destination.Result{Err: p.send(ctx, t, m), Sent: sent(publishing(m))}
}

// publishing is the AMQP message of m: persistent, its headers and
// properties set.
func publishing(m destination.Message) amqp.Publishing {
	headers := make(amqp.Table, len(m.Headers))
	for k, v := range m.BrokerHeaders() {
		headers[k] = v
	}
	return amqp.Publishing{
		Headers:      headers,
		ContentType:  m.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    m.ID,
		Type:         m.EventType,
		Timestamp:    m.Time,
		AppId:        "streaming-hub",
		Body:         m.Body,
	}
}

// sent are pub's headers and the properties the hub sets (by their AMQP
// names: content_type, delivery_mode, message_id, type, timestamp,
// app_id), for the attempt log.
func sent(pub amqp.Publishing) map[string]string {
	out := make(map[string]string, len(pub.Headers)+6)
	for k, v := range pub.Headers {
		out[k] = fmt.Sprint(v)
	}
	out["content_type"] = pub.ContentType
	out["delivery_mode"] = strconv.Itoa(int(pub.DeliveryMode))
	out["message_id"] = pub.MessageId
	out["type"] = pub.Type
	out["timestamp"] = strconv.FormatInt(pub.Timestamp.Unix(), 10)
	out["app_id"] = pub.AppId
	return out
}

func (p *Publisher) send(ctx context.Context, t destination.Target, m destination.Message) error {
	raw, err := brokerURL(t)
	if err != nil {
		return err
	}
	key := raw
	if k := destination.TLSKey(t); k != "" {
		key += "|" + k
	}
	l, release, err := p.links.Acquire(key, func() (*link, error) {
		l := &link{url: raw, key: key, host: hostOf(t.URL), p: p}
		if t.HasTLSSettings() && strings.HasPrefix(strings.ToLower(t.URL), "amqps:") {
			// The destination's own TLS: its client certificate, CAs, version.
			tc, err := destination.TLSConfig(t, p.now())
			if err != nil {
				return nil, err
			}
			l.tls = tc
			if len(tc.Certificates) > 0 {
				l.notAfter = tc.Certificates[0].Leaf.NotAfter
			}
		}
		return l, nil
	})
	if errors.Is(err, destination.ErrClosed) {
		err = errors.New("rabbitmq: the publisher is closed")
	}
	if err != nil {
		return err
	}
	defer release()
	if !l.notAfter.IsZero() && !p.now().Before(l.notAfter) {
		return fmt.Errorf("client certificate expired at %s", l.notAfter.UTC().Format(time.RFC3339))
	}
	pub := publishing(m)
	// Mandatory, so an unroutable message comes back as a failure; a
	// verification passes on the confirm wherever it goes.
	return l.publish(ctx, t.Exchange, destination.RoutingKey(t.RoutingKey, m.EventType, m.TenantID), !m.Probe, pub)
}

// Close closes every connection.
func (p *Publisher) Close() error {
	p.links.Close()
	return nil
}

// Links is how many broker connections are kept (one per broker URL and
// credentials in use; idle ones are closed after destination.IdleAfter,
// failed ones once their sends are over).
func (p *Publisher) Links() int { return p.links.Len() }

func (p *Publisher) now() time.Time {
	if p.o.Now != nil {
		return p.o.Now()
	}
	return time.Now()
}

// brokerURL is t's URL with its sealed userinfo put back.
func brokerURL(t destination.Target) (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "", fmt.Errorf("rabbitmq: bad broker URL")
	}
	if c := t.Credentials; c.Username != "" || c.Password != "" {
		u.User = url.UserPassword(c.Username, c.Password)
	}
	return u.String(), nil
}

// hostOf is a broker URL's host, for logs (never its credentials).
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// closeWait bounds the close handshake of a connection the pool closes:
// one that stopped answering must not hold a goroutine until the
// heartbeat gives up on it.
const closeWait = 5 * time.Second

// link is one broker URL's connection and confirming channel, dialed by
// its first publish (again, while dialing fails). Once they fail (the
// broker or the network closed them, a channel error, no confirm within
// the delivery timeout) the link is discarded from the pool: the attempt
// that met the failure fails, the next one gets a new link and dials.
type link struct {
	url  string
	key  string // in the pool: the URL and the TLS settings
	host string
	p    *Publisher
	// tls is the destination's own TLS (nil: Options.TLS) and notAfter
	// when its client certificate expires (zero: none).
	tls      *tls.Config
	notAfter time.Time

	mu   sync.Mutex // serializes dialing and publishing
	sess *session
}

func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		l.sess.conn.CloseDeadline(time.Now().Add(closeWait))
	}
}

// drop discards l from the pool, once.
func (l *link) drop(why error) {
	if l.p.links.Discard(l.key, l) {
		l.p.o.Logger.Warn("dropped a RabbitMQ destination's connection; the next attempt dials again",
			"host", l.host, "error", why.Error())
	}
}

func (l *link) publish(ctx context.Context, exchange, key string, mandatory bool, pub amqp.Publishing) error {
	l.mu.Lock()
	if l.sess == nil {
		s, err := l.connect(ctx)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		l.sess = s
	}
	s := l.sess
	w := s.expect(s.ch.GetNextPublishSeqNo(), deliveryOf(pub))
	err := s.ch.PublishWithContext(ctx, exchange, key, mandatory, false, pub)
	l.mu.Unlock()
	if err != nil {
		s.forget(w)
		err = fmt.Errorf("rabbitmq: publish: %w", describe(err))
		l.drop(err) // a closed channel or connection, or a broken socket
		return err
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		s.forget(w)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("rabbitmq: %v", ctx.Err())
		}
		err := errors.New("rabbitmq: no confirm from the broker within the delivery timeout")
		l.drop(err) // a connection that stopped answering waits for its heartbeat otherwise
		return err
	}
}

// deliveryOf is what tells one publish from another in a returned
// message: the attempt's delivery id.
func deliveryOf(pub amqp.Publishing) string {
	if v, ok := pub.Headers["X-Lerian-Delivery-Id"].(string); ok {
		return v
	}
	return pub.MessageId
}

// connect dials the broker (through the SSRF-safe dialer), opens a
// channel in confirm mode and starts its listener.
func (l *link) connect(ctx context.Context) (*session, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	cfg := amqp.Config{
		Properties: amqp.Table{"connection_name": l.p.o.Name, "product": "streaming-hub"},
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Dial: func(network, addr string) (net.Conn, error) {
			conn, err := l.p.o.Dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// TLS and AMQP handshakes within the attempt's time; amqp091
			// clears the deadline once the connection is open.
			return conn, conn.SetDeadline(deadline)
		},
	}
	if l.p.o.TLS != nil {
		cfg.TLSClientConfig = l.p.o.TLS.Clone()
	}
	if l.tls != nil {
		cfg.TLSClientConfig = l.tls.Clone()
	}
	conn, err := amqp.DialConfig(l.url, cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: connect: %w", describe(err))
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq: open a confirming channel: %w", describe(err))
	}
	s := &session{conn: conn, ch: ch, waiting: make(map[uint64]*waiter), byDelivery: make(map[string]*waiter)}
	// Unbuffered, and one goroutine reads both: amqp091 hands a return to
	// its listener before it reads the confirm that follows it, so a
	// returned message is always known before its ack.
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation))
	returns := ch.NotifyReturn(make(chan amqp.Return))
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	go s.listen(confirms, returns, closed, l.drop)
	return s, nil
}

// session is one connection and channel: the publishes awaiting their
// confirm, by delivery tag.
type session struct {
	conn *amqp.Connection
	ch   *amqp.Channel

	mu         sync.Mutex
	waiting    map[uint64]*waiter
	byDelivery map[string]*waiter
	gone       error // set once the channel closed
}

type waiter struct {
	tag      uint64
	delivery string
	returned string // the broker's reply text, when it returned the message
	done     chan error
}

func (s *session) expect(tag uint64, delivery string) *waiter {
	w := &waiter{tag: tag, delivery: delivery, done: make(chan error, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone != nil {
		w.done <- s.gone
		return w
	}
	s.waiting[tag] = w
	s.byDelivery[delivery] = w
	return w
}

func (s *session) forget(w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[w.tag] == w {
		delete(s.waiting, w.tag)
	}
	if s.byDelivery[w.delivery] == w {
		delete(s.byDelivery, w.delivery)
	}
}

// listen hands confirms and returns to their publishes; once the channel
// closes it drops its link (before failing the publishes waiting on it, so
// their next attempts find a new one) and fails them.
func (s *session) listen(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closed <-chan *amqp.Error, drop func(error)) {
	for confirms != nil || returns != nil {
		select {
		case c, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			s.confirmed(c)
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			s.mu.Lock()
			v, _ := r.Headers["X-Lerian-Delivery-Id"].(string)
			if v == "" {
				v = r.MessageId
			}
			if w := s.byDelivery[v]; w != nil {
				w.returned = fmt.Sprintf("%d %s", r.ReplyCode, r.ReplyText)
			}
			s.mu.Unlock()
		}
	}
	why := errors.New("rabbitmq: the broker closed the connection before confirming")
	select {
	case e := <-closed:
		if e != nil {
			why = fmt.Errorf("rabbitmq: the broker closed the channel before confirming: %w", describe(e))
		}
	default:
	}
	drop(why)
	s.mu.Lock()
	s.gone = why
	for tag, w := range s.waiting {
		w.done <- why
		delete(s.waiting, tag)
	}
	s.byDelivery = map[string]*waiter{}
	s.mu.Unlock()
	s.conn.Close() // a closed channel's connection is not reused either
}

func (s *session) confirmed(c amqp.Confirmation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting[c.DeliveryTag]
	if w == nil {
		return // timed out meanwhile
	}
	delete(s.waiting, c.DeliveryTag)
	if s.byDelivery[w.delivery] == w {
		delete(s.byDelivery, w.delivery)
	}
	switch {
	case w.returned != "":
		w.done <- fmt.Errorf("rabbitmq: unroutable: the broker returned the message (%s): no queue is bound for its routing key", w.returned)
	case !c.Ack:
		w.done <- errors.New("rabbitmq: the broker refused the message (nack)")
	default:
		w.done <- nil
	}
}

// describe is an AMQP error without the URL or credentials; a network
// error stays itself, for destination.Explain to name it as the tenant
// wrote the destination.
func describe(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("%d %s", ae.Code, ae.Reason)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
