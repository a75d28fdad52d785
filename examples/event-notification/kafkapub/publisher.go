// Package kafkapub forwards the payment notifications to the Streaming Hub's
// Kafka stream as binary-mode CloudEvents (docs/wire-contract.md), so webhook
// subscribers of the hub receive the same thin events the Redis receivers do.
//
// The Redis stream stays the source of truth. The Publisher is a
// notify.Handler: run it behind its own consumer group and an entry is
// acknowledged only after Kafka acknowledged the produce.
package kafkapub

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

// ForwarderGroup is the consumer group of the Kafka forwarder.
const ForwarderGroup = "kafka-forwarder"

// Defaults for Config.
const (
	DefaultService       = "payments"
	DefaultTenant        = "default"
	DefaultSchemaVersion = "1.0.0"
	DefaultTimeout       = 10 * time.Second
)

var (
	tenantRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,256}$`)
	semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
)

// Config says how notifications are labelled on Kafka.
type Config struct {
	// Service is the producer namespace of the topic:
	// lerian.streaming.<service>_<resource>.<event>.
	Service string
	// Tenant goes in ce-tenantid and is the record key. The hub admits the
	// tenant from the header only; the key just keeps a tenant's events on
	// one partition.
	Tenant        string
	SchemaVersion string
	// Timeout bounds one produce (until Kafka acknowledges it).
	Timeout time.Duration
}

func (c *Config) validate() error {
	if c.Service == "" {
		c.Service = DefaultService
	}
	if c.Tenant == "" {
		c.Tenant = DefaultTenant
	}
	if c.SchemaVersion == "" {
		c.SchemaVersion = DefaultSchemaVersion
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	var errs []error
	if _, err := hub.Topic(c.Service, notify.TypePaymentApproved); err != nil {
		errs = append(errs, fmt.Errorf("service: %w", err))
	}
	if !tenantRE.MatchString(c.Tenant) {
		errs = append(errs, fmt.Errorf("tenant %q must be 1..256 of [A-Za-z0-9._:-]", c.Tenant))
	}
	if !semverRE.MatchString(c.SchemaVersion) {
		errs = append(errs, fmt.Errorf("schema version %q must be MAJOR.MINOR.PATCH", c.SchemaVersion))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s must be > 0", c.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka publisher config: %w", err)
	}
	return nil
}

// Publisher produces notifications to Kafka.
type Publisher struct {
	cl  *kgo.Client
	cfg Config
}

// NewPublisher validates cfg and returns a publisher over cl. The caller owns
// cl (and closes it).
func NewPublisher(cl *kgo.Client, cfg Config) (*Publisher, error) {
	if cl == nil {
		return nil, errors.New("kafka publisher: client is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Publisher{cl: cl, cfg: cfg}, nil
}

// Record renders an event in CloudEvents binary mode: attributes as ce-
// headers, the thin data JSON as the value, the tenant as the key.
func (p *Publisher) Record(ev notify.Event) (*kgo.Record, error) {
	topic, err := hub.Topic(p.cfg.Service, ev.Type)
	if err != nil {
		return nil, fmt.Errorf("topic for event %s: %w", ev.ID, err)
	}
	if len(ev.Data) == 0 {
		return nil, fmt.Errorf("event %s has no data", ev.ID)
	}
	contentType := ev.DataContentType
	if contentType == "" {
		contentType = notify.ContentType
	}
	headers := []kgo.RecordHeader{
		{Key: "ce-specversion", Value: []byte(notify.SpecVersion)},
		{Key: "ce-id", Value: []byte(ev.ID)},
		{Key: "ce-source", Value: []byte(ev.Source)},
		{Key: "ce-type", Value: []byte(ev.Type)},
		{Key: "ce-time", Value: []byte(ev.Time.UTC().Format(time.RFC3339Nano))},
		{Key: "ce-tenantid", Value: []byte(p.cfg.Tenant)},
		{Key: "ce-schemaversion", Value: []byte(p.cfg.SchemaVersion)},
		{Key: "content-type", Value: []byte(contentType)},
	}
	if ev.Subject != "" {
		headers = append(headers, kgo.RecordHeader{Key: "ce-subject", Value: []byte(ev.Subject)})
	}
	return &kgo.Record{
		Topic:   topic,
		Key:     []byte(p.cfg.Tenant),
		Value:   append([]byte(nil), ev.Data...),
		Headers: headers,
	}, nil
}

// Publish produces one event and returns once Kafka acknowledged it (or the
// timeout passed).
func (p *Publisher) Publish(ctx context.Context, ev notify.Event) error {
	rec, err := p.Record(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("produce event %s to %s: %w", ev.ID, rec.Topic, err)
	}
	return nil
}

// Handle implements notify.Handler: the Reader acknowledges the entry only if
// this returns nil, that is, only after Kafka acknowledged the record.
func (p *Publisher) Handle(ctx context.Context, m notify.Message) error {
	return p.Publish(ctx, m.Event)
}
