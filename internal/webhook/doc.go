// Package webhook talks to destinations: a client that refuses private
// addresses at dial time and never follows redirects, Standard Webhooks
// signing, the request every attempt sends, and the verification probe.
package webhook
