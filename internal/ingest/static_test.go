package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/sqlite"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// staticSession is the session and rebalance timeout of the static members
// below: longer than testkit.Patience, so no member's session can expire
// (nor a rebalance give up on a dead member) while a test waits, and
// whatever moves in the group moved because of the instance id.
const staticSession = 2*testkit.Patience + 10*time.Second

// static makes cfg the static member id with staticSession.
func static(cfg ingest.Config, id string) ingest.Config {
	cfg.InstanceID, cfg.SessionTimeout = id, staticSession
	cfg.ClientOpts = append(cfg.ClientOpts, kgo.RebalanceTimeout(staticSession))
	return cfg
}

// The child process: a static member (INGEST_STATIC_CHILD is its instance
// id) that prints its member id and dies, like kill -9 (no commit, no
// LeaveGroup, no deferred cleanup), right after its first transaction.
func init() {
	id := os.Getenv("INGEST_STATIC_CHILD")
	if id == "" {
		return
	}
	s, err := sqlite.Open(context.Background(), os.Getenv("INGEST_STATIC_SQLITE"), store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := static(consumerConfig(strings.Split(os.Getenv("INGEST_STATIC_BROKERS"), ","), s), id)
	var c *ingest.Consumer
	cfg.AfterPersist = func(string, int32) {
		member, gen := c.Client().GroupMetadata()
		fmt.Printf("member %s generation %d\n", member, gen)
		os.Exit(3)
	}
	if c, err = ingest.New(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c.Run(context.Background())
	os.Exit(4) // never reached: the first batch ends the process
}

// describeGroup describes the consumer group "streaming-hub.test".
func describeGroup(t *testing.T, cl *kgo.Client) kadm.DescribedGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, "streaming-hub.test")
	if err != nil {
		t.Fatal(err)
	}
	g := groups["streaming-hub.test"]
	if g.Err != nil {
		t.Fatal(g.Err)
	}
	return g
}

func instanceOf(m kadm.DescribedGroupMember) string {
	if m.InstanceID == nil {
		return ""
	}
	return *m.InstanceID
}

// docs/performance.md: a process killed with -9 and restarted under the same
// STREAMING_HUB_KAFKA_INSTANCE_ID takes its partitions back at once: the
// group replaces the dead member by its id instead of waiting out its
// session, which here is longer than the test may wait at all.
func TestConsumer_StaticMemberRestartedAfterACrashTakesItsPartitionsBackAtOnce(t *testing.T) {
	path := testkit.SQLitePath(t)
	s, err := sqlite.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 2, topic)
	prod := testkit.Producer(t, kafka)
	for i := range 10 {
		testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("e-%02d", i)))
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "INGEST_STATIC_CHILD=hub-0", "INGEST_STATIC_SQLITE="+path,
		"INGEST_STATIC_BROKERS="+strings.Join(kafka.ListenAddrs(), ","))
	out, err := child.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child did not die after its first transaction: %v\n%s", err, out)
	}
	crashed := time.Now()
	var dead string
	var deadGen int32
	if _, err := fmt.Sscanf(string(out), "member %s generation %d", &dead, &deadGen); err != nil || dead == "" {
		t.Fatalf("child printed %q: %v", out, err)
	}

	// The dead member is still in the group, holding both partitions: a
	// member joining now under another id would wait for its session (or
	// the rebalance) to run out, longer than this test waits.
	g := describeGroup(t, prod)
	if len(g.Members) != 1 || g.Members[0].MemberID != dead || instanceOf(g.Members[0]) != "hub-0" {
		t.Fatalf("after the crash the group has %+v, want the dead member %s (hub-0)", g.Members, dead)
	}

	for i := 10; i < 15; i++ {
		testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("e-%02d", i)))
	}
	c, _ := startConsumer(t, static(consumerConfig(kafka.ListenAddrs(), s), "hub-0")) // returns once /readyz's Kafka check passes: the group is joined
	testkit.WaitFor(t, "offset 15 committed by the restarted member", func() bool {
		return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 15
	})
	if since := time.Since(crashed); since >= staticSession {
		t.Fatalf("resumed %v after the crash: the dead member's session (%v) could have expired, which proves nothing", since, staticSession)
	}

	member, gen := c.Client().GroupMetadata()
	g = describeGroup(t, prod)
	if len(g.Members) != 1 || g.Members[0].MemberID != member || member == dead || instanceOf(g.Members[0]) != "hub-0" {
		t.Fatalf("after the restart the group has %+v; want only the new member %s (hub-0) in place of %s", g.Members, member, dead)
	}
	if got := g.AssignedPartitions()[topic]; len(got) != 2 {
		t.Errorf("the restarted member holds partitions %v of %s, want both", got, topic)
	}
	if err := c.Ready(context.Background()); err != nil {
		t.Errorf("ready after the rejoin: %v", err)
	}
	if got := inbox(t, s, "acme"); len(got) != 15 {
		t.Errorf("inbox = %s, want 15 events exactly once", ids(got))
	}
	t.Logf("hub-0: member %s (generation %d) replaced by %s (generation %d) while the dead one's session had %v to run",
		dead, deadGen, member, gen, staticSession-time.Since(crashed))
}

// A static member that stops gracefully commits what it persisted and
// leaves the group all the same: a stop is a rollout or a scale-down, and
// its partitions move at once rather than after its session.
func TestConsumer_StaticMemberLeavesTheGroupOnAGracefulStop(t *testing.T) {
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 2, topic)
	prod := testkit.Producer(t, kafka)

	a, stopA := startConsumer(t, static(consumerConfig(kafka.ListenAddrs(), s), "hub-a"))
	for i := range 10 {
		testkit.Produce(t, prod, testkit.CERecord(topic, int32(i%2), "acme", fmt.Sprintf("e-%02d", i)))
	}
	testkit.WaitFor(t, "10 events persisted", func() bool { return len(inbox(t, s, "acme")) == 10 })
	member, _ := a.Client().GroupMetadata()
	stopA()
	if got := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic); got[0] != 5 || got[1] != 5 {
		t.Fatalf("committed offsets after a graceful stop = %v, want 5 on each partition", got)
	}
	if g := describeGroup(t, prod); len(g.Members) != 0 {
		t.Fatalf("after a graceful stop the group still has %+v (hub-a was %s)", g.Members, member)
	}

	// Another replica takes both partitions and goes on from the commits.
	startConsumer(t, static(consumerConfig(kafka.ListenAddrs(), s), "hub-b"))
	for i := 10; i < 14; i++ {
		testkit.Produce(t, prod, testkit.CERecord(topic, int32(i%2), "acme", fmt.Sprintf("e-%02d", i)))
	}
	testkit.WaitFor(t, "offsets 7 committed by hub-b", func() bool {
		got := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)
		return got[0] == 7 && got[1] == 7
	})
	if g := describeGroup(t, prod); len(g.Members) != 1 || instanceOf(g.Members[0]) != "hub-b" || len(g.AssignedPartitions()[topic]) != 2 {
		t.Errorf("group = %+v, want hub-b alone with both partitions", g.Members)
	}
	if n := len(inbox(t, s, "acme")); n != 14 {
		t.Errorf("inbox has %d events, want 14", n)
	}
}
