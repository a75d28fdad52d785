package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testTenants(t *testing.T, open Opener) {
	t.Run("EnsureTenant", func(t *testing.T) { testEnsureTenant(t, open) })
	t.Run("CreateGetList", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		created, err := e.store.CreateTenant(e.ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		want := hub.Tenant{ID: "acme", Name: "Acme", Status: hub.TenantActive, CreatedAt: e.clock.Now()}
		if created != want {
			t.Fatalf("created %+v, want %+v", created, want)
		}
		got, err := e.store.GetTenant(e.ctx, "acme")
		if err != nil || got != want {
			t.Fatalf("GetTenant = %+v, %v; want %+v", got, err, want)
		}
		for _, id := range []string{"b", "c", "d"} {
			e.tenant(t, id, "")
		}
		page, err := e.store.ListTenants(e.ctx, store.ListTenantsParams{Limit: 2})
		if err != nil || len(page) != 2 || page[0].ID != "acme" || page[1].ID != "b" {
			t.Fatalf("first page = %+v, %v", page, err)
		}
		page, err = e.store.ListTenants(e.ctx, store.ListTenantsParams{After: "b", Limit: 10})
		if err != nil || len(page) != 2 || page[0].ID != "c" || page[1].ID != "d" {
			t.Fatalf("second page = %+v, %v", page, err)
		}
	})

	t.Run("Conflicts and missing", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		_, err := e.store.CreateTenant(e.ctx, store.CreateTenantParams{ID: "acme", Name: "again"})
		wantCode(t, err, hub.ECONFLICT)
		_, err = e.store.GetTenant(e.ctx, "nobody")
		wantCode(t, err, hub.ENOTFOUND)
		// The error says where it came from; the code still decides the
		// answer, with the message a caller is shown.
		if !strings.Contains(err.Error(), ": GetTenant: ") || hub.ErrorMessage(err) != `tenant "nobody" not found` {
			t.Fatalf("error %q (message %q), want it to name the driver and GetTenant", err, hub.ErrorMessage(err))
		}
		inactive := hub.TenantInactive
		_, err = e.store.UpdateTenant(e.ctx, store.UpdateTenantParams{ID: "nobody", Status: &inactive})
		wantCode(t, err, hub.ENOTFOUND)
		_, err = e.store.CreateTenant(e.ctx, store.CreateTenantParams{ID: "bad id!"})
		wantCode(t, err, hub.EINVALID)
		bogus := hub.TenantStatus("paused")
		_, err = e.store.UpdateTenant(e.ctx, store.UpdateTenantParams{ID: "acme", Status: &bogus})
		wantCode(t, err, hub.EINVALID)
	})

	t.Run("Update", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		inactive := hub.TenantInactive
		got, err := e.store.UpdateTenant(e.ctx, store.UpdateTenantParams{ID: "acme", Status: &inactive})
		if err != nil || got.Status != hub.TenantInactive || got.Name != "acme" {
			t.Fatalf("UpdateTenant status = %+v, %v", got, err)
		}
		name := "Acme Corp"
		got, err = e.store.UpdateTenant(e.ctx, store.UpdateTenantParams{ID: "acme", Name: &name})
		if err != nil || got.Status != hub.TenantInactive || got.Name != name {
			t.Fatalf("UpdateTenant name = %+v, %v", got, err)
		}
	})
}

// testEnsureTenant: single-tenant replicas starting together all ensure
// their tenant; each gets it, one row exists, and an existing tenant keeps
// its name and status.
func testEnsureTenant(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := store.EnsureTenant(e.ctx, e.store, "default")
			if err == nil && (got.ID != "default" || got.Status != hub.TenantActive) {
				err = fmt.Errorf("EnsureTenant = %+v", got)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.store.ListTenants(e.ctx, store.ListTenantsParams{Limit: 10})
	if err != nil || len(all) != 1 || all[0].Name != "default" {
		t.Fatalf("tenants = %+v, %v", all, err)
	}
	e.tenant(t, "acme", hub.TenantInactive)
	if got, err := store.EnsureTenant(e.ctx, e.store, "acme"); err != nil || got.Status != hub.TenantInactive {
		t.Fatalf("EnsureTenant(existing inactive) = %+v, %v", got, err)
	}
}
