package aws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	awsdest "github.com/lerianstudio/streaming-hub/internal/destination/aws"
	"github.com/lerianstudio/streaming-hub/internal/destination/destinationtest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The tenant's account and role: moto gives the role's credentials that
// account, so a message sent with the hub's own credentials (account
// 123456789012) would not find the tenant's queue.
const (
	tenantAccount = "111122223333"
	tenantRole    = "arn:aws:iam::" + tenantAccount + ":role/streaming-hub-delivery"
)

var ctx = context.Background()

// rig is a moto server, the hub's driver pointed at it, and the tenant's
// side of it.
type rig struct {
	moto   *testkit.Moto
	tenant awssdk.Config
}

func newRig(t *testing.T) *rig {
	testkit.Long(t)
	m := testkit.NewMoto(t)
	return &rig{moto: m, tenant: m.TenantConfig(tenantRole)}
}

func (r *rig) driver(o awsdest.Options) *awsdest.Driver {
	o.Config = r.moto.HubConfig()
	return awsdest.New(o)
}

func target(typ, subscription string, a hub.AWS) destination.Target {
	if a.RoleARN == "" {
		a.RoleARN = tenantRole
	}
	if a.ExternalID == "" {
		a.ExternalID = hub.NewExternalID()
	}
	return destination.Target{Destination: hub.Destination{Type: typ, AWS: a}, SubscriptionID: subscription,
		Secrets: []string{destination.NewSecret()}}
}

// queue makes a queue in the tenant's account (FIFO when its name ends in
// .fifo) and returns its URL and ARN.
func (r *rig) queue(t *testing.T, name string) (string, string) {
	t.Helper()
	c := sqs.NewFromConfig(r.tenant)
	in := &sqs.CreateQueueInput{QueueName: awssdk.String(name)}
	if strings.HasSuffix(name, ".fifo") {
		in.Attributes = map[string]string{"FifoQueue": "true"}
	}
	out, err := c.CreateQueue(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return *out.QueueUrl, "arn:aws:sqs:" + testkit.MotoRegion + ":" + tenantAccount + ":" + name
}

// received reads n messages from the tenant's queue, with their
// attributes, deleting them.
func (r *rig) received(t *testing.T, queueURL string, n int) []sqstypes.Message {
	t.Helper()
	c := sqs.NewFromConfig(r.tenant)
	var out []sqstypes.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		res, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			out = append(out, m)
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(out) < n {
		t.Fatalf("%s: %d messages within 30s, want %d", queueURL, len(out), n)
	}
	return out
}

// fromAttributes is an SQS (or raw SNS) message as its subscriber reads
// it: the body, and the headers in the lerian-headers attribute, each of
// the attributes of their own agreeing with it.
func fromAttributes(t *testing.T, m sqstypes.Message) destinationtest.Delivered {
	t.Helper()
	all, ok := m.MessageAttributes[awsdest.HeadersAttribute]
	if !ok || all.StringValue == nil {
		t.Fatalf("no %s attribute: %v", awsdest.HeadersAttribute, m.MessageAttributes)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(*all.StringValue), &h); err != nil {
		t.Fatal(err)
	}
	if len(m.MessageAttributes) > 10 {
		t.Errorf("%d attributes: SQS and SNS take at most 10", len(m.MessageAttributes))
	}
	for k, v := range m.MessageAttributes {
		if k != awsdest.HeadersAttribute && h[k] != awssdk.ToString(v.StringValue) {
			t.Errorf("attribute %s = %q, but %q in %s", k, awssdk.ToString(v.StringValue), h[k], awsdest.HeadersAttribute)
		}
	}
	return destinationtest.Delivered{Body: []byte(awssdk.ToString(m.Body)), Headers: h}
}

func (r *rig) sqsReader(queueURL string) func(t *testing.T, n int) []destinationtest.Delivered {
	return func(t *testing.T, n int) []destinationtest.Delivered {
		var out []destinationtest.Delivered
		for _, m := range r.received(t, queueURL, n) {
			out = append(out, fromAttributes(t, m))
		}
		return out
	}
}

func TestSQS_Conformance(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events")
	missing := strings.Replace(q, "/events", "/missing", 1)
	destinationtest.Run(t, destinationtest.Harness{
		Driver:   r.driver(awsdest.Options{}),
		Target:   target(hub.DestinationAWSSQS, "sub_sqs", hub.AWS{QueueURL: q}),
		Refusing: target(hub.DestinationAWSSQS, "sub_sqs_missing", hub.AWS{QueueURL: missing}),
		Received: r.sqsReader(q),
	})
}

// A FIFO queue's messages carry the tenant as their group and the event id
// as their de-duplication id: a redelivery within SQS's window lands once,
// and each tenant's events keep their order.
func TestSQS_FIFOGroupIsTheTenantAndDeduplicationIsTheEventID(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events.fifo")
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})
	tg := target(hub.DestinationAWSSQS, "sub_fifo", hub.AWS{QueueURL: q})
	for i, id := range []string{"ev-1", "ev-2", "ev-1"} { // ev-1 redelivered
		ev := hub.Event{ID: id, TenantID: "acme", Type: "t", EventType: "transaction.posted", Source: "//ledger", SpecVersion: "1.0"}
		res := reg.Send(ctx, tg, destination.Message{ID: id, EventType: ev.EventType, TenantID: "acme", ContentType: "application/json",
			Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), Time: time.Now(), Headers: destination.EventHeaders(ev, "att", "")})
		if res.Err != nil {
			t.Fatalf("send %s: %v", id, res.Err)
		}
	}
	got := r.received(t, q, 2)
	time.Sleep(time.Second) // nothing more comes
	if more := r.receivedNone(t, q); more != 0 {
		t.Fatalf("%d more messages: the redelivered ev-1 was not de-duplicated", more)
	}
	for i, want := range []string{"ev-1", "ev-2"} {
		m := got[i]
		if g := m.Attributes["MessageGroupId"]; g != "acme" {
			t.Errorf("message %d: MessageGroupId %q, want the tenant", i, g)
		}
		if dd := m.Attributes["MessageDeduplicationId"]; dd != want {
			t.Errorf("message %d: MessageDeduplicationId %q, want %q", i, dd, want)
		}
		if h := fromAttributes(t, m).Headers; h["ce-id"] != want || h["webhook-signature"] == "" {
			t.Errorf("message %d headers %v", i, h)
		}
	}
}

func (r *rig) receivedNone(t *testing.T, q string) int {
	res, err := sqs.NewFromConfig(r.tenant).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Messages)
}

// snsTopic makes a topic in the tenant's account and a queue subscribed
// to it with raw delivery (SNS message attributes become the queue
// message's).
func (r *rig) snsTopic(t *testing.T, name string) (topicARN, queueURL string) {
	t.Helper()
	c := sns.NewFromConfig(r.tenant)
	in := &sns.CreateTopicInput{Name: awssdk.String(name)}
	if strings.HasSuffix(name, ".fifo") {
		in.Attributes = map[string]string{"FifoTopic": "true"}
	}
	out, err := c.CreateTopic(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	qName := strings.TrimSuffix(name, ".fifo") + "-sub"
	if strings.HasSuffix(name, ".fifo") {
		qName += ".fifo"
	}
	q, qARN := r.queue(t, qName)
	if _, err := c.Subscribe(ctx, &sns.SubscribeInput{TopicArn: out.TopicArn, Protocol: awssdk.String("sqs"), Endpoint: &qARN,
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	return *out.TopicArn, q
}

func TestSNS_Conformance(t *testing.T) {
	r := newRig(t)
	topic, q := r.snsTopic(t, "events")
	destinationtest.Run(t, destinationtest.Harness{
		Driver:   r.driver(awsdest.Options{}),
		Target:   target(hub.DestinationAWSSNS, "sub_sns", hub.AWS{TopicARN: topic}),
		Refusing: target(hub.DestinationAWSSNS, "sub_sns_missing", hub.AWS{TopicARN: strings.Replace(topic, ":events", ":missing", 1)}),
		Received: r.sqsReader(q),
	})
}

// A FIFO topic's messages carry the tenant as their group.
func TestSNS_FIFOTopicGroupIsTheTenant(t *testing.T) {
	r := newRig(t)
	topic, q := r.snsTopic(t, "events.fifo")
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSNS: d})
	res := reg.Send(ctx, target(hub.DestinationAWSSNS, "sub_sns_fifo", hub.AWS{TopicARN: topic}), destination.Message{ID: "ev-9",
		EventType: "transaction.posted", TenantID: "acme", ContentType: "application/json", Body: []byte(`{}`), Time: time.Now(),
		Headers: http.Header{"ce-id": {"ev-9"}}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	m := r.received(t, q, 1)[0]
	if g := m.Attributes["MessageGroupId"]; g != "acme" {
		t.Errorf("MessageGroupId %q, want the tenant (attributes %v)", g, m.Attributes)
	}
	if h := fromAttributes(t, m).Headers; h["ce-id"] != "ev-9" {
		t.Errorf("headers %v", h)
	}
}

// bus makes an event bus in the tenant's account with a rule sending
// every event on it to a queue.
func (r *rig) bus(t *testing.T, name string) (busARN, queueURL string) {
	t.Helper()
	c := eventbridge.NewFromConfig(r.tenant)
	out, err := c.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	q, qARN := r.queue(t, name+"-rule")
	if _, err := c.PutRule(ctx, &eventbridge.PutRuleInput{Name: awssdk.String("all"), EventBusName: &name,
		EventPattern: awssdk.String(`{"account":["` + tenantAccount + `"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: awssdk.String("all"), EventBusName: &name,
		Targets: []ebTarget{{Id: awssdk.String("q"), Arn: &qARN}}}); err != nil {
		t.Fatal(err)
	}
	return *out.EventBusArn, q
}

// busEvent is an EventBridge event as a rule's target gets it.
type busEvent struct {
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
	Time       string `json:"time"`
	Detail     struct {
		Headers map[string]string `json:"headers"`
		Data    json.RawMessage   `json:"data"`
	} `json:"detail"`
}

func (r *rig) busReader(q string) func(t *testing.T, n int) []destinationtest.Delivered {
	return func(t *testing.T, n int) []destinationtest.Delivered {
		var out []destinationtest.Delivered
		for _, m := range r.received(t, q, n) {
			var ev busEvent
			if err := json.Unmarshal([]byte(*m.Body), &ev); err != nil {
				t.Fatalf("%v: %s", err, *m.Body)
			}
			out = append(out, destinationtest.Delivered{Body: ev.Detail.Data, Headers: ev.Detail.Headers})
		}
		return out
	}
}

func TestEventBridge_Conformance(t *testing.T) {
	r := newRig(t)
	bus, q := r.bus(t, "ledger")
	destinationtest.Run(t, destinationtest.Harness{
		Driver:    r.driver(awsdest.Options{}),
		Target:    target(hub.DestinationAWSEventBridge, "sub_bus", hub.AWS{EventBusARN: bus}),
		Refusing:  target(hub.DestinationAWSEventBridge, "sub_bus_missing", hub.AWS{EventBusARN: strings.Replace(bus, "/ledger", "/missing", 1)}),
		Received:  r.busReader(q),
		Reformats: true,
	})
}

// An EventBridge entry's source and detail type are the event's source
// and type, or the destination's own.
func TestEventBridge_SourceAndDetailType(t *testing.T) {
	r := newRig(t)
	bus, q := r.bus(t, "ledger")
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSEventBridge: d})
	ev := hub.Event{ID: "ev-eb", TenantID: "acme", Type: "ledger.transaction.posted", EventType: "transaction.posted",
		Source: "//ledger/acme", SpecVersion: "1.0", Time: "2026-12-01T10:00:00Z"}
	msg := destination.Message{ID: ev.ID, EventType: ev.EventType, TenantID: "acme", ContentType: "application/json",
		Body: []byte(`{"amount":"1.00"}`), Time: time.Now(), Headers: destination.EventHeaders(ev, "att", "")}
	for _, tg := range []destination.Target{
		target(hub.DestinationAWSEventBridge, "sub_eb_default", hub.AWS{EventBusARN: bus}),
		target(hub.DestinationAWSEventBridge, "sub_eb_own", hub.AWS{EventBusARN: bus, Source: "com.acme.ledger", DetailType: "Ledger event"}),
	} {
		if res := reg.Send(ctx, tg, msg); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	got := map[string]busEvent{}
	for _, m := range r.received(t, q, 2) {
		var e busEvent
		json.Unmarshal([]byte(*m.Body), &e)
		got[e.Source] = e
	}
	if e, ok := got["//ledger/acme"]; !ok || e.DetailType != "transaction.posted" || !strings.HasPrefix(e.Time, "2026-12-01T10:00:00") {
		t.Errorf("the default entry: %+v (all %v)", e, got)
	}
	if e, ok := got["com.acme.ledger"]; !ok || e.DetailType != "Ledger event" || e.Detail.Headers["ce-id"] != "ev-eb" {
		t.Errorf("the destination's own source and detail type: %+v (all %v)", e, got)
	}
}

// stream makes a one-shard Kinesis stream in the tenant's account and
// returns its ARN and a reader from its start.
func (r *rig) stream(t *testing.T, name string) (string, func(t *testing.T, n int) []kinesistypes.Record) {
	t.Helper()
	c := kinesis.NewFromConfig(r.tenant)
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: awssdk.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: &name})
	if err != nil {
		t.Fatal(err)
	}
	arn := *desc.StreamDescription.StreamARN
	it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: &name,
		ShardId: desc.StreamDescription.Shards[0].ShardId, ShardIteratorType: kinesistypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	next := it.ShardIterator
	return arn, func(t *testing.T, n int) []kinesistypes.Record {
		var out []kinesistypes.Record
		deadline := time.Now().Add(30 * time.Second)
		for len(out) < n && time.Now().Before(deadline) {
			res, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: next})
			if err != nil {
				t.Fatal(err)
			}
			out, next = append(out, res.Records...), res.NextShardIterator
			if len(res.Records) == 0 {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if len(out) < n {
			t.Fatalf("%s: %d records within 30s, want %d", name, len(out), n)
		}
		return out
	}
}

// fromRecord is a Kinesis record as its consumer reads it: the envelope's
// headers and body.
func fromRecord(t *testing.T, rec kinesistypes.Record) destinationtest.Delivered {
	var env struct {
		Headers map[string]string `json:"headers"`
		Body    *string           `json:"body"`
	}
	if err := json.Unmarshal(rec.Data, &env); err != nil || env.Body == nil {
		t.Fatalf("record data %s: %v", rec.Data, err)
	}
	return destinationtest.Delivered{Body: []byte(*env.Body), Headers: env.Headers}
}

func TestKinesis_Conformance(t *testing.T) {
	r := newRig(t)
	arn, read := r.stream(t, "ledger")
	destinationtest.Run(t, destinationtest.Harness{
		Driver:   r.driver(awsdest.Options{}),
		Target:   target(hub.DestinationAWSKinesis, "sub_kinesis", hub.AWS{StreamARN: arn}),
		Refusing: target(hub.DestinationAWSKinesis, "sub_kinesis_missing", hub.AWS{StreamARN: strings.Replace(arn, "/ledger", "/missing", 1)}),
		Received: func(t *testing.T, n int) []destinationtest.Delivered {
			var out []destinationtest.Delivered
			for _, rec := range read(t, n) {
				if k := awssdk.ToString(rec.PartitionKey); k != "acme" {
					t.Errorf("partition key %q, want the tenant", k)
				}
				out = append(out, fromRecord(t, rec))
			}
			return out
		},
	})
}

// The hub assumes the subscription's role with its external id, under a
// session named after the subscription, signing with its own credentials;
// the role's credentials are then reused, not fetched per attempt.
func TestAssumeRole_CarriesTheRoleAndExternalIDAndIsCached(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events")
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})
	tg := target(hub.DestinationAWSSQS, "sub_01JASSUME", hub.AWS{QueueURL: q})
	r.moto.StartRecording()
	for i := range 3 {
		if res := reg.Send(ctx, tg, message(fmt.Sprintf("ev-%d", i))); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	calls := r.moto.AssumeRoleCalls()
	if len(calls) != 1 {
		t.Fatalf("%d AssumeRole calls for 3 attempts, want 1 (cached): %+v", len(calls), calls)
	}
	c := calls[0]
	if c.RoleArn != tenantRole || c.ExternalId != tg.AWS.ExternalID || c.RoleSessionName != "streaming-hub-sub_01JASSUME" || c.AccessKey != "AKIDSTREAMINGHUBHUB" {
		t.Errorf("AssumeRole %+v: want role %s, external id %s, session streaming-hub-sub_01JASSUME, the hub's access key", c, tenantRole, tg.AWS.ExternalID)
	}
	r.received(t, q, 3)
}

// Credentials are replaced shortly before they expire: within the expiry
// window the next attempt assumes the role again.
func TestAssumeRole_RefreshedWithinTheExpiryWindow(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events")
	// 15 minutes (STS's least), replaced 1 s after they were issued.
	d := r.driver(awsdest.Options{SessionDuration: 15 * time.Minute, ExpiryWindow: 15*time.Minute - time.Second})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})
	tg := target(hub.DestinationAWSSQS, "sub_refresh", hub.AWS{QueueURL: q})
	r.moto.StartRecording()
	if res := reg.Send(ctx, tg, message("ev-1")); res.Err != nil {
		t.Fatal(res.Err)
	}
	time.Sleep(2 * time.Second)
	if res := reg.Send(ctx, tg, message("ev-2")); res.Err != nil {
		t.Fatal(res.Err)
	}
	if calls := r.moto.AssumeRoleCalls(); len(calls) != 2 {
		t.Fatalf("%d AssumeRole calls, want 2 (the first credentials were inside their expiry window)", len(calls))
	}
}

// A new role (a PATCH of role_arn) drops the old role's credentials: the
// next attempt assumes the new one and sends in its account.
func TestAssumeRole_ANewRoleDropsTheOldCredentials(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events")
	otherRole := "arn:aws:iam::444455556666:role/streaming-hub-delivery"
	other := r.moto.TenantConfig(otherRole)
	oq, err := sqs.NewFromConfig(other).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: awssdk.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})
	tg := target(hub.DestinationAWSSQS, "sub_moved", hub.AWS{QueueURL: q})
	r.moto.StartRecording()
	if res := reg.Send(ctx, tg, message("ev-1")); res.Err != nil {
		t.Fatal(res.Err)
	}
	tg.AWS.RoleARN, tg.AWS.QueueURL = otherRole, *oq.QueueUrl
	if res := reg.Send(ctx, tg, message("ev-2")); res.Err != nil {
		t.Fatal(res.Err)
	}
	calls := r.moto.AssumeRoleCalls()
	if len(calls) != 2 || calls[1].RoleArn != otherRole {
		t.Fatalf("AssumeRole calls %+v: the new role expected second", calls)
	}
	if d.Sessions() != 1 {
		t.Errorf("%d sessions kept, want 1: the old role's is dropped", d.Sessions())
	}
	r.received(t, q, 1)
	if res, err := sqs.NewFromConfig(other).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: oq.QueueUrl, WaitTimeSeconds: 2}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("the new role's queue has %v, %v: ev-2 expected", res, err)
	}
}

func message(id string) destination.Message {
	ev := hub.Event{ID: id, TenantID: "acme", Type: "ledger.transaction.posted", EventType: "transaction.posted", Source: "//ledger", SpecVersion: "1.0"}
	return destination.Message{ID: id, EventType: ev.EventType, TenantID: "acme", ContentType: "application/json",
		Body: []byte(`{"id":"` + id + `"}`), Time: time.Now(), Headers: destination.EventHeaders(ev, "att_"+id, "")}
}

// A role the hub may not assume, and a role that may not send, are
// failures that name the role (and, for the trust, the principal and the
// external id); moto checks IAM here as AWS does.
func TestAccessDenied_NamesTheRole(t *testing.T) {
	testkit.Long(t)
	// The first requests (the setup below) are not checked; every one
	// after them is.
	m := testkit.NewMoto(t, "INITIAL_NO_AUTH_ACTION_COUNT=6")
	admin := m.HubConfig()
	i := iam.NewFromConfig(admin)
	if _, err := i.CreateUser(ctx, &iam.CreateUserInput{UserName: awssdk.String("hub")}); err != nil {
		t.Fatal(err)
	}
	key, err := i.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: awssdk.String("hub")})
	if err != nil {
		t.Fatal(err)
	}
	allowed := "arn:aws:iam::123456789012:role/may-assume"
	if _, err := i.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: awssdk.String("hub"), PolicyName: awssdk.String("assume"),
		PolicyDocument: awssdk.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole","Resource":"` + allowed + `"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.CreateRole(ctx, &iam.CreateRoleInput{RoleName: awssdk.String("may-assume"),
		AssumeRolePolicyDocument: awssdk.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: awssdk.String("may-assume"), PolicyName: awssdk.String("sns-only"),
		PolicyDocument: awssdk.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:Publish","Resource":"*"}]}`)}); err != nil {
		t.Fatal(err)
	}
	q, err := sqs.NewFromConfig(admin).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: awssdk.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	hubCfg := m.HubConfig()
	hubCfg.Credentials = staticCreds(*key.AccessKey.AccessKeyId, *key.AccessKey.SecretAccessKey)
	d := awsdest.New(awsdest.Options{Config: hubCfg, HubPrincipal: "arn:aws:iam::123456789012:user/hub"})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})

	denied := "arn:aws:iam::123456789012:role/not-trusting"
	tg := target(hub.DestinationAWSSQS, "sub_denied", hub.AWS{QueueURL: *q.QueueUrl, RoleARN: denied})
	res := reg.Send(ctx, tg, message("ev-1"))
	if res.Err == nil {
		t.Fatal("an attempt with a role the hub may not assume succeeded")
	}
	for _, want := range []string{"access denied", denied, "arn:aws:iam::123456789012:user/hub", tg.AWS.ExternalID} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("the tenant reads %q: it does not name %q", res.Err, want)
		}
	}
	probe := reg.Probe(ctx, tg, "acme", "sub_denied", time.Now())
	if probe.Passed || !strings.Contains(probe.Error, denied) {
		t.Errorf("verification: %+v: a failure naming the role expected", probe)
	}

	tg = target(hub.DestinationAWSSQS, "sub_no_send", hub.AWS{QueueURL: *q.QueueUrl, RoleARN: allowed})
	res = reg.Send(ctx, tg, message("ev-2"))
	if res.Err == nil {
		t.Fatal("an attempt with a role that may not send succeeded")
	}
	for _, want := range []string{"access denied", allowed, "sqs:SendMessage"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("the tenant reads %q: it does not name %q", res.Err, want)
		}
	}
}

// No answer from the AWS endpoint (a closed port) is a failure saying
// which service could not be reached, without the hub's addresses.
func TestClosedEndpoint_IsAClearFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	cfg := awssdk.Config{Region: "us-east-1", Credentials: staticCreds("AKID", "secret"), BaseEndpoint: &closed}
	d := awsdest.New(awsdest.Options{Config: cfg})
	defer d.Close()
	reg := destination.NewRegistry(10*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d})
	res := reg.Send(ctx, target(hub.DestinationAWSSQS, "sub_closed",
		hub.AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/events"}), message("ev-1"))
	if res.Err == nil {
		t.Fatal("a send to a closed port succeeded")
	}
	text := res.Err.Error()
	if !strings.Contains(text, "cannot reach STS") || !strings.Contains(text, "refused") || strings.Contains(text, "127.0.0.1") {
		t.Errorf("the tenant reads %q: want the unreachable STS named, the refusal, no address", text)
	}
}

type ebTarget = ebtypes.Target

func staticCreds(key, secret string) awssdk.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(key, secret, "")
}

// A queue, topic, bus or stream that does not exist is a failure naming
// it as the tenant wrote it.
func TestMissingResource_IsNamed(t *testing.T) {
	r := newRig(t)
	q, _ := r.queue(t, "events")
	missing := strings.Replace(q, "/events", "/missing", 1)
	d := r.driver(awsdest.Options{})
	defer d.Close()
	reg := destination.NewRegistry(30*time.Second, map[string]destination.Driver{hub.DestinationAWSSQS: d, hub.DestinationAWSKinesis: d})
	res := reg.Send(ctx, target(hub.DestinationAWSSQS, "sub_missing", hub.AWS{QueueURL: missing}), message("ev-1"))
	if res.Err == nil || res.Err.Error() != "aws: queue "+missing+" does not exist (AWS.SimpleQueueService.NonExistentQueue)" {
		t.Errorf("a missing queue: %v", res.Err)
	}
	stream := "arn:aws:kinesis:us-east-1:" + tenantAccount + ":stream/missing"
	res = reg.Send(ctx, target(hub.DestinationAWSKinesis, "sub_missing_stream", hub.AWS{StreamARN: stream}), message("ev-1"))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "stream "+stream+" does not exist") {
		t.Errorf("a missing stream: %v", res.Err)
	}
}
