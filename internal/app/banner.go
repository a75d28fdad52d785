package app

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// printDevBanner tells a newcomer what is running and what to do next.
func printDevBanner(w io.Writer, h *Hub, secrets devSecretsFile) {
	api := "http://" + strings.Replace(h.HTTPAddr(), "[::]", "localhost", 1)
	broker := strings.Join(h.KafkaAddrs(), ",")
	fmt.Fprintf(w, `
streaming-hub (%s) is running in dev mode

  HTTP API       %s   (OpenAPI: %s/v1/openapi.json)
  Console        %s/console/   (sign in with the admin token below)
  Kafka broker   %s   (embedded; topics are created on first produce)
  Database       %s
  Tenant         default (seeded)
  Admin token    %s
`, hub.Version, api, api, api, broker, redactURL(h.Config.DatabaseURL), h.Config.AdminToken)
	switch {
	case secrets.Path == "":
		fmt.Fprintln(w, "  Secrets        from the environment (STREAMING_HUB_KEK, STREAMING_HUB_ADMIN_TOKEN)")
	case secrets.Generated:
		fmt.Fprintf(w, "  Secrets        generated and kept in %s (set STREAMING_HUB_ADMIN_TOKEN / STREAMING_HUB_KEK to choose your own)\n", secrets.Path)
	default:
		fmt.Fprintf(w, "  Secrets        reused from %s (delete it, with the database, to start over)\n", secrets.Path)
	}
	fmt.Fprintf(w, `
Produce an event (kcat, or any Kafka client):

  echo '{"amount":"10.00"}' | kcat -P -b %s -t lerian.streaming.ledger_transaction.posted \
    -H ce-specversion=1.0 -H ce-id=evt-$(date +%%s%%N) -H ce-source=//midaz/ledger \
    -H ce-type=studio.lerian.transaction.posted -H ce-time=$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ) \
    -H ce-tenantid=default -H ce-schemaversion=1.0.0 -H content-type=application/json

or, without kcat:  %s produce --brokers %s --tenant default

See its verdict:

  curl -s %s/metrics | grep streaming_hub_ingest_records_total
  curl -s -H "Authorization: Bearer %s" %s/v1/admin/rejections

Subscribe tenant default to transaction.posted (the answer carries the
signing_secret), run a receiver with it, and verify the subscription:

  curl -s -X POST %s/v1/subscriptions -H "Authorization: Bearer %s" -H "X-Tenant-Id: default" \
    -d '{"name":"local","event_types":[{"type":"transaction.posted","schema_major":1}],
         "destination":{"type":"webhook","url":"http://127.0.0.1:9000/hook"}}'
  WEBHOOK_SECRET=<signing_secret> go run ./examples/receiver -addr 127.0.0.1:9000
  curl -s -X POST %s/v1/subscriptions/<id>/verify -H "Authorization: Bearer %s" -H "X-Tenant-Id: default"

`, broker, program(os.Args[0]), broker, api, h.Config.AdminToken, api, api, h.Config.AdminToken, api, h.Config.AdminToken)
}

// program is how the banner names this binary, so its commands paste as
// they are: as it was started ("./streaming-hub") when that is a path,
// else "streaming-hub" (found on the PATH, or built by `go run` in a
// temporary directory no one types).
func program(arg0 string) string {
	if !strings.Contains(arg0, "/") || strings.Contains(arg0, "go-build") {
		return "streaming-hub"
	}
	return arg0
}

// redactURL is a database URL fit to print: a password in the user info
// shows as xxxxx, and one in the query (pgx reads ?password=) as well. A
// URL that does not parse is not shown at all.
func redactURL(raw string) string {
	if strings.HasPrefix(raw, "sqlite://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse; not shown)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
