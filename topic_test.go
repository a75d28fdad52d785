package hub_test

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

func TestTopic_MidazRule(t *testing.T) {
	cases := map[string]string{
		"studio.lerian.transaction.posted":            "lerian.streaming.ledger_transaction.posted",
		"studio.lerian.balance.config-changed":        "lerian.streaming.ledger_balance.config_changed",
		"studio.lerian.account-holder.status-changed": "lerian.streaming.ledger_account_holder.status_changed",
		// The five-segment form's source segment is not part of the topic:
		// the service segment is.
		"studio.lerian.midaz.transaction.posted": "lerian.streaming.ledger_transaction.posted",
	}
	for ceType, want := range cases {
		got, err := hub.LedgerTopic(ceType)
		if err != nil || got != want {
			t.Errorf("LedgerTopic(%q) = %q, %v; want %q", ceType, got, err, want)
		}
	}
}

func TestTopic_OtherServicesAndErrors(t *testing.T) {
	got, err := hub.Topic("consignado", "studio.lerian.loan.granted")
	if err != nil || got != "lerian.streaming.consignado_loan.granted" {
		t.Errorf("Topic(consignado) = %q, %v", got, err)
	}
	got, err = hub.Topic("crm-sync", "studio.lerian.contact.created")
	if err != nil || got != "lerian.streaming.crm_sync_contact.created" {
		t.Errorf("Topic(crm-sync) = %q, %v", got, err)
	}
	for _, bad := range [][2]string{{"", "studio.lerian.a.b"}, {"Ledger", "studio.lerian.a.b"}, {"ledger", "com.acme.a.b"}, {"ledger", "studio.lerian.a"}} {
		if got, err := hub.Topic(bad[0], bad[1]); err == nil {
			t.Errorf("Topic(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}

func TestServiceFromSource(t *testing.T) {
	cases := map[string]string{
		"//lerian.studio/consignado":       "consignado",
		"https://api.lerian.studio/crm/v1": "v1",
		"urn:lerian:consignado":            "consignado",
		"//payments.example.com":           "payments",
		"midaz":                            "midaz",
		"Plugin CRM":                       "plugin_crm",
	}
	for source, want := range cases {
		if got, err := hub.ServiceFromSource(source); err != nil || got != want {
			t.Errorf("ServiceFromSource(%q) = %q, %v; want %q", source, got, err, want)
		}
	}
	got, err := hub.TopicForSource("//lerian.studio/consignado", "studio.lerian.loan.granted")
	if err != nil || got != "lerian.streaming.consignado_loan.granted" {
		t.Errorf("TopicForSource = %q, %v", got, err)
	}
}

func TestEventTypeIsTheTailOfCEType(t *testing.T) {
	for ceType, want := range map[string]string{
		"studio.lerian.transaction.posted":            "transaction.posted",
		"studio.lerian.ledger.balance.config-changed": "balance.config-changed",
	} {
		ct, err := hub.ParseCEType(ceType)
		if err != nil || ct.EventType() != want {
			t.Errorf("EventType(%q) = %q, %v; want %q", ceType, ct.EventType(), err, want)
		}
	}
}

func TestExcludedTopic(t *testing.T) {
	for topic, want := range map[string]bool{
		"lerian.streaming.ledger_transaction.posted": false,
		"lerian.streaming.ledger.commands":           true,
		"lerian.streaming.ledger_transaction.dlq":    true,
		"lerian.streaming.dlq_audit.created":         false,
	} {
		if got := hub.ExcludedTopic(topic); got != want {
			t.Errorf("ExcludedTopic(%q) = %v", topic, got)
		}
	}
}
