// Package pubsub publishes attempts to Google Cloud Pub/Sub destinations
// (docs/brokers.md) with the official
// client library: the CloudEvent in Pub/Sub's binary mode (message data = the
// body; attributes = the ce-*, X-Lerian-* and webhook-* values and
// content-type), ordering key = the tenant, and the server's message ID
// before an attempt counts as delivered. One client and publisher per
// destination (project, topic and service account), kept and reused.
//
// PUBSUB_EMULATOR_HOST, when set, sends every destination to that
// emulator, in plaintext and without credentials (the client library
// honours it): for local use only.
package pubsub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// DelayThreshold is how long a publisher gathers messages into one
// request: attempts wait for their result, so short (the library's
// default is 10 ms).
const DelayThreshold = time.Millisecond

// Options configure a Publisher.
type Options struct {
	// Timeout bounds one publish request, retries included (the delivery
	// timeout; default 15 s). An attempt's context bounds its wait.
	Timeout time.Duration
	// ClientOptions are added to every client's, after the credentials:
	// a test's server (pstest: option.WithEndpoint, insecure transport
	// credentials and option.WithoutAuthentication, with Insecure).
	ClientOptions []option.ClientOption
	// Insecure leaves the service account out of the clients: for a
	// server that takes none (the fake, an emulator).
	Insecure bool
	Logger   *slog.Logger     // nil discards
	Now      func() time.Time // the clock of idle clients; nil means time.Now
}

// Publisher is the destination.Driver for Pub/Sub, shared by the process's
// attempts.
type Publisher struct {
	o       Options
	clients *destination.Pool[*client]
}

// client is one destination's client and its topic's publisher, with
// message ordering enabled.
type client struct {
	c   *pubsub.Client
	pub *pubsub.Publisher
}

// New returns a Publisher.
func New(o Options) (*Publisher, error) {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{o: o, clients: destination.NewPool(o.Now, func(c *client) {
		c.pub.Stop()
		c.c.Close()
	})}, nil
}

// Send publishes m to t's topic with ordering key = the tenant; it
// succeeds once the server gave it a message ID; ctx bounds the wait.
// A verification (m.Probe) is published the same way: a topic that does
// not exist fails it, naming the topic.
func (p *Publisher) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	return destination.Result{Err: p.send(ctx, t, m), Sent: attributes(m)}
}

func (p *Publisher) send(ctx context.Context, t destination.Target, m destination.Message) error {
	if t.Project == "" || t.Topic == "" {
		return errors.New("pubsub: the destination has no project or topic")
	}
	if !p.o.Insecure {
		// The API checked the key when it was given; checked again
		// here, as what the hub follows (token_uri) is in it.
		if err := hub.ValidatePubSub(t.Destination, t.Credentials.ServiceAccount); err != nil {
			return fmt.Errorf("pubsub: %v", err)
		}
	}
	key := clientKey(t)
	c, release, err := p.clients.Acquire(key, func() (*client, error) { return p.open(t) })
	if errors.Is(err, destination.ErrClosed) {
		return errors.New("pubsub: the publisher is closed")
	}
	if err != nil {
		return err
	}
	defer release()
	res := c.pub.Publish(ctx, &pubsub.Message{Data: m.Body, Attributes: attributes(m), OrderingKey: m.TenantID})
	id, err := res.Get(ctx)
	if err == nil && id == "" {
		err = errors.New("no message ID in the server's answer")
	}
	if err != nil {
		return p.failed(ctx, key, c, t, m.TenantID, res, err)
	}
	return nil
}

// failed describes a publish's err. The publisher pauses an ordering key
// after an error (later messages of the key must not overtake the one
// that failed); the hub retries that one itself, so the key is resumed
// at once, or, when the attempt stopped waiting first, once the publish
// is over.
func (p *Publisher) failed(ctx context.Context, key string, c *client, t destination.Target, tenant string, res *pubsub.PublishResult, err error) error {
	topic := "projects/" + t.Project + "/topics/" + t.Topic
	if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		go func() {
			<-res.Ready()
			if _, err := res.Get(context.Background()); err != nil {
				c.pub.ResumePublish(tenant)
			}
		}()
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("pubsub: %v", err)
		}
		return fmt.Errorf("pubsub: no message ID from the server for topic %q within the delivery timeout", topic)
	}
	c.pub.ResumePublish(tenant)
	var paused pubsub.ErrPublishingPaused
	switch st, _ := status.FromError(err); {
	case errors.As(err, &paused):
		return fmt.Errorf("pubsub: publishing to topic %q was paused by an earlier error; the next attempt resumes it", topic)
	case st.Code() == codes.NotFound:
		return fmt.Errorf("pubsub: topic %q does not exist", topic)
	case st.Code() == codes.PermissionDenied, st.Code() == codes.Unauthenticated:
		return fmt.Errorf("pubsub: the service account may not publish to topic %q: %s", topic, st.Message())
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("pubsub: no message ID from the server for topic %q within the delivery timeout", topic)
	case errors.Is(err, pubsub.ErrOversizedMessage), st.Code() == codes.InvalidArgument:
		return fmt.Errorf("pubsub: topic %q refused the message: %v", topic, describe(err))
	case errors.Is(err, pubsub.ErrPublisherStopped):
		// Stopped under this send (the pool closing, or an idle sweep):
		// a new client is what the next attempt needs.
		p.clients.Discard(key, c)
		return errors.New("pubsub: the publisher stopped during the attempt")
	}
	return fmt.Errorf("pubsub: publish to topic %q: %v", topic, describe(err))
}

// describe is a gRPC error's code and message.
func describe(err error) string {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st.Code().String() + ": " + st.Message()
	}
	return err.Error()
}

// attributes are m's attributes: content-type and its ce-*, X-Lerian-*
// and webhook-* values, in a stable order for nothing but tidiness.
func attributes(m destination.Message) map[string]string {
	a := make(map[string]string, len(m.Headers)+1)
	for k, v := range m.BrokerHeaders() {
		a[k] = v
	}
	if m.ContentType != "" {
		a["content-type"] = m.ContentType
	}
	return a
}

// Close stops every publisher (what they hold is sent first) and closes
// the clients.
func (p *Publisher) Close() error {
	p.clients.Close()
	return nil
}

// Clients is how many clients are kept.
func (p *Publisher) Clients() int { return p.clients.Len() }

// clientKey is t's client's key in the pool: the topic and the service
// account (hashed).
func clientKey(t destination.Target) string {
	sum := sha256.Sum256([]byte(t.Credentials.ServiceAccount))
	return t.Project + "/" + t.Topic + "|" + hex.EncodeToString(sum[:])
}

// open makes t's client and its topic's publisher. The client's context
// is not the attempt's: it outlives it.
func (p *Publisher) open(t destination.Target) (*client, error) {
	// One connection per client: a hub has a client per destination.
	opts := []option.ClientOption{option.WithGRPCConnectionPool(1), option.WithTelemetryDisabled()}
	if !p.o.Insecure {
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, []byte(t.Credentials.ServiceAccount)))
	}
	opts = append(opts, p.o.ClientOptions...)
	c, err := pubsub.NewClient(context.Background(), t.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("pubsub: client: %v", err)
	}
	pub := c.Publisher(t.Topic)
	pub.EnableMessageOrdering = true
	pub.PublishSettings.DelayThreshold = DelayThreshold
	pub.PublishSettings.Timeout = p.o.Timeout
	return &client{c: c, pub: pub}, nil
}
