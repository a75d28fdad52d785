package testkit

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// PubSub is a Google Cloud Pub/Sub server of one test's own: the client
// library's in-process fake (pstest), serving gRPC on 127.0.0.1 without
// TLS or authentication at Addr; closed when the test ends.
type PubSub struct {
	Addr   string
	Server *pstest.Server
	admin  *pubsub.Client
}

// NewPubSub starts a fake Pub/Sub server; reactors inject failures.
func NewPubSub(t testing.TB, reactors ...pstest.ServerReactorOption) *PubSub {
	t.Helper()
	srv := pstest.NewServerWithAddress("127.0.0.1:0", reactors...)
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pubsub.NewClient(context.Background(), "admin", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Close()
		conn.Close()
		srv.Close()
	})
	return &PubSub{Addr: srv.Addr, Server: srv, admin: admin}
}

// ClientOptions connect a client to the fake server.
func (p *PubSub) ClientOptions() []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(p.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
}

// CreateTopic creates projects/<project>/topics/<topic>.
func (p *PubSub) CreateTopic(t testing.TB, project, topic string) {
	t.Helper()
	if _, err := p.admin.TopicAdminClient.CreateTopic(context.Background(),
		&pb.Topic{Name: "projects/" + project + "/topics/" + topic}); err != nil {
		t.Fatal(err)
	}
}

// CreateOrderedSubscription creates a subscription of the topic with
// message ordering enabled: it delivers each ordering key's messages in
// the order they were published, one at a time.
func (p *PubSub) CreateOrderedSubscription(t testing.TB, project, topic, sub string) {
	t.Helper()
	if _, err := p.admin.SubscriptionAdminClient.CreateSubscription(context.Background(), &pb.Subscription{
		Name:                  "projects/" + project + "/subscriptions/" + sub,
		Topic:                 "projects/" + project + "/topics/" + topic,
		EnableMessageOrdering: true,
		AckDeadlineSeconds:    60,
	}); err != nil {
		t.Fatal(err)
	}
}

// Pull receives and acknowledges, one at a time, the messages the
// subscription has for now (none left: it returns), in the order it
// delivers them.
func (p *PubSub) Pull(t testing.TB, project, sub string) []*pb.PubsubMessage {
	t.Helper()
	name := "projects/" + project + "/subscriptions/" + sub
	var out []*pb.PubsubMessage
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		res, err := p.admin.SubscriptionAdminClient.Pull(context.Background(),
			&pb.PullRequest{Subscription: name, MaxMessages: 1, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ReceivedMessages) == 0 {
			return out
		}
		var acks []string
		for _, m := range res.ReceivedMessages {
			out = append(out, m.Message)
			acks = append(acks, m.AckId)
		}
		if err := p.admin.SubscriptionAdminClient.Acknowledge(context.Background(),
			&pb.AcknowledgeRequest{Subscription: name, AckIds: acks}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the subscription kept delivering for 30 s")
	return nil
}

// Messages are the messages published to projects/<project>/topics/<topic>,
// in the order the server took them.
func (p *PubSub) Messages(project, topic string) []*pstest.Message {
	name := "projects/" + project + "/topics/" + topic
	var out []*pstest.Message
	for _, m := range p.Server.Messages() {
		if m.Topic == name {
			out = append(out, m)
		}
	}
	return out
}

var (
	serviceAccountOnce sync.Once
	serviceAccountKey  string
)

// ServiceAccountJSON is a well-formed Google Cloud service account key
// of project (a fresh RSA key; no such account exists anywhere): what a
// Pub/Sub destination's credentials look like.
func ServiceAccountJSON(t testing.TB, project string) string {
	t.Helper()
	serviceAccountOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		serviceAccountKey = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	})
	b, err := json.Marshal(map[string]string{
		"type":                        "service_account",
		"project_id":                  project,
		"private_key_id":              "0123456789abcdef0123456789abcdef01234567",
		"private_key":                 serviceAccountKey,
		"client_email":                "hub@" + project + ".iam.gserviceaccount.com",
		"client_id":                   "123456789012345678901",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   "https://oauth2.googleapis.com/token",
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
