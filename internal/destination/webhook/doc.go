// Package webhook is the webhook destination driver
// (docs/delivery.md,
// docs/brokers.md): it POSTs a message,
// signed and with the destination's auth and custom headers, through an HTTP
// client that dials only what destination's dialer allows and never follows
// redirects. An oauth2_client_credentials destination's bearer comes from the
// token cache (token.go), fetched through the same client.
package webhook
