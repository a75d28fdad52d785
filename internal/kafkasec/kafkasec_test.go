package kafkasec

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// A real broker answers a wrong password with SASL_AUTHENTICATION_FAILED
// (kfake closes the connection instead; the app tests cover that): the
// cause is named once in the log, cleared by the next good connection.
func TestCause_BrokerRefusesThePassword(t *testing.T) {
	var logs bytes.Buffer
	s, err := New(config.Kafka{SASLMechanism: config.SASLScram512, SASLUsername: "hub", SASLPassword: "hunter2-secret"},
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Opts()) != 2 { // the watch and SASL; no TLS
		t.Fatalf("%d options", len(s.Opts()))
	}
	meta := kgo.BrokerMetadata{Host: "k1", Port: 9093}
	refused := fmt.Errorf("unable to initialize sasl: %w", kerr.SaslAuthenticationFailed)
	for range 3 {
		s.OnBrokerConnect(meta, 0, nil, refused)
	}
	if err := s.Cause(); err == nil || !strings.HasPrefix(err.Error(), CauseSASL+" (SCRAM-SHA-512 as user \"hub\"") {
		t.Fatalf("cause = %v", err)
	}
	if n := strings.Count(logs.String(), "kafka connection refused"); n != 1 || strings.Contains(logs.String(), "hunter2-secret") {
		t.Fatalf("%d lines:\n%s", n, logs.String())
	}
	s.OnBrokerConnect(meta, 0, nil, nil)
	if err := s.Cause(); err != nil {
		t.Fatalf("after a good connection: %v", err)
	}
	// A broker that is down is not a security cause: readiness says so itself.
	s.OnBrokerConnect(meta, 0, nil, errors.New("dial tcp 10.0.0.1:9093: connect: connection refused"))
	if err := s.Cause(); err != nil {
		t.Fatalf("connection refused named %v", err)
	}
}
