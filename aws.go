package hub

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
)

// AWS destination types (docs/aws.md): the hub assumes a role in the
// tenant's account and sends with it.
const (
	DestinationAWSSQS         = "aws_sqs"
	DestinationAWSSNS         = "aws_sns"
	DestinationAWSEventBridge = "aws_eventbridge"
	DestinationAWSKinesis     = "aws_kinesis"
)

// IsAWS reports whether typ is an AWS destination type.
func IsAWS(typ string) bool {
	switch typ {
	case DestinationAWSSQS, DestinationAWSSNS, DestinationAWSEventBridge, DestinationAWSKinesis:
		return true
	}
	return false
}

// AWS is an AWS destination's settings. None is secret: the hub holds no
// credential of the tenant's, only the right to assume RoleARN, which the
// role's trust policy grants to the hub's principal with ExternalID.
type AWS struct {
	QueueURL    string // aws_sqs: https://sqs.<region>.amazonaws.com/<account>/<queue>
	TopicARN    string // aws_sns
	EventBusARN string // aws_eventbridge
	// Source and DetailType are an EventBridge entry's; "": the event's
	// source and its event type.
	Source     string
	DetailType string
	StreamARN  string // aws_kinesis
	// RoleARN is the role the hub assumes to send.
	RoleARN string
	// ExternalID is made by the hub when the destination becomes an AWS
	// one (NewExternalID) and kept for the subscription's life: a tenant
	// never chooses it, so no tenant can have the hub assume a role made
	// for another tenant's subscription.
	ExternalID string
}

// Limits of AWS destinations.
const (
	MaxEventBridgeSource     = 256
	MaxEventBridgeDetailType = 128
)

// ExternalIDPrefix starts every external id the hub makes.
const ExternalIDPrefix = "shx_"

// NewExternalID is a fresh external id: shx_ and 32 random hex digits.
func NewExternalID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return ExternalIDPrefix + hex.EncodeToString(b)
}

var externalIDPattern = regexp.MustCompile(`^shx_[0-9a-f]{32}$`)

// ValidExternalID reports whether id has the form the hub makes.
func ValidExternalID(id string) bool { return externalIDPattern.MatchString(id) }

// ARN is an Amazon Resource Name's parts.
type ARN struct {
	Partition, Service, Region, Account, Resource string
}

func (a ARN) String() string {
	return "arn:" + a.Partition + ":" + a.Service + ":" + a.Region + ":" + a.Account + ":" + a.Resource
}

var (
	// awsRegion is a region name: us-east-1, eu-central-2, us-gov-west-1,
	// cn-north-1, ap-southeast-4.
	awsRegion  = regexp.MustCompile(`^[a-z]{2,4}(-[a-z]+)+-[0-9]{1,2}$`)
	awsAccount = regexp.MustCompile(`^[0-9]{12}$`)
	// Resource names, by type.
	sqsQueueName    = regexp.MustCompile(`^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)
	snsTopicName    = regexp.MustCompile(`^(?:[A-Za-z0-9_-]{1,256}|[A-Za-z0-9_-]{1,251}\.fifo)$`)
	eventBusName    = regexp.MustCompile(`^[/.\-_A-Za-z0-9]{1,256}$`)
	kinesisStream   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	iamRoleResource = regexp.MustCompile(`^role/(?:[\x21-\x2E\x30-\x7E]+/){0,16}[A-Za-z0-9+=,.@_-]{1,64}$`)
	iamPrincipal    = regexp.MustCompile(`^(?:root|(?:role|user)/(?:[\x21-\x2E\x30-\x7E]+/){0,16}[A-Za-z0-9+=,.@_-]{1,64})$`)
)

// ValidRegion reports whether r is an AWS region's name.
func ValidRegion(r string) bool { return awsRegion.MatchString(r) }

// partitionOf is the partition of region: aws-cn for China's, aws-us-gov
// for GovCloud's, aws for the others.
func partitionOf(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// ParseARN splits an ARN strictly: arn:<partition>:<service>:<region>:
// <account>:<resource>, the partition one of aws, aws-cn or aws-us-gov and
// agreeing with the region (when there is one), the account 12 digits.
// field names the field in errors.
func ParseARN(field, s string) (ARN, error) {
	bad := func(why string) (ARN, error) {
		return ARN{}, Errorf(EINVALID, "%s: %q is not an ARN (%s)", field, s, why)
	}
	if len(s) > 2048 || !PlainText(s) || strings.ContainsAny(s, " \t") {
		return bad("at most 2048 bytes of plain text without spaces")
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return bad("arn:<partition>:<service>:<region>:<account>:<resource>")
	}
	a := ARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4], Resource: parts[5]}
	switch a.Partition {
	case "aws", "aws-cn", "aws-us-gov":
	default:
		return bad("the partition must be aws, aws-cn or aws-us-gov")
	}
	if a.Region != "" {
		if !awsRegion.MatchString(a.Region) {
			return bad("its region is not a region's name")
		}
		if partitionOf(a.Region) != a.Partition {
			return bad("region " + a.Region + " is not in partition " + a.Partition)
		}
	}
	if !awsAccount.MatchString(a.Account) {
		return bad("the account must be 12 digits")
	}
	if a.Resource == "" {
		return bad("no resource")
	}
	return a, nil
}

// parseServiceARN parses an ARN of service whose resource, after prefix,
// is a name that name accepts; it returns the ARN and that name.
func parseServiceARN(field, s, service, prefix string, name *regexp.Regexp, what string) (ARN, error) {
	a, err := ParseARN(field, s)
	if err != nil {
		return a, err
	}
	if a.Service != service {
		return a, Errorf(EINVALID, "%s: %q is not %s ARN (arn:aws:%s:...)", field, s, what, service)
	}
	if a.Region == "" {
		return a, Errorf(EINVALID, "%s: %q has no region", field, s)
	}
	n, ok := strings.CutPrefix(a.Resource, prefix)
	if !ok || !name.MatchString(n) {
		return a, Errorf(EINVALID, "%s: %q is not %s ARN: its resource must be %s<name>", field, s, what, prefix)
	}
	return a, nil
}

// ParseRoleARN checks an IAM role's ARN: arn:aws:iam::<account>:role/
// [path/]<name>, without a region.
func ParseRoleARN(field, s string) (ARN, error) {
	a, err := ParseARN(field, s)
	if err != nil {
		return a, err
	}
	if a.Service != "iam" || a.Region != "" || !iamRoleResource.MatchString(a.Resource) {
		return a, Errorf(EINVALID, "%s: %q is not an IAM role's ARN (arn:aws:iam::<account>:role/<name>)", field, s)
	}
	return a, nil
}

// RoleName splits a role ARN's resource into its path ("/" when none)
// and its name.
func RoleName(roleARN string) (path, name string) {
	a, err := ParseRoleARN("role_arn", roleARN)
	if err != nil {
		return "", ""
	}
	rest := strings.TrimPrefix(a.Resource, "role/")
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "/", rest
	}
	return "/" + rest[:i+1], rest[i+1:]
}

// ValidatePrincipalARN checks the hub's own principal, the one tenants'
// roles trust: an IAM role, a user or an account's root.
func ValidatePrincipalARN(field, s string) error {
	a, err := ParseARN(field, s)
	if err != nil {
		return err
	}
	if a.Service != "iam" || a.Region != "" || !iamPrincipal.MatchString(a.Resource) {
		return Errorf(EINVALID, "%s: %q is not an IAM role's, user's or account root's ARN (arn:aws:iam::<account>:role/<name>)", field, s)
	}
	return nil
}

// QueueURL is an SQS queue URL's parts.
type QueueURL struct {
	Region  string // "" for a queue of the operator's endpoint
	Account string
	Name    string
}

// ParseQueueURL checks an SQS queue URL: https://sqs.<region>.amazonaws.com
// (.cn in China)/<account>/<name>, nothing else (no port, userinfo, query
// or fragment); or, when endpoint (the operator's SQS endpoint,
// AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL) is set, also a URL of that
// endpoint's scheme, host and port: a tenant never chooses where the hub
// connects.
func ParseQueueURL(field, raw, endpoint string) (QueueURL, error) {
	form := "https://sqs.<region>.amazonaws.com/<account>/<queue>"
	bad := func(why string) (QueueURL, error) {
		return QueueURL{}, Errorf(EINVALID, "%s: %q is not an SQS queue URL (%s): %s", field, raw, form, why)
	}
	if len(raw) > MaxURLBytes || !PlainText(raw) {
		return bad("at most 2048 bytes of plain text")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return bad("not an absolute URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return bad("no userinfo, query or fragment")
	}
	var q QueueURL
	host := strings.ToLower(u.Host)
	switch {
	case endpoint != "" && sameEndpoint(u, endpoint):
	case u.Scheme != "https":
		if endpoint != "" {
			return bad("its host must be sqs.<region>.amazonaws.com or this hub's SQS endpoint")
		}
		return bad("https only")
	default:
		rest, ok := strings.CutPrefix(host, "sqs.")
		if ok {
			if r, cut := strings.CutSuffix(rest, ".amazonaws.com.cn"); cut && strings.HasPrefix(r, "cn-") {
				q.Region = r
			} else if r, cut := strings.CutSuffix(rest, ".amazonaws.com"); cut && !strings.HasPrefix(r, "cn-") {
				q.Region = r
			}
		}
		if q.Region == "" || !awsRegion.MatchString(q.Region) {
			if endpoint != "" {
				return bad("its host must be sqs.<region>.amazonaws.com or this hub's SQS endpoint")
			}
			return bad("its host must be sqs.<region>.amazonaws.com")
		}
	}
	parts := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if len(parts) != 2 || !awsAccount.MatchString(parts[0]) || !sqsQueueName.MatchString(parts[1]) {
		return bad("its path must be /<12-digit account>/<queue name> (1 to 80 of A-Z a-z 0-9 - _, .fifo last for a FIFO queue)")
	}
	q.Account, q.Name = parts[0], parts[1]
	return q, nil
}

// sameEndpoint reports whether u has endpoint's scheme, host and port.
func sameEndpoint(u *url.URL, endpoint string) bool {
	e, err := url.Parse(endpoint)
	if err != nil || e.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, e.Scheme) && strings.EqualFold(u.Host, e.Host)
}

// ARN is the queue's ARN in region (the queue's own, or def for a queue
// of the operator's endpoint).
func (q QueueURL) ARN(def string) string {
	r := q.Region
	if r == "" {
		r = def
	}
	return ARN{Partition: partitionOf(r), Service: "sqs", Region: r, Account: q.Account, Resource: q.Name}.String()
}

// AWSResource is where an AWS destination sends: the queue URL or the
// topic's, bus's or stream's ARN.
func (d Destination) AWSResource() string {
	switch d.Type {
	case DestinationAWSSQS:
		return d.AWS.QueueURL
	case DestinationAWSSNS:
		return d.AWS.TopicARN
	case DestinationAWSEventBridge:
		return d.AWS.EventBusARN
	case DestinationAWSKinesis:
		return d.AWS.StreamARN
	}
	return ""
}

// AWSRegion is the region of an AWS destination's resource: from its ARN,
// or its queue URL's host; "" for a queue of the operator's endpoint (the
// hub's own region applies).
func (d Destination) AWSRegion() string {
	if d.Type == DestinationAWSSQS {
		// A queue of the operator's endpoint has none: it does not parse
		// without that endpoint.
		q, _ := ParseQueueURL("queue_url", d.AWS.QueueURL, "")
		return q.Region
	}
	a, err := ParseARN("arn", d.AWSResource())
	if err != nil {
		return ""
	}
	return a.Region
}

// AWSFIFO reports whether an aws_sqs or aws_sns destination is a FIFO
// queue or topic (its name ends in .fifo): its messages carry a group
// (the tenant) and a de-duplication id (the event's).
func (d Destination) AWSFIFO() bool {
	switch d.Type {
	case DestinationAWSSQS, DestinationAWSSNS:
		return strings.HasSuffix(d.AWSResource(), ".fifo")
	}
	return false
}

// ValidateAWS checks an AWS destination's settings; sqsEndpoint is the
// operator's SQS endpoint ("" for AWS's own). Each 400 names its field.
func ValidateAWS(d Destination, sqsEndpoint string) error {
	a := d.AWS
	set := map[string]bool{
		"queue_url": a.QueueURL != "", "topic_arn": a.TopicARN != "", "event_bus_arn": a.EventBusARN != "",
		"stream_arn": a.StreamARN != "", "source": a.Source != "", "detail_type": a.DetailType != "",
	}
	own := map[string][]string{
		DestinationAWSSQS:         {"queue_url"},
		DestinationAWSSNS:         {"topic_arn"},
		DestinationAWSEventBridge: {"event_bus_arn", "source", "detail_type"},
		DestinationAWSKinesis:     {"stream_arn"},
	}[d.Type]
	for _, f := range []string{"queue_url", "topic_arn", "event_bus_arn", "stream_arn", "source", "detail_type"} {
		if set[f] && !containsString(own, f) {
			return Errorf(EINVALID, "destination.%s: not a field of %s destinations", f, d.Type)
		}
	}
	if a.RoleARN == "" {
		return Errorf(EINVALID, "destination.role_arn: required (the role in your account the hub assumes: docs/aws.md)")
	}
	if _, err := ParseRoleARN("destination.role_arn", a.RoleARN); err != nil {
		return err
	}
	if !ValidExternalID(a.ExternalID) {
		return Errorf(EINTERNAL, "destination.external_id: not made by the hub")
	}
	switch d.Type {
	case DestinationAWSSQS:
		if a.QueueURL == "" {
			return Errorf(EINVALID, "destination.queue_url: required")
		}
		_, err := ParseQueueURL("destination.queue_url", a.QueueURL, sqsEndpoint)
		return err
	case DestinationAWSSNS:
		if a.TopicARN == "" {
			return Errorf(EINVALID, "destination.topic_arn: required")
		}
		_, err := parseServiceARN("destination.topic_arn", a.TopicARN, "sns", "", snsTopicName, "an SNS topic's")
		return err
	case DestinationAWSKinesis:
		if a.StreamARN == "" {
			return Errorf(EINVALID, "destination.stream_arn: required")
		}
		_, err := parseServiceARN("destination.stream_arn", a.StreamARN, "kinesis", "stream/", kinesisStream, "a Kinesis data stream's")
		return err
	}
	if a.EventBusARN == "" {
		return Errorf(EINVALID, "destination.event_bus_arn: required")
	}
	if _, err := parseServiceARN("destination.event_bus_arn", a.EventBusARN, "events", "event-bus/", eventBusName, "an EventBridge event bus's"); err != nil {
		return err
	}
	if len(a.Source) > MaxEventBridgeSource || !PlainText(a.Source) {
		return Errorf(EINVALID, "destination.source: at most %d bytes of plain text", MaxEventBridgeSource)
	}
	if strings.HasPrefix(strings.ToLower(a.Source), "aws.") {
		return Errorf(EINVALID, "destination.source: sources starting with aws. are AWS's own")
	}
	if len(a.DetailType) > MaxEventBridgeDetailType || !PlainText(a.DetailType) {
		return Errorf(EINVALID, "destination.detail_type: at most %d bytes of plain text", MaxEventBridgeDetailType)
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
