package console

import (
	"net/url"
	"reflect"
	"testing"
)

// The form's TLS fields: what is pasted is sent, an empty certificate or
// key is kept, the remove box and emptied CAs or version clear them.
func TestDestinationRequest_TLSFields(t *testing.T) {
	create := url.Values{"destination_type": {"webhook"}, "url": {"https://bank.example/hook"},
		"client_certificate": {"CERT\n"}, "client_key": {" KEY "}, "ca_certificates": {"CA"}, "tls_min_version": {"1.3"}}
	d := destinationRequest(create, true)
	if d["client_certificate"] != "CERT\n" || d["client_key"] != "KEY\n" || d["ca_certificates"] != "CA\n" || d["tls_min_version"] != "1.3" {
		t.Fatalf("create: %v", d)
	}
	keep := url.Values{"destination_type": {"webhook"}, "type_was": {"webhook"}, "url": {"https://bank.example/hook"},
		"url_was": {"https://bank.example/hook"}, "ca_certificates": {"CA"}, "ca_was": {"1"}, "tls_min_version": {"1.3"}, "tls_min_was": {"1.3"}}
	d = destinationRequest(keep, false)
	if _, ok := d["client_certificate"]; ok {
		t.Fatalf("an edit without a certificate sends one: %v", d)
	}
	clear := url.Values{"destination_type": {"webhook"}, "type_was": {"webhook"}, "url": {"https://bank.example/hook"},
		"url_was": {"https://bank.example/hook"}, "remove_client_certificate": {"1"}, "ca_was": {"1"}, "tls_min_was": {"1.3"}}
	d = destinationRequest(clear, false)
	want := m{"type": "webhook", "client_certificate": nil, "ca_certificates": nil, "tls_min_version": nil}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("clearing: %v, want %v", d, want)
	}
}
