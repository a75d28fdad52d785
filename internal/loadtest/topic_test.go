package loadtest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The hub's embedded broker seeds the bench's topic with one partition:
// the bench grows it to the partitions asked for, and leaves a topic that
// has them alone.
func TestMakeTopic_GrowsTheSeededTopic(t *testing.T) {
	b, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := makeTopic(context.Background(), b, 8); err != nil {
		t.Fatal(err)
	}
	if n := len(b.PartitionInfos(topic)); n != 8 {
		t.Fatalf("%d partitions, want 8", n)
	}
	if err := makeTopic(context.Background(), b, 8); err != nil || len(b.PartitionInfos(topic)) != 8 {
		t.Fatalf("again: %v, %d partitions", err, len(b.PartitionInfos(topic)))
	}
}
