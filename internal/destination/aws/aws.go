// Package aws sends attempts to tenants' AWS destinations (docs/aws.md):
// SQS queues, SNS topics, EventBridge event buses and Kinesis data streams,
// with the AWS SDK for Go v2. The hub assumes the subscription's role
// (sts:AssumeRole with the subscription's external id, through the hub's
// own credentials) and sends with what it gets; the role's credentials are
// cached per subscription until shortly before they expire. One Driver
// serves the four types.
package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// Defaults of Options.
const (
	// SessionDuration is how long an assumed role's credentials last:
	// an hour, every role's default maximum.
	SessionDuration = time.Hour
	// ExpiryWindow is how long before they expire credentials are
	// replaced, so that no attempt signs with credentials about to lapse.
	ExpiryWindow = 5 * time.Minute
	// DefaultRegion is the region of a queue of the operator's endpoint
	// (its URL names none) when the hub's own configuration has none.
	DefaultRegion = "us-east-1"
)

// Options configure a Driver.
type Options struct {
	// Config is the hub's own AWS configuration (config.LoadDefaultConfig:
	// its credentials, region and endpoints, AWS_ENDPOINT_URL and
	// AWS_ENDPOINT_URL_<SERVICE> included). Its credentials are what
	// assumes the tenants' roles; they never send a message.
	Config awssdk.Config
	// HubPrincipal is the hub's principal ARN
	// (STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN), named in the error of a role
	// that cannot be assumed; "": not named.
	HubPrincipal string
	// SessionDuration and ExpiryWindow: see the constants; 0 takes them.
	SessionDuration, ExpiryWindow time.Duration
	Logger                        *slog.Logger     // nil discards
	Now                           func() time.Time // the clock of idle sessions; nil means time.Now
}

// Driver is the destination.Driver of the four AWS types, shared by the
// process's attempts.
type Driver struct {
	o        Options
	sessions *destination.Pool[*session]
}

// session is one subscription's: its role's cached credentials and the
// client of its destination's service, in its resource's region.
type session struct {
	fingerprint string // the type, region, role, external id and resource it was made for
	creds       *awssdk.CredentialsCache
	sqs         *sqs.Client
	sns         *sns.Client
	events      *eventbridge.Client
	kinesis     *kinesis.Client
}

// New returns a Driver.
func New(o Options) *Driver {
	if o.SessionDuration <= 0 {
		o.SessionDuration = SessionDuration
	}
	if o.ExpiryWindow <= 0 {
		o.ExpiryWindow = ExpiryWindow
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{o: o,
		sessions: destination.NewPool(o.Now, func(*session) {})}
}

// SQSEndpoint is the SQS endpoint cfg sends to when the operator set one
// (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL or a profile's endpoint_url),
// "" for AWS's regional endpoints: the only other host a queue URL may
// name.
func SQSEndpoint(cfg awssdk.Config) string {
	if e := sqs.NewFromConfig(cfg).Options().BaseEndpoint; e != nil {
		return *e
	}
	return ""
}

// Send makes one attempt of m to t: it assumes t's role (or takes its
// cached credentials) and sends m to t's queue, topic, bus or stream; it
// succeeds when AWS took the message. ctx bounds the whole attempt.
func (d *Driver) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	sent := sentHeaders(m)
	if !hub.IsAWS(t.Type) {
		return destination.Result{Err: fmt.Errorf("aws: %s is not an AWS destination type", t.Type)}
	}
	s, release, err := d.session(t)
	if err != nil {
		return destination.Result{Err: err}
	}
	defer release()
	if _, err := s.creds.Retrieve(ctx); err != nil {
		return destination.Result{Err: d.assumeFailed(ctx, t, err)}
	}
	switch t.Type {
	case hub.DestinationAWSSQS:
		err = d.sendSQS(ctx, s, t, m)
	case hub.DestinationAWSSNS:
		err = d.sendSNS(ctx, s, t, m)
	case hub.DestinationAWSEventBridge:
		err = d.sendEventBridge(ctx, s, t, m)
	default:
		err = d.sendKinesis(ctx, s, t, m)
	}
	if err != nil {
		if expiredCredentials(err) {
			// Revoked or expired early: the next attempt assumes the
			// role again.
			s.creds.Invalidate()
		}
		return destination.Result{Err: d.sendFailed(ctx, t, err), Sent: sent}
	}
	return destination.Result{Sent: sent}
}

// Close drops every session.
func (d *Driver) Close() error {
	d.sessions.Close()
	return nil
}

// Sessions is how many subscriptions' sessions are kept (idle ones are
// dropped after destination.IdleAfter).
func (d *Driver) Sessions() int { return d.sessions.Len() }

// session is t's subscription's session, made when there is none or its
// role, external id or resource changed (the old one is dropped: a
// role's credentials never serve another).
func (d *Driver) session(t destination.Target) (*session, func(), error) {
	a := t.AWS
	if a.RoleARN == "" || !hub.ValidExternalID(a.ExternalID) {
		return nil, nil, fmt.Errorf("aws: the destination has no role or external id")
	}
	region := t.AWSRegion()
	if region == "" {
		region = cmpOr(d.o.Config.Region, DefaultRegion)
	}
	fp := strings.Join([]string{t.Type, region, a.RoleARN, a.ExternalID, t.AWSResource()}, "\x00")
	for range 2 {
		s, release, err := d.sessions.Acquire(t.SubscriptionID, func() (*session, error) { return d.open(t, region, fp), nil })
		if errors.Is(err, destination.ErrClosed) {
			return nil, nil, errors.New("aws: the driver is closed")
		}
		if err != nil {
			return nil, nil, err
		}
		if s.fingerprint == fp {
			return s, release, nil
		}
		release()
		d.sessions.Discard(t.SubscriptionID, s)
	}
	// Attempts of the destination before and after a change, at once:
	// this one gets a session of its own.
	return d.open(t, region, fp), func() {}, nil
}

// sessionName is the RoleSessionName: streaming-hub-<subscription id>, as
// CloudTrail shows it in the tenant's account.
var sessionNameBad = regexp.MustCompile(`[^\w+=,.@-]`)

func sessionName(subscriptionID string) string {
	n := "streaming-hub-" + sessionNameBad.ReplaceAllString(subscriptionID, "-")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// open makes t's session: an AssumeRole provider with the external id,
// cached, and the client of t's service in region. The SDK retries
// nothing: the hub's retry curve does.
func (d *Driver) open(t destination.Target, region, fp string) *session {
	a := t.AWS
	stsRegion := cmpOr(d.o.Config.Region, region)
	stsClient := sts.NewFromConfig(d.o.Config, func(o *sts.Options) {
		o.Region = stsRegion
		o.RetryMaxAttempts = 1
	})
	externalID := a.ExternalID
	provider := stscreds.NewAssumeRoleProvider(stsClient, a.RoleARN, func(o *stscreds.AssumeRoleOptions) {
		o.ExternalID = &externalID
		o.RoleSessionName = sessionName(t.SubscriptionID)
		o.Duration = d.o.SessionDuration
	})
	s := &session{fingerprint: fp,
		creds: awssdk.NewCredentialsCache(provider, func(o *awssdk.CredentialsCacheOptions) {
			o.ExpiryWindow = d.o.ExpiryWindow
		})}
	cfg := d.o.Config.Copy()
	cfg.Region, cfg.Credentials, cfg.RetryMaxAttempts = region, s.creds, 1
	switch t.Type {
	case hub.DestinationAWSSQS:
		s.sqs = sqs.NewFromConfig(cfg)
	case hub.DestinationAWSSNS:
		s.sns = sns.NewFromConfig(cfg)
	case hub.DestinationAWSEventBridge:
		s.events = eventbridge.NewFromConfig(cfg)
	default:
		s.kinesis = kinesis.NewFromConfig(cfg)
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ctxErr is the attempt's own end (the delivery timeout, the hub
// stopping), kept whole so the send path words it ("timeout after 15s").
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("aws: %w", ctx.Err())
	}
	return nil
}
