package storetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testSecrets: every subscription's sealed secrets are listed in id order,
// deleted ones too, and Reseal replaces them only while they are what the
// caller read, touching nothing else.
func testSecrets(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "acme", "active")
	e.tenant(t, "globex", "active")
	var ids []string
	for i := range 5 {
		tenant := []string{"acme", "globex"}[i%2]
		s := NewSubscription(tenant, fmt.Sprintf("sub_%02d", i))
		s.Secrets = []byte{byte(i), 0, 255}
		if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if err := e.store.DeleteSubscription(e.ctx, "globex", "sub_01"); err != nil {
		t.Fatal(err)
	}
	var got []store.Sealed
	for after := ""; ; {
		page, err := e.store.ListSealed(e.ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].SubscriptionID
	}
	if len(got) != 5 {
		t.Fatalf("listed %d sealed rows, want 5 (deleted included)", len(got))
	}
	for i, s := range got {
		if s.SubscriptionID != ids[i] || !bytes.Equal(s.Blob, []byte{byte(i), 0, 255}) || s.TenantID != []string{"acme", "globex"}[i%2] {
			t.Fatalf("row %d = %+v", i, s)
		}
	}
	before, _ := e.store.GetSubscription(e.ctx, "acme", "sub_02")
	if ok, err := e.store.Reseal(e.ctx, "sub_02", []byte{9}, []byte{7}); err != nil || ok {
		t.Fatalf("Reseal with a stale blob = %v, %v; want no change", ok, err)
	}
	if ok, err := e.store.Reseal(e.ctx, "sub_02", []byte{2, 0, 255}, []byte{7, 7}); err != nil || !ok {
		t.Fatalf("Reseal = %v, %v", ok, err)
	}
	after, _ := e.store.GetSubscription(e.ctx, "acme", "sub_02")
	if !bytes.Equal(after.Secrets, []byte{7, 7}) || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("after Reseal: secrets %v version %d->%d updated %v->%v", after.Secrets, before.Version, after.Version, before.UpdatedAt, after.UpdatedAt)
	}
}
