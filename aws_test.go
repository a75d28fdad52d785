package hub

import (
	"strings"
	"testing"
)

func awsDest(typ string, a AWS) Destination {
	if a.RoleARN == "" {
		a.RoleARN = "arn:aws:iam::111122223333:role/streaming-hub"
	}
	if a.ExternalID == "" {
		a.ExternalID = NewExternalID()
	}
	return Destination{Type: typ, AWS: a}
}

// Queue URLs name AWS's regional endpoint, or the operator's: any other
// host (a tenant's choice of where the hub connects) is refused, and so
// is anything but /<account>/<queue>.
func TestParseQueueURL_OnlyTheRegionsEndpointOrTheOperators(t *testing.T) {
	const local = "http://127.0.0.1:4566"
	for _, c := range []struct {
		raw, endpoint, region string
		ok                    bool
	}{
		{"https://sqs.us-east-1.amazonaws.com/111122223333/events", "", "us-east-1", true},
		{"https://sqs.eu-central-2.amazonaws.com/111122223333/events.fifo", "", "eu-central-2", true},
		{"https://sqs.cn-north-1.amazonaws.com.cn/111122223333/events", "", "cn-north-1", true},
		{"https://sqs.us-gov-west-1.amazonaws.com/111122223333/q_1-2", "", "us-gov-west-1", true},
		{"http://127.0.0.1:4566/111122223333/events", local, "", true},
		{"https://sqs.us-east-1.amazonaws.com/111122223333/events", local, "us-east-1", true},
		{"http://sqs.us-east-1.amazonaws.com/111122223333/events", "", "", false},           // plaintext
		{"https://sqs.us-east-1.amazonaws.com.evil.com/111122223333/events", "", "", false}, // another host
		{"https://evil.com/111122223333/events", "", "", false},
		{"https://169.254.169.254/111122223333/events", "", "", false},
		{"http://127.0.0.1:4566/111122223333/events", "", "", false},    // no operator endpoint
		{"http://127.0.0.1:4567/111122223333/events", local, "", false}, // another port
		{"https://sqs.us-east-1.amazonaws.com:8443/111122223333/events", "", "", false},
		{"https://user@sqs.us-east-1.amazonaws.com/111122223333/events", "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/111122223333/events?x=1", "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/111122223333/events#f", "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/11112222333/events", "", "", false}, // 11 digits
		{"https://sqs.us-east-1.amazonaws.com/111122223333/ev/ents", "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/111122223333/" + strings.Repeat("q", 81), "", "", false},
		{"https://sqs.us-east-1.amazonaws.com/111122223333/ev%2Fents", "", "", false},
		{"https://sqs.US-EAST-1.amazonaws.com/111122223333/events", "", "us-east-1", true}, // host names are case-insensitive
		{"https://sqs.cn-north-1.amazonaws.com/111122223333/events", "", "", false},        // China is .com.cn
		{"https://queue.amazonaws.com/111122223333/events", "", "", false},
		{"sqs.us-east-1.amazonaws.com/111122223333/events", "", "", false},
	} {
		q, err := ParseQueueURL("destination.queue_url", c.raw, c.endpoint)
		if (err == nil) != c.ok {
			t.Errorf("ParseQueueURL(%q, endpoint %q) = %v, want ok %v", c.raw, c.endpoint, err, c.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "destination.queue_url") {
				t.Errorf("%q: the error %q does not name the field", c.raw, err)
			}
			continue
		}
		if q.Region != c.region {
			t.Errorf("%q: region %q, want %q", c.raw, q.Region, c.region)
		}
	}
}

func TestParseARN_Strict(t *testing.T) {
	for s, ok := range map[string]bool{
		"arn:aws:sns:us-east-1:111122223333:events":           true,
		"arn:aws-cn:sns:cn-north-1:111122223333:events":       true,
		"arn:aws-us-gov:sns:us-gov-east-1:111122223333:e":     true,
		"arn:aws:sns:cn-north-1:111122223333:events":          false, // partition and region disagree
		"arn:aws-cn:sns:us-east-1:111122223333:events":        false,
		"arn:aws:sns:us-east-1:1111222233:events":             false,
		"arn:aws:sns:useast1:111122223333:events":             false,
		"arn:azure:sns:us-east-1:111122223333:events":         false,
		"arn:aws:sns:us-east-1:111122223333":                  false,
		"arn:aws:sns:us-east-1:111122223333:":                 false,
		"aws:sns:us-east-1:111122223333:events":               false,
		"arn:aws:sns:us-east-1:111122223333:ev ents":          false,
		"arn:aws:sns:us-east-1:111122223333:events\n":         false,
		"arn:aws:sns:us-east-1:111122223333:" + "x\x00":       false,
		"arn:aws:sns:us-east-1:111122223333:" + "événements":  true, // ParseARN is the shape only
		"arn:aws:iam::111122223333:role/streaming-hub":        true,
		"arn:aws:events:eu-west-1:111122223333:event-bus/bus": true,
	} {
		if _, err := ParseARN("f", s); (err == nil) != ok {
			t.Errorf("ParseARN(%q) = %v, want ok %v", s, err, ok)
		}
	}
}

// Each AWS type takes its own resource and a role; a field of another
// type, a resource of the wrong service or a bad name is a 400 naming it.
func TestValidateAWS_EachTypeItsFields(t *testing.T) {
	for _, c := range []struct {
		d     Destination
		field string // "" when valid
	}{
		{awsDest(DestinationAWSSQS, AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/q.fifo"}), ""},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns:us-east-1:111122223333:t"}), ""},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns:us-east-1:111122223333:t.fifo"}), ""},
		{awsDest(DestinationAWSEventBridge, AWS{EventBusARN: "arn:aws:events:us-east-1:111122223333:event-bus/default"}), ""},
		{awsDest(DestinationAWSEventBridge, AWS{EventBusARN: "arn:aws:events:us-east-1:111122223333:event-bus/b", Source: "com.lerian.ledger", DetailType: "ledger event"}), ""},
		{awsDest(DestinationAWSKinesis, AWS{StreamARN: "arn:aws:kinesis:us-east-1:111122223333:stream/s"}), ""},
		{awsDest(DestinationAWSSQS, AWS{}), "queue_url"},
		{awsDest(DestinationAWSSNS, AWS{}), "topic_arn"},
		{awsDest(DestinationAWSEventBridge, AWS{}), "event_bus_arn"},
		{awsDest(DestinationAWSKinesis, AWS{}), "stream_arn"},
		{awsDest(DestinationAWSSQS, AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/q", TopicARN: "arn:aws:sns:us-east-1:111122223333:t"}), "topic_arn"},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns:us-east-1:111122223333:t", Source: "x"}), "source"},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sqs:us-east-1:111122223333:t"}), "topic_arn"},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns::111122223333:t"}), "topic_arn"},
		{awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns:us-east-1:111122223333:t/x"}), "topic_arn"},
		{awsDest(DestinationAWSKinesis, AWS{StreamARN: "arn:aws:kinesis:us-east-1:111122223333:s"}), "stream_arn"},
		{awsDest(DestinationAWSEventBridge, AWS{EventBusARN: "arn:aws:events:us-east-1:111122223333:rule/r"}), "event_bus_arn"},
		{awsDest(DestinationAWSEventBridge, AWS{EventBusARN: "arn:aws:events:us-east-1:111122223333:event-bus/b", Source: "aws.ec2"}), "source"},
		{awsDest(DestinationAWSEventBridge, AWS{EventBusARN: "arn:aws:events:us-east-1:111122223333:event-bus/b", DetailType: strings.Repeat("d", 129)}), "detail_type"},
		{Destination{Type: DestinationAWSSQS, AWS: AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/q", ExternalID: NewExternalID()}}, "role_arn"},
		{awsDest(DestinationAWSSQS, AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/q", RoleARN: "arn:aws:iam::111122223333:user/u"}), "role_arn"},
		{awsDest(DestinationAWSSQS, AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/q", RoleARN: "arn:aws:iam:us-east-1:111122223333:role/r"}), "role_arn"},
	} {
		err := ValidateAWS(c.d, "")
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %+v: %v", c.d.Type, c.d.AWS, err)
		case c.field != "" && (err == nil || ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "destination."+c.field)):
			t.Errorf("%s %+v: error %v, want a 400 naming destination.%s", c.d.Type, c.d.AWS, err, c.field)
		}
	}
}

func TestAWSDestination_RegionFIFOAndAddress(t *testing.T) {
	sqs := awsDest(DestinationAWSSQS, AWS{QueueURL: "https://sqs.eu-west-1.amazonaws.com/111122223333/q.fifo"})
	if r, fifo, a := sqs.AWSRegion(), sqs.AWSFIFO(), sqs.Address(); r != "eu-west-1" || !fifo || a != "arn:aws:sqs:eu-west-1:111122223333:q.fifo" {
		t.Errorf("sqs: region %q fifo %v address %q", r, fifo, a)
	}
	sns := awsDest(DestinationAWSSNS, AWS{TopicARN: "arn:aws:sns:ap-south-1:111122223333:t"})
	if r, fifo, a := sns.AWSRegion(), sns.AWSFIFO(), sns.Address(); r != "ap-south-1" || fifo || a != sns.AWS.TopicARN {
		t.Errorf("sns: region %q fifo %v address %q", r, fifo, a)
	}
	local := awsDest(DestinationAWSSQS, AWS{QueueURL: "http://127.0.0.1:4566/111122223333/q"})
	if r := local.AWSRegion(); r != "" {
		t.Errorf("a queue of the operator's endpoint: region %q, want none (the hub's own)", r)
	}
	if path, name := RoleName("arn:aws:iam::111122223333:role/team/hub/delivery"); path != "/team/hub/" || name != "delivery" {
		t.Errorf("RoleName: %q %q", path, name)
	}
	if path, name := RoleName("arn:aws:iam::111122223333:role/delivery"); path != "/" || name != "delivery" {
		t.Errorf("RoleName: %q %q", path, name)
	}
	if id := NewExternalID(); !ValidExternalID(id) || id == NewExternalID() {
		t.Errorf("NewExternalID: %q", id)
	}
}
