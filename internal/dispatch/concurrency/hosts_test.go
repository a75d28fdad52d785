package concurrency

import (
	"fmt"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestHosts_CreatesOneLimiterPerHostOnFirstUse(t *testing.T) {
	clock := testkit.NewClock()
	h := NewHosts(clock.Now, nil)
	if _, ok := h.Snapshot("https://a.example:443"); ok {
		t.Fatal("a host never sent to has a snapshot")
	}
	a := h.Get("https://a.example:443", 10)
	if h.Get("https://a.example:443", 10) != a {
		t.Fatal("a second Get of a host returned another limiter")
	}
	if h.Get("https://b.example:443", 10) == a {
		t.Fatal("two hosts share a limiter")
	}
	if n := h.Len(); n != 2 {
		t.Fatalf("%d hosts kept, want 2", n)
	}
	snap, ok := h.Snapshot("https://a.example:443")
	if !ok || snap.Limit != 1 || snap.Ceiling != 10 {
		t.Fatalf("snapshot %+v (%v), want limit 1 and ceiling 10", snap, ok)
	}
}

// A new host found by an ordered subscription (max_in_flight 1) has a
// ceiling of 1 at first, which grows as its other subscriptions send
// there: its limit starts at the initial one, or its ceiling if lower
// (docs/delivery.md), not at 1. (Seen in the fault suite: eight ordered
// subscriptions to one receiver, a process restarted after a kill -9
// started them over a second at limits 1, 2, 3, 4.)
func TestHosts_ANewHostStartsAtTheInitialLimitAsItsCeilingGrows(t *testing.T) {
	clock := testkit.NewClock()
	h := NewHosts(clock.Now, nil)
	h.SetInitial(8)
	const host = "http://receiver.example:8080"
	for i, want := range []int{1, 2, 3, 8, 8} {
		if got := h.Get(host, []int{1, 2, 3, 8, 20}[i]).Limit(); got != want {
			t.Fatalf("step %d: limit %d, want %d", i, got, want)
		}
	}
	// Once the limit changed for a reason of its own (here a lower
	// ceiling), a higher ceiling lets it grow only as answers allow.
	l := h.Get(host, 2)
	if got := l.Limit(); got != 2 {
		t.Fatalf("a ceiling of 2 left the limit at %d", got)
	}
	if got := h.Get(host, 20).Limit(); got != 2 {
		t.Fatalf("after a cut, a higher ceiling raised the limit to %d at once", got)
	}
}

func TestHosts_GetSetsTheCeilingAndReportsTheCut(t *testing.T) {
	clock := testkit.NewClock()
	var changes []Change
	h := NewHosts(clock.Now, func(c Change) { changes = append(changes, c) })
	const host = "http://receiver.example:8080"
	l := h.Get(host, 32)
	// Grow it: demand at the limit, flat answers.
	for l.Snapshot().Limit < 10 {
		n := 0
		for l.TryAcquire() {
			n++
		}
		clock.Advance(20 * time.Millisecond)
		for range n {
			l.Release(Success, 20*time.Millisecond)
		}
	}
	if len(changes) == 0 || changes[0].Host != host || changes[0].Why != Grew {
		t.Fatalf("changes %+v, want growth reported for %s", changes, host)
	}
	from := l.Snapshot().Limit
	h.Get(host, 4)
	last := changes[len(changes)-1]
	if last.From != from || last.To != 4 || last.Why != Capped || last.Host != host {
		t.Fatalf("last change %+v, want %d to 4, capped, for %s", last, from, host)
	}
	if snap, _ := h.Snapshot(host); snap.Limit != 4 || snap.Ceiling != 4 {
		t.Fatalf("snapshot %+v after a lower ceiling, want limit and ceiling 4", snap)
	}
}

func TestHosts_ForgetsIdleHostsButNotBusyOnes(t *testing.T) {
	clock := testkit.NewClock()
	h := NewHosts(clock.Now, nil)
	idle := h.Get("http://idle:80", 8)
	if !idle.TryAcquire() {
		t.Fatal("refused")
	}
	idle.Release(Success, time.Millisecond)
	busy := h.Get("http://busy:80", 8)
	if !busy.TryAcquire() {
		t.Fatal("refused")
	}
	clock.Advance(idleAfter - time.Second)
	h.Get("http://other:80", 8)
	if _, ok := h.Snapshot("http://idle:80"); !ok {
		t.Fatal("a host idle for less than the idle time was forgotten")
	}
	clock.Advance(2 * time.Second)
	h.Get("http://other:80", 8)
	if _, ok := h.Snapshot("http://idle:80"); ok {
		t.Fatal("a host idle for longer than the idle time is still kept")
	}
	if _, ok := h.Snapshot("http://busy:80"); !ok {
		t.Fatal("a host with an attempt in flight was forgotten")
	}
	// The busy host's attempt ends; its limiter is the one kept.
	busy.Release(Success, time.Millisecond)
	if snap, _ := h.Snapshot("http://busy:80"); snap.InFlight != 0 {
		t.Fatalf("in flight %d after the release, want 0", snap.InFlight)
	}
	if h.Get("http://busy:80", 8) != busy {
		t.Fatal("the busy host's limiter was replaced")
	}
}

func TestHosts_KeepsABoundedNumberOfHosts(t *testing.T) {
	clock := testkit.NewClock()
	h := NewHosts(clock.Now, nil)
	busy := h.Get("http://busy:80", 8)
	if !busy.TryAcquire() {
		t.Fatal("refused")
	}
	for i := range 3 * maxHosts {
		clock.Advance(time.Millisecond)
		h.Get(fmt.Sprintf("http://h%d:80", i), 8)
		if n := h.Len(); n > maxHosts {
			t.Fatalf("%d hosts kept after %d, want at most %d", n, i+2, maxHosts)
		}
	}
	if h.Get("http://busy:80", 8) != busy {
		t.Fatal("a host with an attempt in flight was forgotten to make room")
	}
	last := fmt.Sprintf("http://h%d:80", 3*maxHosts-1)
	if _, ok := h.Snapshot(last); !ok {
		t.Fatal("the host used last was forgotten")
	}
}
