package store

import (
	"slices"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

// The tenants a batch locks and the subscriptions its jobs announce are
// each listed once and sorted (every transaction locks in one order); a
// completion batch's subscriptions once each, in the order first seen.
func TestDistinct_TenantsSubscriptionsOfJobsAndOfCompletions(t *testing.T) {
	evs := []hub.Event{{TenantID: "globex"}, {TenantID: "acme"}, {TenantID: "globex"}, {TenantID: "initech"}}
	if got := Tenants(evs); !slices.Equal(got, []string{"acme", "globex", "initech"}) {
		t.Errorf("Tenants = %v", got)
	}
	jobs := []hub.Job{{SubscriptionID: "sub_b"}, {SubscriptionID: "sub_a"}, {SubscriptionID: "sub_b"}}
	if got := SubscriptionsOfJobs(jobs); !slices.Equal(got, []string{"sub_a", "sub_b"}) {
		t.Errorf("SubscriptionsOfJobs = %v", got)
	}
	cs := []Completion{{SubscriptionID: "sub_b"}, {SubscriptionID: "sub_a"}, {SubscriptionID: "sub_b"}}
	if got := SubscriptionsOf(cs); !slices.Equal(got, []string{"sub_b", "sub_a"}) {
		t.Errorf("SubscriptionsOf = %v", got)
	}
	if got := Tenants(nil); got != nil {
		t.Errorf("Tenants(nil) = %v, want nil", got)
	}
}
