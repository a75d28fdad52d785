package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/lerianstudio/streaming-hub/consumer"
	awsdest "github.com/lerianstudio/streaming-hub/internal/destination/aws"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The whole dev-mode hub delivers to an SQS FIFO queue in the tenant's
// account (moto, as AWS_ENDPOINT_URL points the SDK there): the
// subscription made through the API shows the hub's external id and the
// setup link, verification assumes the tenant's role with that external id
// and sends a test message, then an event produced to Kafka lands in the
// queue once, its group the tenant, its de-duplication id the event id,
// its attributes signed with the subscription's secret.
func TestEndToEnd_AWSSQSDestinationThroughTheAPI(t *testing.T) {
	testkit.Long(t)
	const role = "arn:aws:iam::111122223333:role/streaming-hub-delivery"
	m := testkit.NewMoto(t)
	tenant := sqs.NewFromConfig(m.TenantConfig(role))
	q, err := tenant.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("ledger.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	// The hub's own AWS identity and endpoint, as an operator sets them.
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": m.URL, "AWS_REGION": testkit.MotoRegion,
		"AWS_ACCESS_KEY_ID": "AKIDSTREAMINGHUBHUB", "AWS_SECRET_ACCESS_KEY": "hub-secret",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	const principal = "arn:aws:iam::123456789012:role/streaming-hub"
	clock := testkit.NewClock()
	l := startLiveWith(t, testkit.Drivers[len(testkit.Drivers)-1], clock, map[string]string{
		"STREAMING_HUB_AWS_HUB_PRINCIPAL_ARN":  principal,
		"STREAMING_HUB_AWS_SETUP_TEMPLATE_URL": "https://templates.example.com/streaming-hub-role.json",
	})
	if _, err := l.Store.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	var sub struct {
		ID          string `json:"id"`
		Secret      string `json:"signing_secret"`
		Destination struct {
			ExternalID string `json:"external_id"`
			SetupURL   string `json:"aws_setup_url"`
		} `json:"destination"`
	}
	if code := l.api("POST", "/v1/subscriptions", "acme", `{"name":"sqs","event_types":[{"type":"transaction.posted","schema_major":1}],
	  "destination":{"type":"aws_sqs","queue_url":"`+*q.QueueUrl+`","role_arn":"`+role+`"}}`, &sub); code != 201 {
		t.Fatalf("create: %d", code)
	}
	ext := sub.Destination.ExternalID
	if ext == "" || !strings.Contains(sub.Destination.SetupURL, url.QueryEscape(ext)) || !strings.Contains(sub.Destination.SetupURL, url.QueryEscape(principal)) {
		t.Fatalf("the answer's external id %q and setup link %q", ext, sub.Destination.SetupURL)
	}
	m.StartRecording()
	if code := l.api("POST", "/v1/subscriptions/"+sub.ID+"/verify", "acme", "", nil); code != 200 {
		t.Fatalf("verify: %d", code)
	}
	l.produce(ceRecord("acme", "evt-aws-1", ""))

	var got []sqstypes.Message
	testkit.WaitFor(t, "the event in the queue", func() bool {
		res, err := tenant.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range res.Messages {
			got = append(got, msg)
			tenant.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: msg.ReceiptHandle})
		}
		return len(got) >= 2 // the verification message, then the event
	})
	var event *sqstypes.Message
	for i := range got {
		if got[i].Attributes["MessageDeduplicationId"] == "evt-aws-1" {
			event = &got[i]
		}
	}
	if event == nil || len(got) != 2 {
		t.Fatalf("%d messages, none with the event's de-duplication id: %+v", len(got), got)
	}
	if g := event.Attributes["MessageGroupId"]; g != "acme" {
		t.Errorf("MessageGroupId %q, want the tenant", g)
	}
	var headers map[string]string
	if err := json.Unmarshal([]byte(aws.ToString(event.MessageAttributes[awsdest.HeadersAttribute].StringValue)), &headers); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	if err := consumer.VerifyAt(sub.Secret, h, []byte(aws.ToString(event.Body)), 5*time.Minute, clock.Now()); err != nil || headers["ce-id"] != "evt-aws-1" {
		t.Fatalf("the message does not verify (%v) or is not the event: %v", err, headers)
	}
	calls := m.AssumeRoleCalls()
	if len(calls) == 0 {
		t.Fatal("no AssumeRole call recorded")
	}
	for _, c := range calls {
		if c.RoleArn != role || c.ExternalId != ext || c.RoleSessionName != "streaming-hub-"+sub.ID {
			t.Errorf("AssumeRole %+v: want role %s, external id %s, session streaming-hub-%s", c, role, ext, sub.ID)
		}
	}
}
