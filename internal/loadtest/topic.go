package loadtest

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// makeTopic gives the bench's topic its partitions. The hub's embedded
// broker seeds this very topic with one partition (app.DevTopic), so a
// create alone would leave the run on one partition whatever -partitions
// says: the topic is grown to the count asked for instead.
func makeTopic(ctx context.Context, b *kfake.Cluster, partitions int) error {
	err := b.CreateTopic(topic, int32(partitions), nil)
	if err == nil {
		return nil
	}
	if have := len(b.PartitionInfos(topic)); have == 0 || have >= partitions {
		if have == 0 {
			return fmt.Errorf("create topic: %w", err)
		}
		return nil // already there with enough partitions
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).UpdatePartitions(ctx, partitions, topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("grow topic to %d partitions: %w", partitions, err)
	}
	return nil
}

// groupSettle bounds the wait for the consumer group to take every
// partition: a new partition is noticed within the dev broker's metadata
// age (2 s), a rebalance takes a few more.
const groupSettle = time.Minute

// waitForGroup waits until the hub's consumer group is stable with members
// members and every partition of the topic assigned, so the load starts
// with the partitions where they stay (and, with replicas, shared).
func waitForGroup(ctx context.Context, b *kfake.Cluster, group string, members, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, groupSettle)
	defer cancel()
	g, err := b.WaitGroupInfo(ctx, group, func(g *kfake.GroupInfo) bool {
		return g != nil && g.State == "Stable" && len(g.Members) == members && g.NumAssigned() == partitions
	})
	if err != nil {
		if g == nil {
			return fmt.Errorf("bench: consumer group %s: %w before it formed", group, err)
		}
		return fmt.Errorf("bench: consumer group %s: %w with %d of %d members, %d of %d partitions assigned (%s)",
			group, err, len(g.Members), members, g.NumAssigned(), partitions, g.State)
	}
	return nil
}
