package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const (
	awsRole  = "arn:aws:iam::111122223333:role/streaming-hub-delivery"
	awsQueue = "https://sqs.eu-west-1.amazonaws.com/111122223333/ledger.fifo"
)

type awsAnswer struct {
	ID                string `json:"id"`
	VerificationState string `json:"verification_state"`
	Destination       struct {
		Type        string `json:"type"`
		QueueURL    string `json:"queue_url"`
		TopicARN    string `json:"topic_arn"`
		RoleARN     string `json:"role_arn"`
		ExternalID  string `json:"external_id"`
		Region      string `json:"region"`
		SetupURL    string `json:"aws_setup_url"`
		EventBusARN string `json:"event_bus_arn"`
		Source      string `json:"source"`
	} `json:"destination"`
}

func sqsBody(extra string) string {
	return `{"name":"to-sqs","event_types":[{"type":"transaction.posted","schema_major":1}],
	 "destination":{"type":"aws_sqs","queue_url":"` + awsQueue + `","role_arn":"` + awsRole + `"` + extra + `}}`
}

// The external id is the hub's: made at create and shown, never chosen by
// a tenant (a body that sets it is a 400), kept across PATCHes (a new
// role, another AWS type), gone when the destination stops being AWS.
func TestSubscriptions_AWSExternalIDIsMadeByTheHubAndKept(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{})
	acme := h.tenant("acme")
	var a awsAnswer
	acme.json("POST", "/v1/subscriptions", sqsBody(""), 201, &a)
	d := a.Destination
	if d.Type != "aws_sqs" || d.QueueURL != awsQueue || d.RoleARN != awsRole || !hub.ValidExternalID(d.ExternalID) || d.Region != "eu-west-1" {
		t.Fatalf("created %+v", d)
	}
	if d.SetupURL != "" {
		t.Errorf("aws_setup_url %q without the hub's setup settings", d.SetupURL)
	}
	ext := d.ExternalID

	status, _, body := acme.do("POST", "/v1/subscriptions", sqsBody(`,"external_id":"shx_00000000000000000000000000000000"`))
	if status != 400 || !strings.Contains(string(body), "destination.external_id") {
		t.Fatalf("create choosing the external id: %d %s", status, body)
	}
	if _, _, b := acme.do("POST", "/v1/subscriptions", sqsBody("")); strings.Contains(string(b), ext) {
		t.Fatalf("two subscriptions share an external id: %s", b)
	}

	var p awsAnswer
	acme.json("POST", "/v1/subscriptions/"+a.ID+"/verify", "", 422, nil) // no AWS driver here: it fails
	acme.json("PATCH", "/v1/subscriptions/"+a.ID, `{"destination":{"role_arn":"arn:aws:iam::111122223333:role/other","external_id":"`+ext+`"}}`, 200, &p)
	if p.Destination.ExternalID != ext || p.Destination.RoleARN != "arn:aws:iam::111122223333:role/other" || p.VerificationState != "pending" {
		t.Fatalf("after a new role: %+v (%s)", p.Destination, p.VerificationState)
	}
	status, _, body = acme.do("PATCH", "/v1/subscriptions/"+a.ID, `{"destination":{"external_id":"`+hub.NewExternalID()+`"}}`)
	if status != 400 || !strings.Contains(string(body), "destination.external_id") {
		t.Fatalf("a PATCH changing the external id: %d %s", status, body)
	}
	p = awsAnswer{}
	acme.json("PATCH", "/v1/subscriptions/"+a.ID, `{"destination":{"type":"aws_sns","topic_arn":"arn:aws:sns:eu-west-1:111122223333:ledger","role_arn":"`+awsRole+`"}}`, 200, &p)
	if p.Destination.Type != "aws_sns" || p.Destination.ExternalID != ext || p.Destination.QueueURL != "" {
		t.Fatalf("after another AWS type: %+v", p.Destination)
	}
	p = awsAnswer{}
	acme.json("PATCH", "/v1/subscriptions/"+a.ID, `{"destination":{"type":"webhook","url":"https://hooks.example.com/in"}}`, 200, &p)
	if p.Destination.ExternalID != "" || p.Destination.RoleARN != "" {
		t.Fatalf("a webhook keeps AWS fields: %+v", p.Destination)
	}
	p = awsAnswer{}
	acme.json("PATCH", "/v1/subscriptions/"+a.ID, `{"destination":{"type":"aws_sqs","queue_url":"`+awsQueue+`","role_arn":"`+awsRole+`"}}`, 200, &p)
	if !hub.ValidExternalID(p.Destination.ExternalID) || p.Destination.ExternalID == ext {
		t.Fatalf("an AWS destination again: external id %q, want a new one", p.Destination.ExternalID)
	}
}

// Tenants give ARNs and queue URLs, never endpoints: a queue URL whose
// host is not sqs.<region>.amazonaws.com (or the operator's SQS
// endpoint), a malformed ARN, a missing role or a field of another type
// is a 400 naming the field.
func TestSubscriptions_AWSDestinationsAreValidatedStrictly(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{aws: api.AWS{SQSEndpoint: "http://127.0.0.1:4566"}})
	acme := h.tenant("acme")
	post := func(dest string) (int, string) {
		status, _, body := acme.do("POST", "/v1/subscriptions", `{"name":"aws","event_types":[{"type":"transaction.posted","schema_major":1}],"destination":`+dest+`}`)
		return status, string(body)
	}
	for _, c := range []struct{ dest, field string }{
		{`{"type":"aws_sqs","queue_url":"https://evil.example.com/111122223333/q","role_arn":"` + awsRole + `"}`, "destination.queue_url"},
		{`{"type":"aws_sqs","queue_url":"http://169.254.169.254/111122223333/q","role_arn":"` + awsRole + `"}`, "destination.queue_url"},
		{`{"type":"aws_sqs","queue_url":"http://127.0.0.1:4567/111122223333/q","role_arn":"` + awsRole + `"}`, "destination.queue_url"},
		{`{"type":"aws_sqs","queue_url":"` + awsQueue + `"}`, "destination.role_arn"},
		{`{"type":"aws_sqs","queue_url":"` + awsQueue + `","role_arn":"arn:aws:iam::111122223333:user/u"}`, "destination.role_arn"},
		{`{"type":"aws_sqs","queue_url":"` + awsQueue + `","role_arn":"` + awsRole + `","url":"https://x.example.com"}`, "destination: url"},
		{`{"type":"aws_sqs","queue_url":"` + awsQueue + `","role_arn":"` + awsRole + `","headers":{"X-A":"b"}}`, "destination: url"},
		{`{"type":"aws_sqs","queue_url":"` + awsQueue + `","role_arn":"` + awsRole + `","topic_arn":"arn:aws:sns:eu-west-1:111122223333:t"}`, "destination.topic_arn"},
		{`{"type":"aws_sns","topic_arn":"arn:aws:sns:eu-west-1:11112222333:t","role_arn":"` + awsRole + `"}`, "destination.topic_arn"},
		{`{"type":"aws_eventbridge","event_bus_arn":"arn:aws:events:eu-west-1:111122223333:event-bus/b","source":"aws.s3","role_arn":"` + awsRole + `"}`, "destination.source"},
		{`{"type":"aws_kinesis","stream_arn":"arn:aws:kinesis:eu-west-1:111122223333:ledger","role_arn":"` + awsRole + `"}`, "destination.stream_arn"},
		{`{"type":"webhook","url":"https://hooks.example.com/in","role_arn":"` + awsRole + `"}`, "destination.role_arn"},
		{`{"type":"aws_s3","role_arn":"` + awsRole + `"}`, "destination.type"},
	} {
		if status, body := post(c.dest); status != 400 || !strings.Contains(body, c.field) {
			t.Errorf("%s: %d %s, want a 400 naming %s", c.dest, status, body, c.field)
		}
	}
	for _, ok := range []string{
		`{"type":"aws_sqs","queue_url":"http://127.0.0.1:4566/111122223333/q","role_arn":"` + awsRole + `"}`,
		`{"type":"aws_sns","topic_arn":"arn:aws:sns:eu-west-1:111122223333:t.fifo","role_arn":"` + awsRole + `"}`,
		`{"type":"aws_eventbridge","event_bus_arn":"arn:aws:events:eu-west-1:111122223333:event-bus/default","source":"com.acme","detail_type":"ledger","role_arn":"` + awsRole + `"}`,
		`{"type":"aws_kinesis","stream_arn":"arn:aws:kinesis:eu-west-1:111122223333:stream/ledger","role_arn":"` + awsRole + `"}`,
	} {
		if status, body := post(ok); status != 201 {
			t.Errorf("%s: %d %s", ok, status, body)
		}
	}
}

// The setup link: without the hub's settings GET /v1/aws/setup says so
// and answers carry no link; with them, it gives the hub's principal, an
// external id (fresh, given, or a subscription's) and the CloudFormation
// quick-create link with both filled in, and so does the subscription's
// answer.
func TestAWSSetup_TheQuickCreateLink(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{})
	acme := h.tenant("acme")
	status, _, body := acme.do("GET", "/v1/aws/setup", "")
	if status != 404 || !strings.Contains(string(body), "STREAMING_HUB_AWS_SETUP_TEMPLATE_URL") {
		t.Fatalf("without the settings: %d %s", status, body)
	}

	const principal = "arn:aws:iam::999988887777:role/streaming-hub"
	const template = "https://lerian-templates.s3.amazonaws.com/streaming-hub-role.json"
	h = newHubAPI(t, testkit.Drivers[1], apiOptions{aws: api.AWS{HubPrincipalARN: principal, SetupTemplateURL: template}})
	acme, other := h.tenant("acme"), h.tenant("other")
	var a awsAnswer
	acme.json("POST", "/v1/subscriptions", sqsBody(""), 201, &a)
	checkLink := func(link, region, externalID string, params map[string]string) {
		t.Helper()
		u, err := url.Parse(link)
		if err != nil || u.Host != "console.aws.amazon.com" || u.Path != "/cloudformation/home" || u.Query().Get("region") != region {
			t.Fatalf("link %q: the CloudFormation console of %s expected", link, region)
		}
		frag, ok := strings.CutPrefix(u.Fragment, "/stacks/quickcreate?")
		if !ok {
			t.Fatalf("link %q: no quick-create fragment", link)
		}
		q, err := url.ParseQuery(frag)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"templateURL": template, "param_HubPrincipalArn": principal, "param_ExternalId": externalID}
		for k, v := range params {
			want[k] = v
		}
		for k, v := range want {
			if q.Get(k) != v {
				t.Errorf("link %s = %q, want %q", k, q.Get(k), v)
			}
		}
	}
	checkLink(a.Destination.SetupURL, "eu-west-1", a.Destination.ExternalID, map[string]string{
		"param_RoleName": "streaming-hub-delivery", "param_RolePath": "/", "param_QueueArn": "arn:aws:sqs:eu-west-1:111122223333:ledger.fifo",
		"stackName": "streaming-hub-" + strings.ReplaceAll(a.ID, "_", "-")})

	var setup struct {
		HubPrincipalARN string  `json:"hub_principal_arn"`
		ExternalID      string  `json:"external_id"`
		TemplateURL     string  `json:"template_url"`
		Region          string  `json:"region"`
		SubscriptionID  *string `json:"subscription_id"`
		SetupURL        string  `json:"setup_url"`
	}
	acme.json("GET", "/v1/aws/setup?subscription_id="+a.ID, "", 200, &setup)
	if setup.ExternalID != a.Destination.ExternalID || setup.HubPrincipalARN != principal || setup.Region != "eu-west-1" ||
		setup.SubscriptionID == nil || *setup.SubscriptionID != a.ID || setup.SetupURL != a.Destination.SetupURL {
		t.Fatalf("setup of the subscription: %+v", setup)
	}
	acme.json("GET", "/v1/aws/setup?region=sa-east-1", "", 200, &setup)
	if !hub.ValidExternalID(setup.ExternalID) || setup.ExternalID == a.Destination.ExternalID || setup.SubscriptionID != nil || setup.TemplateURL != template {
		t.Fatalf("a fresh setup: %+v", setup)
	}
	checkLink(setup.SetupURL, "sa-east-1", setup.ExternalID, nil)
	given := hub.NewExternalID()
	acme.json("GET", "/v1/aws/setup?external_id="+given, "", 200, &setup)
	if setup.ExternalID != given || setup.Region != "us-east-1" {
		t.Fatalf("a given external id: %+v", setup)
	}
	for path, want := range map[string]int{
		"/v1/aws/setup?external_id=chosen-by-me":                          400,
		"/v1/aws/setup?region=moon-1":                                     400,
		"/v1/aws/setup?subscription_id=" + a.ID + "&external_id=" + given: 400,
		"/v1/aws/setup?role=x":                                            400,
	} {
		if status, _, body := acme.do("GET", path, ""); status != want {
			t.Errorf("%s: %d %s, want %d", path, status, body, want)
		}
	}
	if status, _, _ := other.do("GET", "/v1/aws/setup?subscription_id="+a.ID, ""); status != 404 {
		t.Errorf("another tenant's subscription: %d, want 404", status)
	}
	id, _ := acme.subscription("https://hooks.example.com/in")
	if status, _, body := acme.do("GET", "/v1/aws/setup?subscription_id="+id, ""); status != 400 || !strings.Contains(string(body), "not an AWS one") {
		t.Errorf("a webhook subscription: %d %s", status, body)
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	acme.json("GET", "/v1/subscriptions", "", 200, &list)
	if !strings.Contains(string(list.Data[0])+string(list.Data[1]), "aws_setup_url") {
		t.Errorf("the list shows no setup link: %s", list.Data)
	}
}

// The setup link and the template agree (deploy/aws/streaming-hub-role.json):
// a stack made on moto's CloudFormation with the parameters the link fills
// in makes a role that trusts the hub's principal only with the
// subscription's external id, and may only send to the subscription's
// queue.
func TestAWSSetup_TheTemplateMakesTheRoleTheLinkDescribes(t *testing.T) {
	testkit.Long(t)
	m := testkit.NewMoto(t)
	const principal = "arn:aws:iam::999988887777:role/streaming-hub"
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{aws: api.AWS{HubPrincipalARN: principal,
		SetupTemplateURL: "https://lerian-templates.s3.amazonaws.com/streaming-hub-role.json"}})
	acme := h.tenant("acme")
	var a awsAnswer
	acme.json("POST", "/v1/subscriptions", `{"name":"to-sqs","event_types":[{"type":"transaction.posted","schema_major":1}],
	 "destination":{"type":"aws_sqs","queue_url":"https://sqs.us-east-1.amazonaws.com/123456789012/ledger","role_arn":"arn:aws:iam::123456789012:role/hub/ledger-delivery"}}`, 201, &a)
	u, err := url.Parse(a.Destination.SetupURL)
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(strings.TrimPrefix(u.Fragment, "/stacks/quickcreate?"))
	if err != nil {
		t.Fatal(err)
	}
	var params []cftypes.Parameter
	for k, v := range q {
		if name, ok := strings.CutPrefix(k, "param_"); ok {
			params = append(params, cftypes.Parameter{ParameterKey: awssdk.String(name), ParameterValue: awssdk.String(v[0])})
		}
	}
	body, err := os.ReadFile("../../deploy/aws/streaming-hub-role.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.HubConfig()
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: awssdk.String(q.Get("stackName")),
		TemplateBody: awssdk.String(string(body)), Parameters: params, Capabilities: []cftypes.Capability{cftypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatalf("create the stack with the link's parameters %v: %v", q, err)
	}
	out, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: awssdk.String(q.Get("stackName"))})
	if err != nil || len(out.Stacks) != 1 || out.Stacks[0].StackStatus != cftypes.StackStatusCreateComplete {
		t.Fatalf("the stack: %+v, %v", out, err)
	}
	for _, o := range out.Stacks[0].Outputs {
		if awssdk.ToString(o.OutputKey) == "RoleArn" && awssdk.ToString(o.OutputValue) != a.Destination.RoleARN {
			t.Errorf("the stack's role %s, but the subscription names %s", awssdk.ToString(o.OutputValue), a.Destination.RoleARN)
		}
	}
	i := iam.NewFromConfig(cfg)
	role, err := i.GetRole(context.Background(), &iam.GetRoleInput{RoleName: awssdk.String("ledger-delivery")})
	if err != nil {
		t.Fatal(err)
	}
	trust, _ := url.QueryUnescape(awssdk.ToString(role.Role.AssumeRolePolicyDocument))
	for _, want := range []string{`"AWS": "` + principal + `"`, `"sts:AssumeRole"`, `"sts:ExternalId": "` + a.Destination.ExternalID + `"`} {
		if !strings.Contains(strings.ReplaceAll(trust, `":"`, `": "`), want) {
			t.Errorf("the role's trust policy %s lacks %s", trust, want)
		}
	}
	if p := awssdk.ToString(role.Role.Path); p != "/hub/" {
		t.Errorf("the role's path %q, want /hub/", p)
	}
	pol, err := i.GetRolePolicy(context.Background(), &iam.GetRolePolicyInput{RoleName: awssdk.String("ledger-delivery"), PolicyName: awssdk.String("streaming-hub-send")})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := url.QueryUnescape(awssdk.ToString(pol.PolicyDocument))
	for _, want := range []string{"sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:ledger"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the role's policy %s lacks %s", doc, want)
		}
	}
	for _, never := range []string{"sns:Publish", "events:PutEvents", "kinesis:PutRecord", "kms:"} {
		if strings.Contains(doc, never) {
			t.Errorf("the role's policy %s grants %s, which this subscription does not need", doc, never)
		}
	}
}
