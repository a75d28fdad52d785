package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// gatedStore blocks CreateTenant while gate is set, and fails it with an
// internal error while fail is set.
type gatedStore struct {
	store.Store
	mu      sync.Mutex
	gate    chan struct{} // closed to let a blocked CreateTenant go on
	entered chan struct{}
	fail    bool
	creates int
}

func (g *gatedStore) CreateTenant(ctx context.Context, p store.CreateTenantParams) (hub.Tenant, error) {
	g.mu.Lock()
	gate, entered, fail := g.gate, g.entered, g.fail
	g.creates++
	g.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if fail {
		return hub.Tenant{}, errors.New("injected: database down")
	}
	return g.Store.CreateTenant(ctx, p)
}

func decodeInto(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
}

func countTenants(t *testing.T, h *hubAPI) int {
	t.Helper()
	ts, err := h.store.ListTenants(context.Background(), store.ListTenantsParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// docs/lerian-platform.md: a POST repeated with one Idempotency-Key is done
// once and answered twice the same, the second time with Idempotent-Replayed:
// true.
func TestIdempotency_ReplaysTheFirstAnswer(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		body := `{"id":"acme","name":"Acme"}`
		st1, hd1, b1 := h.admin.do("POST", "/v1/tenants", body, "Idempotency-Key", "create-acme")
		st2, hd2, b2 := h.admin.do("POST", "/v1/tenants", body, "Idempotency-Key", "create-acme")
		if st1 != 201 || st2 != 201 || string(b1) != string(b2) {
			t.Fatalf("first %d %s, replay %d %s", st1, b1, st2, b2)
		}
		if hd1.Get("Idempotent-Replayed") != "" || hd2.Get("Idempotent-Replayed") != "true" || hd2.Get("Content-Type") != "application/json" {
			t.Fatalf("headers: first %v, replay %v", hd1, hd2)
		}
		if n := countTenants(t, h); n != 1 {
			t.Fatalf("%d tenants, want 1", n)
		}
		// Without the key, the same request is done again (409: it exists).
		if st, _, _ := h.admin.do("POST", "/v1/tenants", body); st != 409 {
			t.Fatalf("without a key: %d", st)
		}

		// A key created once is shown once more, to the same principal only,
		// and stored sealed, never in clear.
		var k1, k2 struct{ ID, Key string }
		st1, _, b1 = h.admin.do("POST", "/v1/tenants/acme/keys", "", "Idempotency-Key", "key-1")
		st2, hd2, b2 = h.admin.do("POST", "/v1/tenants/acme/keys", "", "Idempotency-Key", "key-1")
		if st1 != 201 || st2 != 201 || string(b1) != string(b2) || hd2.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("key create: %d %s, replay %d %s", st1, b1, st2, b2)
		}
		decodeInto(t, b1, &k1)
		rec, claimed, err := h.store.ClaimIdempotencyKey(context.Background(), store.IdempotencyClaim{
			Principal: "admin", Key: "key-1", RequestHash: "another", Token: "probe", Lock: time.Minute})
		if err != nil || claimed || !rec.Completed || rec.Status != 201 || strings.Contains(string(rec.Body), k1.Key) || strings.Contains(string(rec.Body), k1.ID) {
			t.Fatalf("stored answer: %+v claimed %v, %v (the key must be sealed)", rec, claimed, err)
		}
		keys, _ := h.store.ListAPIKeys(context.Background(), "acme")
		if len(keys) != 1 {
			t.Fatalf("%d keys, want 1", len(keys))
		}

		// After the TTL (24 h by default) the key is free: the work is done again.
		h.clock.Advance(24*time.Hour + time.Second)
		st2, hd2, b2 = h.admin.do("POST", "/v1/tenants/acme/keys", "", "Idempotency-Key", "key-1")
		decodeInto(t, b2, &k2)
		if st2 != 201 || hd2.Get("Idempotent-Replayed") != "" || k2.ID == k1.ID {
			t.Fatalf("after the TTL: %d %s %v", st2, b2, hd2)
		}
	})
}

// Another request under a used key is 422 idempotency_conflict; another
// principal's same key is another key; a validation 400 is replayed; a bad
// key is 400 naming the header.
func TestIdempotency_ConflictsPrincipalsAndBadKeys(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		if st, _, b := h.admin.do("POST", "/v1/tenants", `{"id":"acme","name":"Acme"}`, "Idempotency-Key", "k"); st != 201 {
			t.Fatalf("%d %s", st, b)
		}
		for _, c := range []struct{ path, body string }{
			{"/v1/tenants", `{"id":"acme","name":"Other"}`},
			{"/v1/tenants/acme/keys", ``},
		} {
			st, _, b := h.admin.do("POST", c.path, c.body, "Idempotency-Key", "k")
			if st != 422 || !strings.Contains(string(b), `"code":"idempotency_conflict"`) || !strings.Contains(string(b), "Idempotency-Key") {
				t.Fatalf("POST %s %s under a used key: %d %s", c.path, c.body, st, b)
			}
		}
		// The admin acting for a tenant, and a tenant key, are other principals.
		acme := h.tenant("globex")
		sub := `{"name":"hooks","event_types":[{"type":"transaction.posted","schema_major":1}],"destination":{"type":"webhook","url":"https://example.com/hook"}}`
		st, hd, b := acme.do("POST", "/v1/subscriptions", sub, "Idempotency-Key", "k")
		if st != 201 || hd.Get("Idempotent-Replayed") != "" {
			t.Fatalf("a tenant key's own k: %d %s", st, b)
		}
		st2, hd2, b2 := acme.do("POST", "/v1/subscriptions", sub, "Idempotency-Key", "k")
		if st2 != 201 || hd2.Get("Idempotent-Replayed") != "true" || string(b2) != string(b) || !strings.Contains(string(b2), "whsec_") {
			t.Fatalf("replayed subscription: %d %s", st2, b2)
		}
		st, hd, _ = h.admin.do("POST", "/v1/subscriptions", sub, "Idempotency-Key", "k", "X-Tenant-Id", "globex")
		if st != 201 || hd.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the admin for globex under k: %d", st)
		}
		subs, _ := h.store.ListSubscriptions(context.Background(), listAll("globex"))
		if len(subs) != 2 {
			t.Fatalf("%d subscriptions, want 2 (one per principal)", len(subs))
		}

		// A validation 400 is a final answer: replayed.
		st1, _, b1 := h.admin.do("POST", "/v1/tenants", `{"id":"bad id!"}`, "Idempotency-Key", "bad")
		st2, hd2, b2 = h.admin.do("POST", "/v1/tenants", `{"id":"bad id!"}`, "Idempotency-Key", "bad")
		if st1 != 400 || st2 != 400 || string(b1) != string(b2) || hd2.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("a 400: %d %s, again %d %s", st1, b1, st2, b2)
		}

		// Bad keys: 400 naming the header; nothing is created.
		for _, bad := range []string{strings.Repeat("a", 256), "caf\u00e9", "tab\there"} {
			st, _, b := h.admin.do("POST", "/v1/tenants", `{"id":"initech","name":"I"}`, "Idempotency-Key", bad)
			if st != 400 || !strings.Contains(string(b), "Idempotency-Key") {
				t.Errorf("key %q: %d %s", bad, st, b)
			}
		}
		if st, _, b := h.admin.do("POST", "/v1/tenants", `{"id":"initech","name":"I"}`, "Idempotency-Key", strings.Repeat("~", 255)); st != 201 {
			t.Fatalf("a 255-character key: %d %s", st, b)
		}
		// Unauthenticated: 401 before any key is looked at.
		anon := client{t, h.url, ""}
		if st, _, _ := anon.do("POST", "/v1/tenants", `{}`, "Idempotency-Key", "k"); st != 401 {
			t.Fatalf("no credentials: %d", st)
		}
	})
}

// A request still running under a key makes a second one 409 conflict; a
// 5xx releases the key so the client may retry with it.
func TestIdempotency_RunningIsConflictAndFailureReleases(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		g := &gatedStore{}
		h := newHubAPI(t, d, apiOptions{wrap: func(s store.Store) store.Store { g.Store = s; return g }})
		g.gate, g.entered = make(chan struct{}), make(chan struct{}, 1)
		body := `{"id":"acme","name":"Acme"}`
		done := make(chan int)
		go func() {
			st, _, _ := h.admin.do("POST", "/v1/tenants", body, "Idempotency-Key", "slow")
			done <- st
		}()
		<-g.entered
		st, _, b := h.admin.do("POST", "/v1/tenants", body, "Idempotency-Key", "slow")
		if st != 409 || !strings.Contains(string(b), `"code":"conflict"`) {
			t.Fatalf("while running: %d %s", st, b)
		}
		g.mu.Lock()
		gate := g.gate
		g.gate = nil
		g.mu.Unlock()
		close(gate)
		if st := <-done; st != 201 {
			t.Fatalf("the first request: %d", st)
		}
		st, hd, _ := h.admin.do("POST", "/v1/tenants", body, "Idempotency-Key", "slow")
		if st != 201 || hd.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after it finished: %d %v", st, hd)
		}

		// A 500 is not kept: the same key runs again.
		g.mu.Lock()
		g.fail = true
		g.mu.Unlock()
		if st, _, _ := h.admin.do("POST", "/v1/tenants", `{"id":"globex","name":"G"}`, "Idempotency-Key", "retry"); st != 500 {
			t.Fatalf("injected failure: %d", st)
		}
		g.mu.Lock()
		g.fail = false
		g.mu.Unlock()
		st, hd, b = h.admin.do("POST", "/v1/tenants", `{"id":"globex","name":"G"}`, "Idempotency-Key", "retry")
		if st != 201 || hd.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry after a 500: %d %s", st, b)
		}
		if n := countTenants(t, h); n != 2 {
			t.Fatalf("%d tenants, want 2", n)
		}
	})
}
