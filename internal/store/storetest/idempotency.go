package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testIdempotency: a key is claimed by one request at a time, holds its
// answer until the TTL, is freed by a release, and is reaped once expired
// (docs/lerian-platform.md).
func testIdempotency(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	s := e.store
	claim := func(principal, key, hash, token string) (store.IdempotencyRecord, bool) {
		t.Helper()
		rec, ok, err := s.ClaimIdempotencyKey(e.ctx, store.IdempotencyClaim{
			Principal: principal, Key: key, RequestHash: hash, Token: token, Lock: time.Minute})
		if err != nil {
			t.Fatalf("claim %s/%s: %v", principal, key, err)
		}
		return rec, ok
	}
	ttl := 24 * time.Hour

	// The first claim wins; a second sees the running row.
	start := e.clock.Now()
	if _, ok := claim("key:k1", "abc", "h1", "t1"); !ok {
		t.Fatal("first claim refused")
	}
	rec, ok := claim("key:k1", "abc", "h2", "t2")
	if ok || rec.Completed || rec.RequestHash != "h1" || !rec.CreatedAt.Equal(start.UTC().Truncate(time.Microsecond)) {
		t.Fatalf("second claim of a running key: %+v, claimed %v", rec, ok)
	}
	// Another principal's same key is another key.
	if _, ok := claim("admin", "abc", "h1", "t3"); !ok {
		t.Fatal("another principal's claim refused")
	}
	// Only the claim's owner completes it.
	if done, err := s.CompleteIdempotencyKey(e.ctx, "key:k1", "abc", "t2", 201, []byte("x"), ttl); err != nil || done {
		t.Fatalf("completed by a stranger: %v, %v", done, err)
	}
	e.clock.Advance(time.Second)
	if done, err := s.CompleteIdempotencyKey(e.ctx, "key:k1", "abc", "t1", 201, []byte(`{"id":"1"}`), ttl); err != nil || !done {
		t.Fatalf("complete: %v, %v", done, err)
	}
	rec, ok = claim("key:k1", "abc", "h1", "t4")
	if ok || !rec.Completed || rec.Status != 201 || string(rec.Body) != `{"id":"1"}` || rec.RequestHash != "h1" ||
		!rec.ExpiresAt.Equal(rec.CreatedAt.Add(ttl)) {
		t.Fatalf("claim of a completed key: %+v, claimed %v", rec, ok)
	}
	if done, _ := s.CompleteIdempotencyKey(e.ctx, "key:k1", "abc", "t1", 500, nil, ttl); done {
		t.Fatal("a completed answer was overwritten")
	}

	// Released: the key is free again at once.
	if _, ok := claim("key:k2", "abc", "h1", "t5"); !ok {
		t.Fatal("claim refused")
	}
	if err := s.ReleaseIdempotencyKey(e.ctx, "key:k2", "abc", "t5"); err != nil {
		t.Fatal(err)
	}
	if _, ok := claim("key:k2", "abc", "h9", "t6"); !ok {
		t.Fatal("a released key was not free")
	}

	// A running claim whose lock expired (its process died) is taken over;
	// the old owner can no longer complete it.
	e.clock.Advance(time.Minute)
	if _, ok := claim("key:k2", "abc", "h9", "t7"); !ok {
		t.Fatal("an expired running claim was not taken over")
	}
	if done, _ := s.CompleteIdempotencyKey(e.ctx, "key:k2", "abc", "t6", 201, nil, ttl); done {
		t.Fatal("a lost claim completed")
	}

	// The TTL: alive until created_at+ttl, then reaped (or taken over).
	e.clock.Set(start.Add(ttl - time.Second))
	if n, err := s.ReapIdempotencyKeys(e.ctx, 0); err != nil || n != 2 { // admin's and key:k2's running rows
		t.Fatalf("reaped %d, %v; want the 2 expired running rows", n, err)
	}
	if rec, ok := claim("key:k1", "abc", "h1", "t8"); ok || !rec.Completed {
		t.Fatalf("completed key gone before its TTL: %+v %v", rec, ok)
	}
	e.clock.Advance(time.Second)
	if n, err := s.ReapIdempotencyKeys(e.ctx, 0); err != nil || n != 1 {
		t.Fatalf("reaped %d, %v; want 1", n, err)
	}
	if got := e.rows(t, "idempotency_keys"); got != 0 {
		t.Fatalf("%d rows left after the reap", got)
	}
	// A completed key past its TTL but not yet reaped is claimed anew.
	if _, ok := claim("key:k3", "abc", "h1", "t9"); !ok {
		t.Fatal("claim refused")
	}
	if done, _ := s.CompleteIdempotencyKey(e.ctx, "key:k3", "abc", "t9", 200, []byte("{}"), time.Hour); !done {
		t.Fatal("complete failed")
	}
	e.clock.Advance(time.Hour)
	if _, ok := claim("key:k3", "abc", "h2", "t10"); !ok {
		t.Fatal("an expired completed key was not free")
	}
	// The reap is bounded by its batch.
	for _, k := range []string{"a", "b", "c"} {
		claim("key:k4", k, "h", "t-"+k)
	}
	e.clock.Advance(2 * time.Minute)
	if n, err := s.ReapIdempotencyKeys(e.ctx, 2); err != nil || n != 2 {
		t.Fatalf("reap of batch 2: %d, %v", n, err)
	}

	// Two principals, one key: two stored answers, each its own.
	for _, p := range []string{"jwt:alice", "jwt:bob"} {
		if _, ok := claim(p, "shared", "h", "t-"+p); !ok {
			t.Fatalf("%s's claim of a key another principal holds was refused", p)
		}
		if done, err := s.CompleteIdempotencyKey(e.ctx, p, "shared", "t-"+p, 201, []byte(p), ttl); err != nil || !done {
			t.Fatalf("%s's answer: %v, %v", p, done, err)
		}
	}
	for _, p := range []string{"jwt:alice", "jwt:bob"} {
		if rec, ok := claim(p, "shared", "h", "t-again"); ok || !rec.Completed || string(rec.Body) != p || rec.Principal != p {
			t.Fatalf("%s's stored answer: %+v, claimed %v", p, rec, ok)
		}
	}

	// Concurrent claims of one key: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := s.ClaimIdempotencyKey(e.ctx, store.IdempotencyClaim{
				Principal: "key:k5", Key: "race", RequestHash: "h", Token: "race-" + string(rune('a'+i)), Lock: time.Minute})
			if err != nil {
				t.Errorf("concurrent claim: %v", err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d concurrent claims of one key won, want 1", wins)
	}
}
