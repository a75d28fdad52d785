package aws

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// HeadersAttribute is the SQS and SNS message attribute that carries all of
// a message's headers (ce-*, X-Lerian-*, webhook-*, traceparent,
// content-type) as one JSON object: both allow only 10 attributes, and a
// message has more headers than that (docs/aws.md#what-a-message-carries).
const HeadersAttribute = "lerian-headers"

// ownAttributes are the headers SQS and SNS messages also carry as
// attributes of their own, at most 9 so that HeadersAttribute is the
// tenth: the signature and the CloudEvents attributes a subscriber (or an
// SNS filter policy) most often reads.
var ownAttributes = []string{
	"webhook-id", "webhook-timestamp", "webhook-signature", "content-type",
	"ce-specversion", "ce-id", "ce-source", "ce-type", "ce-time",
}

// headers are m's headers as a broker carries them, with content-type.
func headers(m destination.Message) map[string]string {
	h := make(map[string]string, len(m.Headers)+1)
	for k, v := range m.BrokerHeaders() {
		h[k] = v
	}
	if m.ContentType != "" {
		h["content-type"] = m.ContentType
	}
	return h
}

// sentHeaders are what the attempt log keeps: every header the message
// carries, one way or another.
func sentHeaders(m destination.Message) map[string]string { return headers(m) }

// attributes are the 10 attributes an SQS or SNS message carries:
// ownAttributes that m has (a value may not be empty) and
// HeadersAttribute.
func attributes(m destination.Message) (own map[string]string, all string) {
	h := headers(m)
	own = make(map[string]string, len(ownAttributes))
	for _, k := range ownAttributes {
		if v := h[k]; v != "" {
			own[k] = v
		}
	}
	b, _ := json.Marshal(h) // map keys sorted: the same headers, the same bytes
	return own, string(b)
}

// dedupeID is an SQS or SNS FIFO message's group or de-duplication id:
// v itself when it is 1 to 128 printable ASCII characters (what both
// allow), else its SHA-256 in hex, so that every event id still
// de-duplicates as itself.
func dedupeID(v string) string {
	if fifoID.MatchString(v) {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

var fifoID = regexp.MustCompile(`^[!-~]{1,128}$`)

func (d *Driver) sendSQS(ctx context.Context, s *session, t destination.Target, m destination.Message) error {
	own, all := attributes(m)
	attrs := make(map[string]sqstypes.MessageAttributeValue, len(own)+1)
	for k, v := range own {
		attrs[k] = sqstypes.MessageAttributeValue{DataType: awssdk.String("String"), StringValue: awssdk.String(v)}
	}
	attrs[HeadersAttribute] = sqstypes.MessageAttributeValue{DataType: awssdk.String("String"), StringValue: awssdk.String(all)}
	in := &sqs.SendMessageInput{QueueUrl: awssdk.String(t.AWS.QueueURL), MessageBody: awssdk.String(string(m.Body)), MessageAttributes: attrs}
	if t.AWSFIFO() {
		// One group per tenant: the queue keeps a tenant's order; the
		// event id de-duplicates a redelivery within SQS's 5 minutes.
		in.MessageGroupId, in.MessageDeduplicationId = awssdk.String(dedupeID(m.TenantID)), awssdk.String(dedupeID(m.ID))
	}
	out, err := s.sqs.SendMessage(ctx, in)
	if err == nil && (out.MessageId == nil || *out.MessageId == "") {
		err = errors.New("no message id in the answer")
	}
	return err
}

func (d *Driver) sendSNS(ctx context.Context, s *session, t destination.Target, m destination.Message) error {
	own, all := attributes(m)
	attrs := make(map[string]snstypes.MessageAttributeValue, len(own)+1)
	for k, v := range own {
		attrs[k] = snstypes.MessageAttributeValue{DataType: awssdk.String("String"), StringValue: awssdk.String(v)}
	}
	attrs[HeadersAttribute] = snstypes.MessageAttributeValue{DataType: awssdk.String("String"), StringValue: awssdk.String(all)}
	in := &sns.PublishInput{TopicArn: awssdk.String(t.AWS.TopicARN), Message: awssdk.String(string(m.Body)), MessageAttributes: attrs}
	if t.AWSFIFO() {
		in.MessageGroupId, in.MessageDeduplicationId = awssdk.String(dedupeID(m.TenantID)), awssdk.String(dedupeID(m.ID))
	}
	out, err := s.sns.Publish(ctx, in)
	if err == nil && (out.MessageId == nil || *out.MessageId == "") {
		err = errors.New("no message id in the answer")
	}
	return err
}

// detail is an EventBridge entry's detail (a JSON object): the message's
// headers, and its body as data: the JSON it is (so rules match its
// fields) or, for a body that is not JSON, a string.
func detail(m destination.Message) (string, error) {
	var data any = string(m.Body)
	if json.Valid(m.Body) {
		data = json.RawMessage(m.Body)
	}
	b, err := json.Marshal(map[string]any{"headers": headers(m), "data": data})
	return string(b), err
}

func (d *Driver) sendEventBridge(ctx context.Context, s *session, t destination.Target, m destination.Message) error {
	det, err := detail(m)
	if err != nil {
		return err
	}
	source := cmpOr(t.AWS.Source, first(m.Headers["ce-source"]))
	if source == "" {
		source = "streaming-hub" // a verification probe has no event
	}
	entry := ebtypes.PutEventsRequestEntry{
		EventBusName: awssdk.String(t.AWS.EventBusARN),
		Source:       awssdk.String(source),
		DetailType:   awssdk.String(cmpOr(t.AWS.DetailType, m.EventType)),
		Detail:       awssdk.String(det),
	}
	if at, err := time.Parse(time.RFC3339Nano, first(m.Headers["ce-time"])); err == nil {
		entry.Time = &at
	}
	out, err := s.events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{entry}})
	if err != nil {
		return err
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 || out.Entries[0].EventId == nil {
		code, msg := "", "no event id in the answer"
		if len(out.Entries) == 1 {
			code, msg = awssdk.ToString(out.Entries[0].ErrorCode), awssdk.ToString(out.Entries[0].ErrorMessage)
		}
		return &entryError{code: code, message: msg}
	}
	return nil
}

// entryError is an entry PutEvents refused while the call succeeded.
type entryError struct{ code, message string }

func (e *entryError) Error() string                 { return e.code + ": " + e.message }
func (e *entryError) ErrorCode() string             { return e.code }
func (e *entryError) ErrorMessage() string          { return e.message }
func (e *entryError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }

// record is a Kinesis record's data: Kinesis records have no headers, so
// the message's headers and its body travel together, the body exactly as
// signed (a JSON string, or base64 in body_base64 when it is not UTF-8).
func record(m destination.Message) ([]byte, error) {
	r := map[string]any{"headers": headers(m)}
	if utf8.Valid(m.Body) {
		r["body"] = string(m.Body)
	} else {
		r["body_base64"] = base64.StdEncoding.EncodeToString(m.Body)
	}
	return json.Marshal(r)
}

func (d *Driver) sendKinesis(ctx context.Context, s *session, t destination.Target, m destination.Message) error {
	data, err := record(m)
	if err != nil {
		return err
	}
	// Partition key = the tenant: one shard keeps a tenant's order.
	out, err := s.kinesis.PutRecord(ctx, &kinesis.PutRecordInput{StreamARN: awssdk.String(t.AWS.StreamARN),
		PartitionKey: awssdk.String(partitionKey(m.TenantID)), Data: data})
	if err == nil && (out.SequenceNumber == nil || *out.SequenceNumber == "") {
		err = errors.New("no sequence number in the answer")
	}
	return err
}

// partitionKey is the tenant, cut to Kinesis's 256 characters.
func partitionKey(tenant string) string {
	if utf8.RuneCountInString(tenant) <= 256 {
		return tenant
	}
	return string([]rune(tenant)[:256])
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// what names a destination's resource in errors: "queue https://...",
// "topic arn:...", "event bus arn:...", "stream arn:...".
func what(t destination.Target) string {
	switch t.Type {
	case hub.DestinationAWSSQS:
		return "queue " + t.AWS.QueueURL
	case hub.DestinationAWSSNS:
		return "topic " + t.AWS.TopicARN
	case hub.DestinationAWSEventBridge:
		return "event bus " + t.AWS.EventBusARN
	}
	return "stream " + t.AWS.StreamARN
}

// action is the IAM action an attempt needs.
func action(typ string) string {
	switch typ {
	case hub.DestinationAWSSQS:
		return "sqs:SendMessage"
	case hub.DestinationAWSSNS:
		return "sns:Publish"
	case hub.DestinationAWSEventBridge:
		return "events:PutEvents"
	}
	return "kinesis:PutRecord"
}

// service is the AWS service of a type, as errors name it.
func service(typ string) string {
	switch typ {
	case hub.DestinationAWSSQS:
		return "SQS"
	case hub.DestinationAWSSNS:
		return "SNS"
	case hub.DestinationAWSEventBridge:
		return "EventBridge"
	}
	return "Kinesis"
}

// assumeFailed words a failed AssumeRole: the role, and what the tenant
// must fix when AWS refused (the trust policy).
func (d *Driver) assumeFailed(ctx context.Context, t destination.Target, err error) error {
	if e := ctxErr(ctx, err); e != nil {
		return e
	}
	role := t.AWS.RoleARN
	var api smithy.APIError
	if errors.As(err, &api) {
		text := fmt.Sprintf("aws: cannot assume role %s: %s: %s", role, api.ErrorCode(), api.ErrorMessage())
		if accessDenied(api.ErrorCode()) || httpStatus(err) == http.StatusForbidden {
			who := "the hub's principal"
			if d.o.HubPrincipal != "" {
				who = d.o.HubPrincipal
			}
			text = fmt.Sprintf("aws: access denied assuming role %s: its trust policy must allow sts:AssumeRole to %s with sts:ExternalId %s (docs/aws.md)",
				role, who, t.AWS.ExternalID)
		}
		return &destination.TenantError{Text: text, Err: opaque{err}}
	}
	if status := httpStatus(err); status != 0 {
		return &destination.TenantError{Text: fmt.Sprintf("aws: cannot assume role %s: STS answered %d", role, status), Err: opaque{err}}
	}
	return &destination.TenantError{Text: fmt.Sprintf("aws: cannot assume role %s: cannot reach STS: %s", role, destination.Describe(err)), Err: opaque{err}}
}

// sendFailed words a failed send: access denied names the role and the
// action it lacks, a missing resource names it, anything else AWS said is
// its code and message; no answer at all says which service could not be
// reached.
func (d *Driver) sendFailed(ctx context.Context, t destination.Target, err error) error {
	if e := ctxErr(ctx, err); e != nil {
		return e
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		var text string
		switch {
		case accessDenied(code) || httpStatus(err) == http.StatusForbidden:
			text = fmt.Sprintf("aws: access denied: role %s may not %s on %s (%s: %s)", t.AWS.RoleARN, action(t.Type), what(t), code, api.ErrorMessage())
		case notFound(code):
			text = fmt.Sprintf("aws: %s does not exist (%s)", what(t), code)
		default:
			text = fmt.Sprintf("aws: %s refused the message to %s: %s: %s", service(t.Type), what(t), code, api.ErrorMessage())
		}
		return &destination.TenantError{Text: text, Err: opaque{err}}
	}
	switch status := httpStatus(err); {
	case status == http.StatusForbidden:
		return &destination.TenantError{Text: fmt.Sprintf("aws: access denied: role %s may not %s on %s (%s answered 403)",
			t.AWS.RoleARN, action(t.Type), what(t), service(t.Type)), Err: opaque{err}}
	case status != 0:
		return &destination.TenantError{Text: fmt.Sprintf("aws: %s answered %d to the message to %s", service(t.Type), status, what(t)), Err: opaque{err}}
	}
	return &destination.TenantError{Text: fmt.Sprintf("aws: cannot reach %s for %s: %s", service(t.Type), what(t), destination.Describe(err)), Err: opaque{err}}
}

// opaque keeps an error's text for the server's log (destination.Detail)
// but not its chain, so that the send path keeps the driver's words
// rather than rewording a network error underneath.
type opaque struct{ err error }

func (o opaque) Error() string { return o.err.Error() }

// httpStatus is the status of AWS's answer under err; 0: none.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func accessDenied(code string) bool {
	switch {
	case strings.Contains(code, "AccessDenied"), code == "AuthorizationError", code == "AuthorizationErrorException",
		strings.HasPrefix(code, "KMS."), code == "KMSAccessDeniedException", code == "UnauthorizedOperation":
		return true
	}
	return false
}

func notFound(code string) bool {
	switch code {
	case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NotFound", "NotFoundException", "ResourceNotFoundException":
		return true
	}
	return false
}

// expiredCredentials is whether err says the role's credentials are no
// longer good (expired or revoked early).
func expiredCredentials(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException", "InvalidToken", "RequestExpired":
		return true
	}
	return false
}
