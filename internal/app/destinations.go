package app

import (
	"context"
	"log/slog"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	awsdest "github.com/lerianstudio/streaming-hub/internal/destination/aws"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/destination/nats"
	"github.com/lerianstudio/streaming-hub/internal/destination/pubsub"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
)

// newDestinations makes the one send path: a driver per destination type,
// each dialing through the same SSRF-safe dialer (a host that resolves to a
// private address is refused unless STREAMING_HUB_ALLOW_PRIVATE_SINKS is
// true), and the delivery timeout. Pub/Sub's client talks to Google's
// endpoint only (or PUBSUB_EMULATOR_HOST's, an operator's setting for
// local use). Webhook requests (attempts, probes, test events) leave
// through STREAMING_HUB_EGRESS_PROXY when it is set, by CONNECT to the
// address the dialer checked; broker connections are dialed directly.
// AWS destinations are sent to AWS's endpoint of the resource's region,
// or to the operator's (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>),
// with the role each subscription names assumed through the hub's own
// credentials (the SDK's default chain); sqsEndpoint is the operator's
// SQS endpoint, the only other host a queue URL may name ("": AWS's).
func newDestinations(cfg config.Config, logger *slog.Logger) (reg *destination.Registry, sqsEndpoint string, err error) {
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: cfg.AllowPrivateSinks})
	web := destination.NewDialer(destination.DialOptions{AllowPrivate: cfg.AllowPrivateSinks, Proxy: cfg.EgressProxy})
	rabbit, err := rabbitmq.New(rabbitmq.Options{Dial: dialer.DialContext, Logger: logger.With("component", "rabbitmq")})
	if err != nil {
		return nil, "", err
	}
	// In dev, a Kafka destination's topic is made on its first record
	// (the embedded broker allows it), as the banner says.
	kfk, err := kafka.New(kafka.Options{Dial: dialer.DialContext, Timeout: cfg.DeliveryTimeout, Logger: logger.With("component", "kafka-destinations"),
		AutoCreateTopics: cfg.Mode == config.Dev})
	if err != nil {
		return nil, "", err
	}
	nts, err := nats.New(nats.Options{Dial: dialer.DialContext, Logger: logger.With("component", "nats")})
	if err != nil {
		return nil, "", err
	}
	ps, err := pubsub.New(pubsub.Options{Timeout: cfg.DeliveryTimeout, Logger: logger.With("component", "pubsub")})
	if err != nil {
		return nil, "", err
	}
	drivers := map[string]destination.Driver{
		hub.DestinationWebhook:  webhook.New(web),
		hub.DestinationRabbitMQ: rabbit,
		hub.DestinationKafka:    kfk,
		hub.DestinationNATS:     nts,
		hub.DestinationPubSub:   ps,
	}
	// Loading reads the environment and the shared files only: the
	// credentials are resolved on the first AssumeRole.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if awsCfg, err := awsconfig.LoadDefaultConfig(ctx); err != nil {
		// Not fatal: a hub without AWS destinations runs as before, and
		// an attempt to one says this process cannot deliver there.
		logger.Warn("AWS destinations are off in this process: the AWS configuration (AWS_* variables, shared files) does not load", "err", err)
	} else {
		d := awsdest.New(awsdest.Options{Config: awsCfg, HubPrincipal: cfg.AWS.HubPrincipalARN, Logger: logger.With("component", "aws")})
		for _, t := range []string{hub.DestinationAWSSQS, hub.DestinationAWSSNS, hub.DestinationAWSEventBridge, hub.DestinationAWSKinesis} {
			drivers[t] = d
		}
		sqsEndpoint = awsdest.SQSEndpoint(awsCfg)
	}
	return destination.NewRegistry(cfg.DeliveryTimeout, drivers), sqsEndpoint, nil
}
