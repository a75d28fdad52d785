package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// AWS is what the API needs of the hub's AWS settings (docs/aws.md).
type AWS struct {
	// HubPrincipalARN and SetupTemplateURL make the setup link
	// (STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN, STREAMING_HUB_AWS_SETUP_TEMPLATE_URL);
	// either empty: no link.
	HubPrincipalARN  string
	SetupTemplateURL string
	// SQSEndpoint is the operator's SQS endpoint (AWS_ENDPOINT_URL_SQS or
	// AWS_ENDPOINT_URL), the only host besides sqs.<region>.amazonaws.com
	// a queue URL may name; "": none.
	SQSEndpoint string
}

func (a AWS) setupOffered() bool { return a.HubPrincipalARN != "" && a.SetupTemplateURL != "" }

// The CloudFormation template's parameters (deploy/aws/streaming-hub-role.json).
const (
	paramPrincipal  = "HubPrincipalArn"
	paramExternalID = "ExternalId"
	paramRoleName   = "RoleName"
	paramRolePath   = "RolePath"
)

// resourceParam is the template's parameter of each type's resource.
var resourceParam = map[string]string{
	hub.DestinationAWSSQS:         "QueueArn",
	hub.DestinationAWSSNS:         "TopicArn",
	hub.DestinationAWSEventBridge: "EventBusArn",
	hub.DestinationAWSKinesis:     "StreamArn",
}

// consoleHost is the AWS console of region's partition.
func consoleHost(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "console.amazonaws.cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "console.amazonaws-us-gov.com"
	}
	return "console.aws.amazon.com"
}

// setupURL is the CloudFormation quick-create link that makes the role:
// the template with the hub's principal and externalID filled in, and the
// role's name and the resource when a destination gives them.
func (a AWS) setupURL(region, stackName, externalID string, d hub.Destination) string {
	params := url.Values{}
	params.Set("templateURL", a.SetupTemplateURL)
	params.Set("stackName", stackName)
	params.Set("param_"+paramPrincipal, a.HubPrincipalARN)
	params.Set("param_"+paramExternalID, externalID)
	if d.AWS.RoleARN != "" {
		path, name := hub.RoleName(d.AWS.RoleARN)
		params.Set("param_"+paramRoleName, name)
		params.Set("param_"+paramRolePath, path)
	}
	if p, arn := resourceParam[d.Type], resourceARN(d, region); p != "" && arn != "" {
		params.Set("param_"+p, arn)
	}
	return "https://" + consoleHost(region) + "/cloudformation/home?region=" + url.QueryEscape(region) +
		"#/stacks/quickcreate?" + params.Encode()
}

// resourceARN is the ARN of d's resource (an SQS queue's from its URL).
func resourceARN(d hub.Destination, region string) string {
	if d.Type == hub.DestinationAWSSQS {
		q, err := hub.ParseQueueURL("queue_url", d.AWS.QueueURL, anyHost(d.AWS.QueueURL))
		if err != nil {
			return ""
		}
		return q.ARN(region)
	}
	return d.AWSResource()
}

// anyHost is raw's own scheme and host, so that a stored queue URL of the
// operator's endpoint still parses.
func anyHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// regionOf is d's region, or us-east-1 for a queue of the operator's
// endpoint (its URL names none).
func regionOf(d hub.Destination) string {
	if r := d.AWSRegion(); r != "" {
		return r
	}
	return "us-east-1"
}

// stackNameBad are the characters a stack name may not hold.
var stackNameBad = regexp.MustCompile(`[^A-Za-z0-9-]`)

// stackName is the suggested stack's name: streaming-hub-<subscription>.
func stackName(subscriptionID string) string {
	if subscriptionID == "" {
		return "streaming-hub-access"
	}
	n := "streaming-hub-" + stackNameBad.ReplaceAllString(subscriptionID, "-")
	if len(n) > 128 {
		n = n[:128]
	}
	return n
}

// awsSetupURL is sub's setup link, "" when the hub offers none or sub is
// not an AWS destination.
func (s *Server) awsSetupURL(sub hub.Subscription) string {
	d := sub.Destination
	if !s.deps.AWS.setupOffered() || !hub.IsAWS(d.Type) || d.AWS.ExternalID == "" {
		return ""
	}
	return s.deps.AWS.setupURL(regionOf(d), stackName(sub.ID), d.AWS.ExternalID, d)
}

// awsSetupJSON is the answer of GET /v1/aws/setup.
type awsSetupJSON struct {
	HubPrincipalARN string  `json:"hub_principal_arn"`
	ExternalID      string  `json:"external_id"`
	TemplateURL     string  `json:"template_url"`
	Region          string  `json:"region"`
	SubscriptionID  *string `json:"subscription_id"`
	SetupURL        string  `json:"setup_url"`
}

// awsSetup: GET /v1/aws/setup. The hub's principal and the CloudFormation
// quick-create link of the role it may assume: for a subscription
// (?subscription_id=, its external id, role and resource filled in), or
// with a given (?external_id=) or fresh external id.
func (s *Server) awsSetup(w http.ResponseWriter, r *http.Request) error {
	tenantID, err := s.tenantScope(r)
	if err != nil {
		return err
	}
	if !s.deps.AWS.setupOffered() {
		return hub.Errorf(hub.ENOTFOUND, "this hub offers no AWS setup link: its operator has not set STREAMING_HUB_AWS_SETUP_TEMPLATE_URL and STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN (a role can still be made by hand: docs/aws.md)")
	}
	q := r.URL.Query()
	for k := range q {
		if k != "subscription_id" && k != "external_id" && k != "region" {
			return hub.Errorf(hub.EINVALID, "%s: not a parameter of this route (subscription_id, external_id, region)", k)
		}
	}
	subID, externalID, region := q.Get("subscription_id"), q.Get("external_id"), q.Get("region")
	if region != "" && !hub.ValidRegion(region) {
		return hub.Errorf(hub.EINVALID, "region: %q is not an AWS region's name (us-east-1, eu-west-2, ...)", region)
	}
	out := awsSetupJSON{HubPrincipalARN: s.deps.AWS.HubPrincipalARN, TemplateURL: s.deps.AWS.SetupTemplateURL}
	var d hub.Destination
	switch {
	case subID != "" && externalID != "":
		return hub.Errorf(hub.EINVALID, "external_id: give subscription_id or external_id, not both")
	case subID != "":
		sub, err := s.deps.Store.GetSubscription(r.Context(), tenantID, subID)
		if err != nil {
			return err
		}
		if !hub.IsAWS(sub.Destination.Type) {
			return hub.Errorf(hub.EINVALID, "subscription_id: %s delivers to a %s destination, not an AWS one", sub.ID, sub.Destination.Type)
		}
		d, externalID, out.SubscriptionID = sub.Destination, sub.Destination.AWS.ExternalID, &sub.ID
		if region == "" {
			region = regionOf(d)
		}
	case externalID != "":
		if !hub.ValidExternalID(externalID) {
			return hub.Errorf(hub.EINVALID, "external_id: %q is not one the hub made (shx_ and 32 hex digits)", externalID)
		}
	default:
		externalID = hub.NewExternalID()
	}
	if region == "" {
		region = "us-east-1"
	}
	out.ExternalID, out.Region = externalID, region
	name := ""
	if out.SubscriptionID != nil {
		name = *out.SubscriptionID
	}
	out.SetupURL = s.deps.AWS.setupURL(region, stackName(name), externalID, d)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// applyAWS writes a request's AWS fields onto dest; it reports whether
// where the destination delivers, or as whom, changed (then it must be
// verified again). The external id is the hub's: a request may repeat it,
// never change it.
func applyAWS(d *destinationRequest, dest *hub.Destination) (changed bool, err error) {
	if len(d.ExternalID) > 0 {
		var given string
		if err := json.Unmarshal(d.ExternalID, &given); err != nil || given != dest.AWS.ExternalID || given == "" {
			return false, hub.Errorf(hub.EINVALID, "destination.external_id: made by the hub and shown in the answer; it cannot be set or changed (docs/aws.md)")
		}
	}
	a := &dest.AWS
	for _, f := range []struct {
		from     *string
		to       *string
		verified bool // a change must be verified again
	}{
		{d.QueueURL, &a.QueueURL, true}, {d.TopicARN, &a.TopicARN, true}, {d.EventBusARN, &a.EventBusARN, true},
		{d.StreamARN, &a.StreamARN, true}, {d.RoleARN, &a.RoleARN, true}, {d.Source, &a.Source, false}, {d.DetailType, &a.DetailType, false},
	} {
		if f.from != nil && *f.from != *f.to {
			*f.to = *f.from
			changed = changed || f.verified
		}
	}
	if hub.IsAWS(dest.Type) && a.ExternalID == "" {
		a.ExternalID = hub.NewExternalID()
	}
	return changed, nil
}

// validateAWS checks an AWS destination: none of the other types' fields,
// and its own (hub.ValidateAWS), the queue URL's host AWS's or the
// operator's SQS endpoint.
func validateAWS(d hub.Destination, secrets hub.SubscriptionSecrets, sqsEndpoint string) error {
	if d.URL != "" || len(d.Headers) > 0 || d.AuthType != "" || d.Exchange != "" || d.RoutingKey != "" || d.Brokers != nil ||
		d.Topic != "" || d.TLS || d.SASLMechanism != "" || d.Subject != "" || d.Stream != "" || d.Project != "" ||
		secrets.Broker != (hub.Credentials{}) || d.HasTLSSettings() {
		return hub.Errorf(hub.EINVALID, "destination: url, headers, auth, exchange, routing_key, brokers, topic, tls, sasl, subject, stream, project, credentials and TLS settings are not for AWS destinations (use %s and role_arn: docs/aws.md)", awsResourceField(d.Type))
	}
	return hub.ValidateAWS(d, sqsEndpoint)
}

func awsResourceField(typ string) string {
	switch typ {
	case hub.DestinationAWSSQS:
		return "queue_url"
	case hub.DestinationAWSSNS:
		return "topic_arn"
	case hub.DestinationAWSEventBridge:
		return "event_bus_arn, source and detail_type"
	}
	return "stream_arn"
}

// notAWS refuses an AWS field on a destination of another type.
func notAWS(a hub.AWS) error {
	for _, f := range []struct{ name, v string }{{"queue_url", a.QueueURL}, {"topic_arn", a.TopicARN}, {"event_bus_arn", a.EventBusARN},
		{"stream_arn", a.StreamARN}, {"source", a.Source}, {"detail_type", a.DetailType}, {"role_arn", a.RoleARN}} {
		if f.v != "" {
			return hub.Errorf(hub.EINVALID, "destination.%s: only for aws_sqs, aws_sns, aws_eventbridge and aws_kinesis destinations", f.name)
		}
	}
	return nil
}
