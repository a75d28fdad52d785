package dispatch

import (
	"slices"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/dispatch/concurrency"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const shared = "https://receiver.example:443"

// fixedHosts is the gate with every host's limit fixed at share: the fair
// share's rules, apart from the adaptive limit.
func fixedHosts(share int, now func() time.Time) *hosts {
	ds := newHosts(share, now, nil)
	ds.fixed = share
	return ds
}

// admitN admits up to n attempts of tenant's subscription sub and says how
// many were let in.
func admitN(ds *hosts, tenant, sub string, n int) int {
	in := 0
	for range n {
		if ds.admit(shared, tenant, sub, 64) {
			in++
		}
	}
	return in
}

func TestFairShare_ALoneTenantTakesTheWholeShare(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(8, clock.Now)
	if got := admitN(ds, "acme", "sub_a", 20); got != 8 {
		t.Fatalf("a tenant alone at a host got %d attempts, want the whole share of 8", got)
	}
	if ex := ds.excluded(); !slices.Equal(ex, []string{"sub_a"}) {
		t.Fatalf("excluded %v, want the full tenant's subscription", ex)
	}
}

// The hung case: one tenant's attempts fill the share before others come;
// every other tenant is still let in up to its fair share.
func TestFairShare_AnotherTenantsHungAttemptsNeverTakeMyRoom(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(8, clock.Now)
	if got := admitN(ds, "hung", "sub_h", 8); got != 8 {
		t.Fatalf("got %d", got)
	}
	// Now globex comes: two tenants, a fair share of 4 each.
	if got := admitN(ds, "globex", "sub_g", 10); got != 4 {
		t.Fatalf("globex got %d attempts beside a hung tenant holding the share, want its fair share of 4", got)
	}
	if got := admitN(ds, "hung", "sub_h", 1); got != 0 {
		t.Fatal("the hung tenant, over its fair share, took another attempt")
	}
	ex := ds.excluded()
	slices.Sort(ex)
	if !slices.Equal(ex, []string{"sub_g", "sub_h"}) {
		t.Fatalf("excluded %v", ex)
	}
	// One of globex's answers frees its subscription for claims again;
	// a hung attempt's end frees nothing while the hung tenant is over its
	// fair share.
	if _, freed := ds.leave(shared, "hung", concurrency.Success, time.Millisecond); len(freed) != 0 {
		t.Fatalf("freed %v: the hung tenant is still over its fair share", freed)
	}
	if _, freed := ds.leave(shared, "globex", concurrency.Success, time.Millisecond); !slices.Equal(freed, []string{"sub_g"}) {
		t.Fatalf("freed %v, want globex's subscription", freed)
	}
}

// Room nobody is owed is lent: two tenants with a fair share of 4 each,
// one busy and one quiet, the busy one takes only what the quiet one is
// not owed.
func TestFairShare_RoomIsLentOnlyWhenNoActiveTenantIsOwedIt(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(8, clock.Now)
	admitN(ds, "quiet", "sub_q", 1)
	if got := admitN(ds, "busy", "sub_b", 20); got != 4 {
		t.Fatalf("busy got %d beside a quiet tenant with one attempt, want 4 (the quiet one is owed 3)", got)
	}
	ds.leave(shared, "quiet", concurrency.Success, time.Millisecond)
	// quiet stays active (owed its share) for a while after its last
	// attempt...
	if got := admitN(ds, "busy", "sub_b", 1); got != 0 {
		t.Fatal("busy took the room the quiet tenant is owed")
	}
	// ...then is forgotten, and busy may take the whole share.
	clock.Advance(activeFor + time.Second)
	if _, freed := ds.leave(shared, "busy", concurrency.Success, time.Millisecond); !slices.Equal(freed, []string{"sub_b"}) {
		t.Fatalf("freed %v once the quiet tenant was forgotten", freed)
	}
	if got := admitN(ds, "busy", "sub_b", 20); got != 5 {
		t.Fatalf("busy got %d more, want the rest of the share (5)", got)
	}
}

// Many tenants on one host each get at least one attempt, within twice
// the share at most.
func TestFairShare_EveryTenantGetsOneWithinTheCeiling(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(4, clock.Now)
	admitN(ds, "hog", "sub_hog", 4)
	for i := range 4 {
		tenant := string(rune('a' + i))
		if !ds.admit(shared, tenant, "sub_"+tenant, 64) {
			t.Fatalf("tenant %s with nothing in flight was refused", tenant)
		}
	}
	if ds.admit(shared, "late", "sub_late", 64) {
		t.Fatal("the ceiling of twice the share was passed")
	}
	if ex := ds.excluded(); len(ex) != 6 {
		t.Fatalf("at the ceiling every tenant's subscriptions wait, got %v", ex)
	}
	if _, freed := ds.leave(shared, "hog", concurrency.Success, time.Millisecond); len(freed) == 0 {
		t.Fatal("below the ceiling again, nobody was freed")
	}
}

// Work parked behind runs starts as soon as an answer makes room, not
// when a run ends: ordered subscriptions' runs each keep their slot from
// one job to the next, and an ordered subscription parked while the
// host's limit was low (a process just started, or that just took a dead
// one's jobs over) waited for a whole run, 64 jobs, however much the limit
// grew meanwhile (seen in the fault suite: 12 s after a kill -9, 200 ms
// receivers; docs/delivery.md, "One receiver host": parked work "starts as
// soon as an attempt to that host answers").
func TestFairShare_WorkParkedBehindRunsStartsWhenTheLimitGrows(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(1, clock.Now)
	// Three ordered subscriptions of three tenants; a limit of 1 lets two
	// in (twice the share), the third is parked.
	for _, tenant := range []string{"a", "b"} {
		if !ds.admit(shared, tenant, "sub_"+tenant, 1) {
			t.Fatalf("tenant %s refused", tenant)
		}
	}
	if ds.admit(shared, "c", "sub_c", 1) {
		t.Fatal("a third run was let in beyond twice a share of 1")
	}
	parked := unit{first: store.Claimed{Job: hub.Job{ID: "job_c", TenantID: "c", SubscriptionID: "sub_c"}}}
	ds.park(shared, "c", parked)
	// An answer of a's run, its next job to come, with the limit as it was:
	// nothing starts.
	if start, _ := ds.observe(shared, concurrency.Success, time.Millisecond); len(start) != 0 {
		t.Fatalf("started %d units with no room made", len(start))
	}
	// The limit grew (the adaptive limiter's windows); the next answer of
	// a run that keeps its slot starts the parked unit.
	ds.m[shared].fixed = 4
	start, _ := ds.observe(shared, concurrency.Success, time.Millisecond)
	if len(start) != 1 || start[0].u.first.Job.ID != "job_c" || start[0].tenant != "c" {
		t.Fatalf("after the limit grew, an answer started %+v, want the unit parked by c", start)
	}
}

// Destinations are counted apart.
func TestFairShare_OtherDestinationsAreApart(t *testing.T) {
	clock := testkit.NewClock()
	ds := fixedHosts(2, clock.Now)
	admitN(ds, "acme", "sub_a", 2)
	if !ds.admit("https://other.example:443", "acme", "sub_b", 64) {
		t.Fatal("a full destination held back another one")
	}
	for range 2 {
		ds.leave(shared, "acme", concurrency.Success, time.Millisecond)
	}
	ds.leave("https://other.example:443", "acme", concurrency.Success, time.Millisecond)
	clock.Advance(activeFor + time.Second)
	ds.excluded()
	if len(ds.m) != 0 {
		t.Fatalf("idle destinations are kept: %d", len(ds.m))
	}
}

// An AWS destination's share and breaker are its resource's: two queues
// (or topics) of one account are two destinations, never one "arn://".
func TestDestinationOf_AWSResourcesAreTheirOwn(t *testing.T) {
	a := hub.Destination{Type: hub.DestinationAWSSQS, AWS: hub.AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/a"}}
	b := hub.Destination{Type: hub.DestinationAWSSQS, AWS: hub.AWS{QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/b"}}
	topic := hub.Destination{Type: hub.DestinationAWSSNS, AWS: hub.AWS{TopicARN: "arn:aws:sns:us-east-1:111122223333:t"}}
	got := map[string]bool{}
	for _, d := range []hub.Destination{a, b, topic} {
		got[destinationOf(d.Address())] = true
	}
	if len(got) != 3 || !got["arn:aws:sqs:us-east-1:111122223333:a"] || !got["arn:aws:sns:us-east-1:111122223333:t"] {
		t.Fatalf("destinations %v: three, by resource, expected", got)
	}
}
