package main

// subscriptions.go: `streaming-hub subscriptions`, a tenant's webhook
// subscriptions.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

var subscriptionsGroup = group{
	name: "subscriptions",
	about: "Manages a tenant's subscriptions (webhooks and broker destinations). STREAMING_HUB_TOKEN is a tenant API key, or\n" +
		"the admin token with --tenant (STREAMING_HUB_TENANT) naming the tenant.",
	subs: []subcommand{
		{"list", "[--cursor C] [--limit N] [--all]", "list the tenant's subscriptions, one page", subscriptionsList},
		{"get", "<id>", "show one subscription", subscriptionsGet},
		{"create", "--name N --event-type T@M [--type T] --url U | --amqp-url ... | --brokers ... [...] | --from-file F", "create a subscription (prints its signing secret, once)", subscriptionsCreate},
		{"update", "<id> [--enabled true|false] [--url U] [--name N] [...]", "change a subscription", subscriptionsUpdate},
		{"delete", "<id> [--yes]", "delete a subscription (its pending deliveries are dead-lettered)", subscriptionsDelete},
		{"verify", "<id>", "probe the destination; on success the subscription is active and enabled", subscriptionsVerify},
		{"rotate-secret", "<id> [--overlap 24h]", "make a new signing secret; the old one signs until the overlap ends", subscriptionsRotate},
		{"health", "<id> [--window 24h]", "show a subscription's health: success rate, latency, last error, backlog", subscriptionsHealth},
		{"test", "<id> [--type T] [--data JSON]", "send one signed test event to the destination now (nothing stored)", subscriptionsTest},
		{"disabled", "[--cursor C] [--limit N] [--all]", "list every tenant's disabled subscriptions, most recently disabled first (admin)", subscriptionsDisabled},
	},
}

func runSubscriptions(args []string, e env) int { return subscriptionsGroup.run(args, e) }

// subscriptionView is a subscription as the API shows it.
type subscriptionView struct {
	ID         string `json:"id"`
	TenantID   string `json:"tenant_id"`
	Name       string `json:"name"`
	EventTypes []struct {
		Type        string `json:"type"`
		SchemaMajor int    `json:"schema_major"`
	} `json:"event_types"`
	Destination struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Auth    *struct {
			Type       string `json:"type"`
			Name       string `json:"name"`
			TokenURL   string `json:"token_url"`
			ClientID   string `json:"client_id"`
			Scope      string `json:"scope"`
			Audience   string `json:"audience"`
			ClientAuth string `json:"client_auth"`
		} `json:"auth"`
		Exchange   string   `json:"exchange"`
		RoutingKey string   `json:"routing_key"`
		Brokers    []string `json:"brokers"`
		Topic      string   `json:"topic"`
		Subject    string   `json:"subject"`
		Stream     string   `json:"stream"`
		Project    string   `json:"project"`
		// AWS destinations (docs/aws.md).
		QueueURL    string `json:"queue_url"`
		TopicARN    string `json:"topic_arn"`
		EventBusARN string `json:"event_bus_arn"`
		StreamARN   string `json:"stream_arn"`
		RoleARN     string `json:"role_arn"`
		ExternalID  string `json:"external_id"`
		SetupURL    string `json:"aws_setup_url"`
	} `json:"destination"`
	RetrySchedule     []string        `json:"retry_schedule"`
	MaxInFlight       int             `json:"max_in_flight"`
	Filters           json.RawMessage `json:"filters"`
	Transform         *string         `json:"transform"`
	Enabled           bool            `json:"enabled"`
	VerificationState string          `json:"verification_state"`
	DisabledReason    *string         `json:"disabled_reason"`
	DisabledAt        *string         `json:"disabled_at"`
	BreakerState      string          `json:"breaker_state"`
	FailureSpan       *struct {
		First string `json:"first_failure_at"`
		Last  string `json:"last_failure_at"`
	} `json:"failure_span"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
	SigningSecret string `json:"signing_secret"`

	Backfill *backfillView `json:"backfill"` // docs/backfill.md

	Signature struct {
		Scheme string `json:"scheme"`
	} `json:"signature"`
	SigningPublicKey *string `json:"signing_public_key"`
}

// backfillView is a subscription's backfill as the API shows it
// (docs/backfill.md).
type backfillView struct {
	Since         string  `json:"since"`
	State         string  `json:"state"`
	StartedAt     *string `json:"started_at"`
	FinishedAt    *string `json:"finished_at"`
	Matched       int64   `json:"matched"`
	Queued        int64   `json:"queued"`
	Skipped       int64   `json:"skipped"`
	Sequence      int64   `json:"sequence"`
	UntilSequence int64   `json:"until_sequence"`
}

// progress says where a backfill is, in one line.
func (b *backfillView) progress() string {
	if b == nil {
		return "none"
	}
	counts := fmt.Sprintf("%d queued, %d skipped of %d matched", b.Queued, b.Skipped, b.Matched)
	switch {
	case b.State == "done":
		return fmt.Sprintf("done (since %s): %s; finished %s", b.Since, counts, str(b.FinishedAt))
	case b.StartedAt == nil:
		return fmt.Sprintf("running (since %s): waits for the subscription to be verified", b.Since)
	}
	return fmt.Sprintf("running (since %s): %s; sequence %d of %d", b.Since, counts, b.Sequence, b.UntilSequence)
}

// typeRefs are the subscription's event types as type@major.
func (s *subscriptionView) typeRefs() []string {
	types := make([]string, len(s.EventTypes))
	for i, et := range s.EventTypes {
		types[i] = hub.EventTypeRef{Type: et.Type, SchemaMajor: et.SchemaMajor}.String()
	}
	return types
}

func (s *subscriptionView) print(w io.Writer) {
	types := s.typeRefs()
	auth := ""
	if a := s.Destination.Auth; a != nil {
		auth = a.Type
		if a.Name != "" {
			auth += " (" + a.Name + ")"
		}
		if a.TokenURL != "" {
			auth += " (token_url " + a.TokenURL + ", client_id " + a.ClientID + ", client_auth " + a.ClientAuth
			if a.Scope != "" {
				auth += ", scope " + a.Scope
			}
			if a.Audience != "" {
				auth += ", audience " + a.Audience
			}
			auth += ")"
		}
	}
	retry := "default"
	if s.RetrySchedule != nil {
		retry = strings.Join(s.RetrySchedule, ", ")
	}
	filters := "none"
	if f := strings.TrimSpace(string(s.Filters)); f != "" && f != "[]" && f != "null" {
		filters = f
	}
	transform := "none"
	if s.Transform != nil {
		// One line in the listing; -o json shows the program as written.
		transform = strings.Join(strings.Fields(*s.Transform), " ")
	}
	span := ""
	if f := s.FailureSpan; f != nil {
		span = f.First + " .. " + f.Last
	}
	kv := []string{
		"id", s.ID,
		"tenant_id", s.TenantID,
		"name", s.Name,
		"event_types", strings.Join(types, ", "),
		"url", s.where(),
		"headers", joinMap(s.Destination.Headers),
		"auth", auth,
		"signature", s.Signature.Scheme,
		"signing_public_key", str(s.SigningPublicKey),
		"retry_schedule", retry,
		"max_in_flight", itoa(s.MaxInFlight),
		"filters", filters,
		"transform", transform,
		"enabled", strconv.FormatBool(s.Enabled),
		"verification_state", s.VerificationState,
		"breaker_state", s.BreakerState,
		"disabled_reason", str(s.DisabledReason),
		"disabled_at", str(s.DisabledAt),
		"failure_span", span,
		"backfill", s.Backfill.progress(),
		"created_at", s.CreatedAt,
		"updated_at", s.UpdatedAt,
	}
	if d := s.Destination; d.RoleARN != "" {
		// What the tenant's role must trust (docs/aws.md).
		kv = append(kv, "role_arn", d.RoleARN, "external_id", d.ExternalID)
		if d.SetupURL != "" {
			kv = append(kv, "aws_setup_url", d.SetupURL)
		}
	}
	if s.SigningSecret != "" {
		kv = append(kv, "signing_secret", s.SigningSecret)
	}
	fields(w, kv...)
}

func subscriptionsList(args []string, e env) int {
	c := newAPICmd(e, "subscriptions list", "[--cursor C] [--limit N] [flags]",
		"Lists the tenant's subscriptions, one page; when there are more, the last line on\nstderr says which --cursor to pass next.", true)
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	return listCmd(c, "/v1/subscriptions", p, nil, []string{"ID", "NAME", "URL", "ENABLED", "STATE", "BREAKER"}, func(s subscriptionView) []string {
		return []string{s.ID, s.Name, s.where(), strconv.FormatBool(s.Enabled), s.VerificationState, s.BreakerState}
	}, subscriptionWide...)
}

// subscriptionWide are subscriptions list's -o wide columns.
var subscriptionWide = []column[subscriptionView]{
	{"KIND", func(s subscriptionView) string { return s.Destination.Type }},
	{"EVENT_TYPES", func(s subscriptionView) string { return strings.Join(s.typeRefs(), ",") }},
	{"MAX_IN_FLIGHT", func(s subscriptionView) string { return itoa(s.MaxInFlight) }},
	{"RETRY_SCHEDULE", func(s subscriptionView) string {
		if len(s.RetrySchedule) == 0 {
			return "default"
		}
		return strings.Join(s.RetrySchedule, ",")
	}},
	{"DISABLED_REASON", func(s subscriptionView) string { return str(s.DisabledReason) }},
	{"CREATED", func(s subscriptionView) string { return s.CreatedAt }},
}

// subscriptionsDisabled: GET /v1/admin/disabled-subscriptions.
func subscriptionsDisabled(args []string, e env) int {
	c := newAPICmd(e, "subscriptions disabled", "[--cursor C] [--limit N] [flags]",
		"Lists every tenant's subscriptions disabled with a reason (auto-disabled, a failed\n"+
			"verification probe, disabled through the API), most recently disabled first, one\n"+
			"page; when there are more, the last line on stderr says which --cursor to pass\n"+
			"next. Needs the admin token.", false)
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	return listCmd(c, "/v1/admin/disabled-subscriptions", p, nil, []string{"TENANT", "ID", "NAME", "DISABLED", "REASON"},
		func(s subscriptionView) []string {
			return []string{s.TenantID, s.ID, s.Name, str(s.DisabledAt), truncate(str(s.DisabledReason), 80)}
		})
}

func subscriptionsGet(args []string, e env) int {
	c := newAPICmd(e, "subscriptions get", "<id> [flags]", "Shows one subscription (never its secrets).", true, "<id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var s subscriptionView
	return c.do("GET", "/v1/subscriptions/"+pathEscape(c.args[0]), nil, nil, &s, s.print)
}

// subscriptionFlags are the body flags of create and update.
type subscriptionFlags struct {
	name, url, retry, filters, fromFile string
	backfillSince                       string
	transform, transformFile            string
	signatureScheme                     string
	oauth                               oauthFlags
	maxInFlight                         int
	enabled                             bool
	eventTypes, headers                 multiFlag
	dest                                destFlags
}

// oauthFlags make a webhook's oauth2_client_credentials auth.
type oauthFlags struct {
	tokenURL, clientID, clientSecret, scope, audience, clientAuth string
}

// oauthFlagNames are the flags of oauthFlags.
var oauthFlagNames = []string{"oauth-token-url", "oauth-client-id", "oauth-client-secret", "oauth-scope", "oauth-audience", "oauth-client-auth"}

// destFlags are the destination flags of every type
// (docs/brokers.md).
type destFlags struct {
	typ, amqpURL, natsURL                 string
	exchange, routingKey, brokers, topic  string
	saslMechanism, saslUsername, saslPass string
	subject, stream, project, credentials string
	tls                                   bool
	// AWS destinations: the resource, the role, EventBridge's source and
	// detail type.
	awsQueueURL, awsTopicARN, awsBusARN, awsStreamARN string
	awsRoleARN, awsSource, awsDetailType              string
	// Mutual TLS: files of PEM, and the lowest version.
	clientCert, clientKey, caCerts, tlsMinVersion string
}

// destTypes are the destination types, and destTypeFlags the flags only
// one type takes.
var (
	destTypes     = []string{"webhook", "rabbitmq", "kafka", "nats", "pubsub", "aws_sqs", "aws_sns", "aws_eventbridge", "aws_kinesis"}
	destTypeFlags = map[string][]string{
		"webhook":         {"url", "header", "oauth-token-url", "oauth-client-id", "oauth-client-secret", "oauth-scope", "oauth-audience", "oauth-client-auth"},
		"rabbitmq":        {"amqp-url", "exchange", "routing-key"},
		"kafka":           {"brokers", "topic", "tls", "sasl-mechanism", "sasl-username", "sasl-password"},
		"nats":            {"nats-url", "subject", "stream"},
		"pubsub":          {"project", "topic", "credentials-file"},
		"aws_sqs":         {"aws-sqs-queue-url", "aws-role-arn"},
		"aws_sns":         {"aws-sns-topic-arn", "aws-role-arn"},
		"aws_eventbridge": {"aws-eventbridge-bus-arn", "aws-eventbridge-source", "aws-eventbridge-detail-type", "aws-role-arn"},
		"aws_kinesis":     {"aws-kinesis-stream-arn", "aws-role-arn"},
	}
	// awsResourceFlags name the type an AWS resource flag implies when
	// --type is not given.
	awsResourceFlags = map[string]string{
		"aws-sqs-queue-url": "aws_sqs", "aws-sns-topic-arn": "aws_sns",
		"aws-eventbridge-bus-arn": "aws_eventbridge", "aws-kinesis-stream-arn": "aws_kinesis",
	}
)

// bodyFlags names the flags that make the body (all but --from-file).
var bodyFlags = []string{"name", "event-type", "url", "header", "retry-schedule", "max-in-flight", "enabled", "filters",
	"backfill-since", "transform", "transform-file",
	"type", "amqp-url", "exchange", "routing-key", "brokers", "topic", "tls", "sasl-mechanism", "sasl-username",
	"sasl-password", "nats-url", "subject", "stream", "project", "credentials-file",
	"aws-sqs-queue-url", "aws-sns-topic-arn", "aws-eventbridge-bus-arn", "aws-kinesis-stream-arn", "aws-role-arn",
	"aws-eventbridge-source", "aws-eventbridge-detail-type",
	"client-cert", "client-key", "ca-certs", "tls-min-version",
	"oauth-token-url", "oauth-client-id", "oauth-client-secret", "oauth-scope", "oauth-audience", "oauth-client-auth",
	"signature-scheme"}

func (f *subscriptionFlags) declare(c *apiCmd, update bool) {
	c.fs.StringVar(&f.name, "name", "", "name of the subscription")
	c.fs.Var(&f.eventTypes, "event-type", "`TYPE[@MAJOR]` to receive, such as transaction.posted@1 (MAJOR defaults to 1; TYPE:MAJOR is read too;\nrepeatable)")
	c.fs.StringVar(&f.dest.typ, "type", "", "destination `type`: webhook|rabbitmq|kafka|nats|pubsub|aws_sqs|aws_sns|aws_eventbridge|aws_kinesis (default webhook on create, or the type of the --aws-* resource given)")
	c.fs.StringVar(&f.url, "url", "", "webhook URL of the destination")
	c.fs.Var(&f.headers, "header", "`NAME=VALUE` sent on every delivery (repeatable; webhook)")
	c.fs.StringVar(&f.dest.amqpURL, "amqp-url", "", "rabbitmq: amqp(s)://user:pass@host:port/vhost of the broker")
	c.fs.StringVar(&f.dest.exchange, "exchange", "", "rabbitmq: exchange to publish to")
	c.fs.StringVar(&f.dest.routingKey, "routing-key", "", "rabbitmq: routing key of the messages")
	c.fs.StringVar(&f.dest.brokers, "brokers", "", "kafka: `host:port,...` of the cluster")
	c.fs.StringVar(&f.dest.topic, "topic", "", "kafka: topic to produce to; pubsub: topic id to publish to")
	c.fs.Var(boolText{&f.dest.tls}, "tls", "`true|false`: kafka: connect over TLS")
	c.fs.StringVar(&f.dest.saslMechanism, "sasl-mechanism", "", "kafka: SASL `mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); \"none\" removes SASL on update")
	c.fs.StringVar(&f.dest.saslUsername, "sasl-username", "", "kafka: SASL username")
	c.fs.StringVar(&f.dest.saslPass, "sasl-password", "", "kafka: SASL password (sealed, never shown)")
	c.fs.StringVar(&f.dest.natsURL, "nats-url", "", "nats: nats://[user:pass@]host:port of the server")
	c.fs.StringVar(&f.dest.subject, "subject", "", "nats: subject to publish to")
	c.fs.StringVar(&f.dest.stream, "stream", "", "nats: JetStream stream that must hold the subject (publishes are acknowledged)")
	c.fs.StringVar(&f.dest.project, "project", "", "pubsub: Google Cloud project id")
	c.fs.StringVar(&f.dest.credentials, "credentials-file", "", "pubsub: service account key JSON `file` (- reads stdin; sealed, never shown)")
	c.fs.StringVar(&f.dest.awsQueueURL, "aws-sqs-queue-url", "", "aws_sqs: the queue's `URL` (https://sqs.<region>.amazonaws.com/<account>/<queue>)")
	c.fs.StringVar(&f.dest.awsTopicARN, "aws-sns-topic-arn", "", "aws_sns: the topic's `ARN`")
	c.fs.StringVar(&f.dest.awsBusARN, "aws-eventbridge-bus-arn", "", "aws_eventbridge: the event bus's `ARN`")
	c.fs.StringVar(&f.dest.awsSource, "aws-eventbridge-source", "", "aws_eventbridge: the entries' source (default: each event's)")
	c.fs.StringVar(&f.dest.awsDetailType, "aws-eventbridge-detail-type", "", "aws_eventbridge: the entries' detail type (default: each event's type)")
	c.fs.StringVar(&f.dest.awsStreamARN, "aws-kinesis-stream-arn", "", "aws_kinesis: the data stream's `ARN`")
	c.fs.StringVar(&f.dest.awsRoleARN, "aws-role-arn", "", "aws_*: the IAM role `ARN` in your account the hub assumes (its trust policy needs the external id the answer shows: docs/aws.md)")
	c.fs.StringVar(&f.dest.clientCert, "client-cert", "", "mutual TLS: client certificate PEM `file` (leaf first) for a destination that speaks TLS (https, amqps://, tls://, kafka --tls true)")
	c.fs.StringVar(&f.dest.clientKey, "client-key", "", "mutual TLS: the client certificate's PEM private key `file` (- reads stdin; sealed, never shown)")
	c.fs.StringVar(&f.dest.caCerts, "ca-certs", "", "PEM `file` of the CAs that replace the system roots for this destination")
	c.fs.StringVar(&f.dest.tlsMinVersion, "tls-min-version", "", "lowest TLS `version` offered to the destination: 1.2 (default) or 1.3")
	c.fs.StringVar(&f.oauth.tokenURL, "oauth-token-url", "", "webhook: OAuth 2.0 token endpoint (https) the hub gets a bearer token from (client credentials grant)")
	c.fs.StringVar(&f.oauth.clientID, "oauth-client-id", "", "webhook: OAuth 2.0 client id")
	c.fs.StringVar(&f.oauth.clientSecret, "oauth-client-secret", "", "webhook: OAuth 2.0 client secret (sealed, never shown; - reads it from stdin)")
	c.fs.StringVar(&f.oauth.scope, "oauth-scope", "", "webhook: space-separated OAuth 2.0 scopes to ask for")
	c.fs.StringVar(&f.oauth.audience, "oauth-audience", "", "webhook: OAuth 2.0 audience to ask for")
	c.fs.StringVar(&f.oauth.clientAuth, "oauth-client-auth", "", "webhook: `basic|body`: how the client authenticates to the token endpoint (default basic)")
	c.fs.StringVar(&f.signatureScheme, "signature-scheme", "", "`v1|v1a`: sign with HMAC-SHA256 (v1, the default) or Ed25519 (v1a: the answer shows the public key); chosen at create")
	c.fs.StringVar(&f.retry, "retry-schedule", "", "retry delays as Go durations, such as 5s,1m,10m")
	c.fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "deliveries in flight at once, 1 to 64 (1 keeps order)")
	c.fs.StringVar(&f.filters, "filters", "", "`JSON` list of CloudEvents filters that must all hold, such as '[{\"prefix\":{\"source\":\"//midaz/\"}}]'")
	c.fs.StringVar(&f.transform, "transform", "", "jq `PROGRAM` that makes the body sent from each event, such as '{kind: .type, amount: .data.amount}' (docs/filters-and-transforms.md)")
	c.fs.StringVar(&f.transformFile, "transform-file", "", "read the transform's jq program from this `file` (- reads stdin)")
	c.fs.Var(boolText{&f.enabled}, "enabled", "`true|false`: deliveries flow only while enabled (a new subscription is)")
	c.fs.StringVar(&f.backfillSince, "backfill-since", "", "`TIME` from which the tenant's retained matching events are delivered first, in order: RFC 3339 (2026-11-30T11:00:00Z) or a duration back from now (1h, 90m); at most the inbox retention (168h by default)")
	c.fs.StringVar(&f.fromFile, "from-file", "", "send this JSON `file` as the request body as is (- reads stdin); for destination.auth and anything the flags do not cover")
	if update {
		c.fs.Lookup("event-type").Usage += "; replaces the list"
		c.fs.Lookup("header").Usage += "; replaces all headers"
		c.fs.Lookup("retry-schedule").Usage += "; empty or \"default\" returns to the default curve"
		c.fs.Lookup("filters").Usage += "; replaces the list; empty or \"none\" clears it"
		c.fs.Lookup("transform").Usage += "; empty clears it (the event's data is sent unchanged)"
		c.fs.Lookup("client-cert").Usage += "; \"none\" removes it with its key"
		c.fs.Lookup("ca-certs").Usage += "; \"none\" returns to the system roots"
		c.fs.Lookup("tls-min-version").Usage += "; \"none\" returns to the default"
	}
}

// body builds the request body from the flags set; a usage problem returns
// ok false with the exit code.
func (f *subscriptionFlags) body(c *apiCmd, create bool) (body any, code int, ok bool) {
	if c.set["from-file"] {
		for _, n := range bodyFlags {
			if c.set[n] {
				return nil, c.usageError("--from-file and --%s: the file is the whole body; give one or the other", n), false
			}
		}
		data, err := readInput(c.e, f.fromFile)
		if err != nil {
			return nil, c.usageError("--from-file: %v", err), false
		}
		if !json.Valid(data) {
			return nil, c.usageError("--from-file: %s is not valid JSON", f.fromFile), false
		}
		return data, exitOK, true
	}
	typ := f.dest.typ
	if c.set["type"] && !contains(destTypes, typ) {
		return nil, c.usageError("--type: one of %s, not %q", strings.Join(destTypes, ", "), typ), false
	}
	if typ == "" {
		for flagName, t := range awsResourceFlags {
			if c.set[flagName] {
				typ = t
			}
		}
	}
	if create && typ == "" {
		typ = "webhook"
	}
	if typ != "" {
		for other, names := range destTypeFlags {
			for _, n := range names {
				if c.set[n] && !contains(destTypeFlags[typ], n) {
					return nil, c.usageError("--%s is for --type %s, not %s", n, other, typ), false
				}
			}
		}
	}
	if create {
		var missing []string
		for _, n := range append([]string{"name", "event-type"}, destRequired[typ]...) {
			if !c.set[n] {
				missing = append(missing, "--"+n)
			}
		}
		if len(missing) > 0 {
			return nil, c.usageError("%s: required (or --from-file)", strings.Join(missing, ", ")), false
		}
	}
	b := map[string]any{}
	if c.set["name"] {
		b["name"] = f.name
	}
	if c.set["event-type"] {
		ets := make([]map[string]any, len(f.eventTypes))
		for i, v := range f.eventTypes {
			ref, err := hub.ParseEventTypeRef(v)
			if err != nil {
				return nil, c.usageError("--event-type %v", err), false
			}
			ets[i] = map[string]any{"type": ref.Type, "schema_major": ref.SchemaMajor}
		}
		b["event_types"] = ets
	}
	dest := map[string]any{}
	if typ != "" {
		dest["type"] = typ
	}
	if code, ok := f.dest.apply(c, dest); !ok {
		return nil, code, false
	}
	if c.set["url"] {
		dest["url"] = f.url
	}
	if c.set["header"] {
		h := map[string]string{}
		for _, v := range f.headers {
			k, val, err := keyValue(v)
			if err != nil {
				return nil, c.usageError("--header: %v", err), false
			}
			h[k] = val
		}
		dest["headers"] = h
	}
	if code, ok := f.oauth.apply(c, dest); !ok {
		return nil, code, false
	}
	if len(dest) > 0 {
		b["destination"] = dest
	}
	if c.set["signature-scheme"] {
		if f.signatureScheme != "v1" && f.signatureScheme != "v1a" {
			return nil, c.usageError("--signature-scheme: v1 or v1a, not %q", f.signatureScheme), false
		}
		b["signature"] = map[string]string{"scheme": f.signatureScheme}
	}
	if c.set["retry-schedule"] {
		if s := strings.TrimSpace(f.retry); s == "" || s == "default" {
			b["retry_schedule"] = nil
		} else {
			steps := strings.Split(s, ",")
			for i := range steps {
				steps[i] = strings.TrimSpace(steps[i])
			}
			b["retry_schedule"] = steps
		}
	}
	if c.set["max-in-flight"] {
		b["max_in_flight"] = f.maxInFlight
	}
	if c.set["filters"] {
		if v := strings.TrimSpace(f.filters); v == "" || v == "none" {
			b["filters"] = nil
		} else if !json.Valid([]byte(v)) {
			return nil, c.usageError("--filters: not valid JSON (a list such as '[{\"exact\":{\"subject\":\"acc-1\"}}]')"), false
		} else {
			b["filters"] = json.RawMessage(v)
		}
	}
	if c.set["transform"] && c.set["transform-file"] {
		return nil, c.usageError("--transform and --transform-file: give one or the other"), false
	}
	if c.set["transform"] {
		b["transform"] = f.transform
	}
	if c.set["transform-file"] {
		data, err := readInput(c.e, f.transformFile)
		if err != nil {
			return nil, c.usageError("--transform-file: %v", err), false
		}
		b["transform"] = strings.TrimRight(string(data), "\n")
	}
	if c.set["enabled"] {
		b["enabled"] = f.enabled
	}
	if c.set["backfill-since"] {
		since, err := backfillSince(f.backfillSince, time.Now())
		if err != nil {
			return nil, c.usageError("--backfill-since: %v", err), false
		}
		b["backfill"] = map[string]string{"since": since}
	}
	if len(b) == 0 {
		return nil, c.usageError("nothing to change: give --enabled, --url, --name, ... or --from-file"), false
	}
	return b, exitOK, true
}

// apply sets destination.auth from the --oauth-* flags, if any is given:
// the whole oauth2_client_credentials object, as the API replaces it whole.
func (o *oauthFlags) apply(c *apiCmd, dest map[string]any) (int, bool) {
	given := false
	for _, n := range oauthFlagNames {
		given = given || c.set[n]
	}
	if !given {
		return exitOK, true
	}
	var missing []string
	for _, n := range oauthFlagNames[:3] {
		if !c.set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return c.usageError("%s: required with the other --oauth-* flags", strings.Join(missing, ", ")), false
	}
	if c.set["oauth-client-auth"] && o.clientAuth != "basic" && o.clientAuth != "body" {
		return c.usageError("--oauth-client-auth: basic or body, not %q", o.clientAuth), false
	}
	secret := o.clientSecret
	if secret == "-" {
		data, err := readInput(c.e, "-")
		if err != nil {
			return c.usageError("--oauth-client-secret: %v", err), false
		}
		secret = strings.TrimRight(string(data), "\r\n")
	}
	auth := map[string]any{"type": "oauth2_client_credentials", "token_url": o.tokenURL, "client_id": o.clientID, "client_secret": secret}
	for k, v := range map[string]string{"scope": o.scope, "audience": o.audience, "client_auth": o.clientAuth} {
		if v != "" {
			auth[k] = v
		}
	}
	dest["auth"] = auth
	return exitOK, true
}

// backfillSince reads --backfill-since: an RFC 3339 time, or a duration
// back from now.
func backfillSince(v string, now time.Time) (string, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.Format(time.RFC3339Nano), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%q is neither an RFC 3339 time (2026-11-30T11:00:00Z) nor a duration back from now (1h)", v)
	}
	return now.Add(-d).UTC().Format(time.RFC3339), nil
}

// readInput reads a file, or stdin for "-".
func readInput(e env, path string) ([]byte, error) {
	if path == "-" {
		if e.stdin == nil {
			return nil, nil
		}
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(path)
}

func subscriptionsCreate(args []string, e env) int {
	c := newAPICmd(e, "subscriptions create", "--name N --event-type T@M --url U [flags] | --from-file F",
		`Creates a subscription of the tenant. It starts pending: nothing is delivered until
`+"`streaming-hub subscriptions verify <id>`"+` proves the destination answers (2xx, echoing the
challenge). The answer carries the signing secret, shown only now and on rotation.

Example:
  streaming-hub subscriptions create --name ledger-hooks --event-type transaction.posted@1 \
    --url https://example.com/hook --header X-Custom=v --retry-schedule 5s,1m \
    --filters '[{"prefix":{"source":"//midaz/"}},{"suffix":{"subject":".brl"}}]' \
    --transform '{kind: .type, amount: .data.amount}'
  streaming-hub subscriptions create --name to-kafka --event-type transaction.posted@1 \
    --type kafka --brokers k1:9092,k2:9092 --topic ledger --tls true \
    --sasl-mechanism SCRAM-SHA-512 --sasl-username hub --sasl-password "$PASS"

--type picks the destination: webhook (--url, --header), rabbitmq (--amqp-url, --exchange,
--routing-key), kafka (--brokers, --topic, --tls, --sasl-*), nats (--nats-url, --subject,
--stream), pubsub (--project, --topic, --credentials-file) or an AWS destination in your
account (--aws-sqs-queue-url, --aws-sns-topic-arn, --aws-eventbridge-bus-arn with
--aws-eventbridge-source and --aws-eventbridge-detail-type, or --aws-kinesis-stream-arn, each
with --aws-role-arn; the resource flag implies --type; the answer shows the external id the
role must trust, docs/aws.md). A webhook authenticates with
an OAuth 2.0 token the hub fetches with --oauth-token-url, --oauth-client-id and
--oauth-client-secret (--oauth-scope, --oauth-audience, --oauth-client-auth basic|body);
--from-file covers the rest (bearer, basic and header auth). A destination that speaks TLS
takes --client-cert and --client-key (mutual TLS), --ca-certs and --tls-min-version.

--signature-scheme v1a signs with Ed25519 instead of HMAC: the answer shows
signing_public_key (whpk_...), which receivers verify with, and no signing secret.

With --backfill-since, once verified it first receives the tenant's retained events it
matches from that time on, in order, then the new ones; `+"`subscriptions get`"+` shows the progress.`, true)
	var f subscriptionFlags
	f.declare(c, false)
	if code, ok := c.parse(args); !ok {
		return code
	}
	body, code, ok := f.body(c, true)
	if !ok {
		return code
	}
	var s subscriptionView
	return c.do("POST", "/v1/subscriptions", nil, body, &s, func(w io.Writer) {
		s.print(w)
		if s.SigningPublicKey != nil {
			fmt.Fprintln(c.e.stderr, "Receivers verify with signing_public_key (it is not secret). Next: streaming-hub subscriptions verify "+s.ID)
			return
		}
		fmt.Fprintln(c.e.stderr, "The signing secret is shown only now: store it. Next: streaming-hub subscriptions verify "+s.ID)
	})
}

func subscriptionsUpdate(args []string, e env) int {
	c := newAPICmd(e, "subscriptions update", "<id> [--enabled true|false] [--url U] [--name N] [flags] | <id> --from-file F",
		"Changes a subscription: only what is given changes. A new --url makes it pending again\n(verify it); --enabled true re-enables one the hub disabled.", true, "<id>")
	var f subscriptionFlags
	f.declare(c, true)
	if code, ok := c.parse(args); !ok {
		return code
	}
	body, code, ok := f.body(c, false)
	if !ok {
		return code
	}
	var s subscriptionView
	return c.do("PATCH", "/v1/subscriptions/"+pathEscape(c.args[0]), nil, body, &s, s.print)
}

func subscriptionsDelete(args []string, e env) int {
	c := newAPICmd(e, "subscriptions delete", "<id> [--yes] [flags]",
		"Deletes a subscription; its pending deliveries are dead-lettered as subscription_deleted.\nAsks first on a terminal; pass --yes in scripts.", true, "<id>")
	yes := c.yesFlag()
	if code, ok := c.parse(args); !ok {
		return code
	}
	if code, ok := c.confirm(*yes, "Delete subscription "+c.args[0]+"?"); !ok {
		return code
	}
	return c.do("DELETE", "/v1/subscriptions/"+pathEscape(c.args[0]), nil, nil, nil, func(w io.Writer) {
		fmt.Fprintf(w, "deleted subscription %s\n", c.args[0])
	})
}

func subscriptionsVerify(args []string, e env) int {
	c := newAPICmd(e, "subscriptions verify", "<id> [flags]",
		`Probes the destination with a signed challenge. A 2xx answer containing the challenge
passes: the subscription becomes active and enabled. A failure exits 1 with the probe's
outcome (422 probe_failed).`, true, "<id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var s subscriptionView
	return c.do("POST", "/v1/subscriptions/"+pathEscape(c.args[0])+"/verify", nil, []byte("{}"), &s, s.print)
}

func subscriptionsRotate(args []string, e env) int {
	c := newAPICmd(e, "subscriptions rotate-secret", "<id> [--overlap 24h] [flags]",
		"Makes a new signing secret (shown only now), or for a v1a subscription a new key pair\n(its public key shown). The previous one keeps signing until the overlap ends, so\nreceivers can switch without losing deliveries.", true, "<id>")
	overlap := c.fs.String("overlap", "", "how long the previous secret keeps signing, 0s to 168h (default 24h)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	body := map[string]string{}
	if c.set["overlap"] {
		body["overlap"] = *overlap
	}
	var r struct {
		SigningSecret    string `json:"signing_secret"`
		SigningPublicKey string `json:"signing_public_key"`
		Expires          string `json:"previous_secret_expires_at"`
	}
	return c.do("POST", "/v1/subscriptions/"+pathEscape(c.args[0])+"/rotate-secret", nil, body, &r, func(w io.Writer) {
		if r.SigningPublicKey != "" { // a v1a subscription: a new key pair
			fields(w, "signing_public_key", r.SigningPublicKey, "previous_secret_expires_at", r.Expires)
			return
		}
		fields(w, "signing_secret", r.SigningSecret, "previous_secret_expires_at", r.Expires)
	})
}

// where is where a subscription delivers: its webhook URL, a RabbitMQ
// URL with its exchange and routing key, a Kafka topic on its brokers, or
// a NATS URL with its subject (and stream), or a Pub/Sub topic's full
// name.
func (s subscriptionView) where() string {
	d := s.Destination
	switch d.Type {
	case "rabbitmq":
		return d.URL + " exchange=" + d.Exchange + " routing_key=" + d.RoutingKey
	case "kafka":
		return "kafka://" + strings.Join(d.Brokers, ",") + "/" + d.Topic
	case "nats":
		if d.Stream != "" {
			return d.URL + " subject=" + d.Subject + " stream=" + d.Stream
		}
		return d.URL + " subject=" + d.Subject
	case "pubsub":
		return "pubsub://projects/" + d.Project + "/topics/" + d.Topic
	case "aws_sqs":
		return d.QueueURL
	case "aws_sns":
		return d.TopicARN
	case "aws_eventbridge":
		return d.EventBusARN
	case "aws_kinesis":
		return d.StreamARN
	}
	return d.URL
}

// destRequired are the flags create needs for each type.
var destRequired = map[string][]string{
	"webhook":         {"url"},
	"rabbitmq":        {"amqp-url", "exchange"},
	"kafka":           {"brokers", "topic"},
	"nats":            {"nats-url", "subject"},
	"pubsub":          {"project", "topic", "credentials-file"},
	"aws_sqs":         {"aws-sqs-queue-url", "aws-role-arn"},
	"aws_sns":         {"aws-sns-topic-arn", "aws-role-arn"},
	"aws_eventbridge": {"aws-eventbridge-bus-arn", "aws-role-arn"},
	"aws_kinesis":     {"aws-kinesis-stream-arn", "aws-role-arn"},
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// apply writes the broker destination flags set onto dest, with the
// OpenAPI document's field names.
func (d *destFlags) apply(c *apiCmd, dest map[string]any) (int, bool) {
	str := map[string]struct {
		field string
		v     string
	}{
		"amqp-url": {"url", d.amqpURL}, "nats-url": {"url", d.natsURL},
		"exchange": {"exchange", d.exchange}, "routing-key": {"routing_key", d.routingKey},
		"topic": {"topic", d.topic}, "subject": {"subject", d.subject}, "stream": {"stream", d.stream},
		"project":           {"project", d.project},
		"aws-sqs-queue-url": {"queue_url", d.awsQueueURL}, "aws-sns-topic-arn": {"topic_arn", d.awsTopicARN},
		"aws-eventbridge-bus-arn": {"event_bus_arn", d.awsBusARN}, "aws-kinesis-stream-arn": {"stream_arn", d.awsStreamARN},
		"aws-role-arn": {"role_arn", d.awsRoleARN}, "aws-eventbridge-source": {"source", d.awsSource},
		"aws-eventbridge-detail-type": {"detail_type", d.awsDetailType},
	}
	for flagName, fv := range str {
		if c.set[flagName] {
			dest[fv.field] = fv.v
		}
	}
	if c.set["brokers"] {
		var bs []string
		for _, b := range strings.Split(d.brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				bs = append(bs, b)
			}
		}
		dest["brokers"] = bs
	}
	if c.set["tls"] {
		dest["tls"] = d.tls
	}
	if c.set["sasl-mechanism"] || c.set["sasl-username"] || c.set["sasl-password"] {
		if strings.EqualFold(d.saslMechanism, "none") {
			dest["sasl"] = nil
		} else {
			if !c.set["sasl-mechanism"] {
				return c.usageError("--sasl-username and --sasl-password need --sasl-mechanism"), false
			}
			dest["sasl"] = map[string]string{"mechanism": d.saslMechanism, "username": d.saslUsername, "password": d.saslPass}
		}
	}
	for _, f := range []struct{ flag, field, file string }{
		{"client-cert", "client_certificate", d.clientCert}, {"client-key", "client_key", d.clientKey}, {"ca-certs", "ca_certificates", d.caCerts},
	} {
		if !c.set[f.flag] {
			continue
		}
		if strings.EqualFold(f.file, "none") {
			dest[f.field] = nil
			continue
		}
		data, err := readInput(c.e, f.file)
		if err != nil {
			return c.usageError("--%s: %v", f.flag, err), false
		}
		dest[f.field] = string(data)
	}
	if c.set["tls-min-version"] {
		switch v := strings.TrimSpace(d.tlsMinVersion); v {
		case "none", "":
			dest["tls_min_version"] = nil
		case "1.2", "1.3":
			dest["tls_min_version"] = v
		default:
			return c.usageError("--tls-min-version: 1.2 or 1.3, not %q", v), false
		}
	}
	if c.set["credentials-file"] {
		data, err := readInput(c.e, d.credentials)
		if err != nil {
			return c.usageError("--credentials-file: %v", err), false
		}
		if !json.Valid(data) {
			return c.usageError("--credentials-file: %s is not JSON (a service account key)", d.credentials), false
		}
		dest["credentials"] = json.RawMessage(data)
	}
	return exitOK, true
}
