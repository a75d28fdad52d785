package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Which produce errors drop the client: all a new client could cure, none
// that would come back the same on any connection.
func TestCurable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{kerr.UnknownTopicID, true},
		{kerr.UnknownTopicOrPartition, true},
		{kerr.NotLeaderForPartition, true},
		{kerr.LeaderNotAvailable, true},
		{kerr.BrokerNotAvailable, true},
		{kerr.UnknownProducerID, true},
		{kerr.OutOfOrderSequenceNumber, true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.MessageTooLarge), true},
		{kgo.ErrClientClosed, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{io.EOF, true},
		{kerr.MessageTooLarge, false},
		{kerr.InvalidRecord, false},
		{kerr.TopicAuthorizationFailed, false},
		{kerr.SaslAuthenticationFailed, false},
		{context.Canceled, false},
		{errors.Join(context.Canceled, kerr.UnknownTopicID), false},
	} {
		if got := curable(c.err); got != c.want {
			t.Errorf("curable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
