package config

import (
	"fmt"
	"sort"
	"strings"
)

// Variable documents one STREAMING_HUB_ variable (without the prefix).
type Variable struct {
	Name string
	// Default is the value the code starts from when the variable is
	// unset (Serve mode), and DevDefault dev's when it differs: both come
	// from Defaults through the readers of Load, except where the table
	// below gives one (variables read without a typed reader).
	Default, DevDefault string
	Description         string
	// Chart is the name Lerian's chart sets for it: another name, "same",
	// or "" when the chart does not set it.
	Chart string
}

// variableDocs is the one-line description of every variable the hub
// reads, and the default of those whose reader records none. A variable
// Known reads and this table lacks fails TestVariablesDocumented.
var variableDocs = map[string]struct{ def, text string }{
	"ROLE":                         {"", "what this process does: `all`, `ingest` (Kafka into the store) or `delivery` (dispatch and the API)"},
	"ENV":                          {"", "environment name: the consumer groups' suffix; `production` tightens the checks (TLS to Kafka, auth required, a KEK file readable by the hub alone)"},
	"HTTP_ADDR":                    {"", "listen address of the API, console, /healthz, /readyz and /metrics"},
	"HTTP_LISTEN_ADDR":             {"", "Lerian's chart name of HTTP_ADDR; HTTP_ADDR wins when both are set"},
	"DATABASE_URL":                 {"", "`postgres://...` or `sqlite:///path/to/file.db` (SQLite for dev and single-node only; serve refuses it)"},
	"POSTGRES_DSN":                 {"", "Lerian's chart name of DATABASE_URL; DATABASE_URL wins when both are set"},
	"DATABASE_MAX_CONNS":           {"", "PostgreSQL connections of the process, at least 2 (16 for roles all and delivery, 8 for ingest; a `pool_max_conns` in the URL wins), divided into budgets: [operations.md](operations.md#operating-it)"},
	"POSTGRES_HOST":                {"", "the database's host: with the other POSTGRES_* variables it makes the database URL when neither DATABASE_URL nor POSTGRES_DSN is set (`postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=SSLMODE`, user and password URL-escaped); when one is, POSTGRES_* that differ from it are named in a warning at start. Read without the prefix too, as Lerian's chart sets them"},
	"POSTGRES_PORT":                {"", "the database's port (with POSTGRES_HOST)"},
	"POSTGRES_USER":                {"", "the database user (with POSTGRES_HOST); unset: libpq's default"},
	"POSTGRES_PASSWORD":            {"", "the database user's password (with POSTGRES_HOST and POSTGRES_USER)"},
	"POSTGRES_PASSWORD_FILE":       {"", "file holding POSTGRES_PASSWORD (also read without the prefix)"},
	"POSTGRES_DB":                  {"", "the database's name (with POSTGRES_HOST); unset: the user's name, as libpq does"},
	"POSTGRES_SSLMODE":             {"", "`disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full` (with POSTGRES_HOST); unset: libpq's `prefer`. ENV=production needs `require` or a `verify-*` unless ALLOW_INSECURE_DB_TLS"},
	"SWAGGER_ENABLED":              {"", "serve the API reference at `/swagger`, behind the API's authentication ([api.md](api.md#the-api-reference-in-a-browser))"},
	"ALLOW_INSECURE_DB_TLS":        {"", "accept, with ENV=production, a PostgreSQL URL whose `sslmode` is not `require`, `verify-ca` or `verify-full`"},
	"KAFKA_BROKERS":                {"", "Kafka brokers, `host:port,host:port`; required in serve for roles that ingest (dev: its embedded broker)"},
	"KAFKA_TOPICS_REGEX":           {"", "the topics the hub consumes (never `.commands` or `.dlq` topics)"},
	"KAFKA_GROUP":                  {"", "consumer group (default `streaming-hub.<ENV>`)"},
	"KAFKA_SESSION_TIMEOUT":        {"", "how long the group waits for a silent member before moving its partitions"},
	"KAFKA_INSTANCE_ID":            {"", "static group membership: a process restarted under the same id takes its partitions back at once, without a rebalance or the session timeout; distinct per replica (the chart uses the pod name); 1-249 of `a-z A-Z 0-9 . _ -`; empty: dynamic"},
	"DLQ_TOPICS_REGEX":             {"", "producers' dead-letter topics, kept for operators and never delivered"},
	"DLQ_GROUP":                    {"", "consumer group of the dead-letter topics (default `streaming-hub-dlq.<ENV>`)"},
	"QUARANTINE_TOPIC":             {"", "the hub's own dead-letter topic: every record ingest refuses is also produced there, with its origin and cause, before its offset is committed; set empty: off ([wire-contract.md](wire-contract.md#quarantine-on-kafka))"},
	"MAX_RECORD_BYTES":             {"", "largest record value accepted; larger records are rejected"},
	"INGEST_STALL_AFTER":           {"", "how long a partition may fail to persist before /readyz reports ingest failing"},
	"DEV_KAFKA_ADDR":               {"", "address of dev's embedded Kafka broker"},
	"KAFKA_TLS_ENABLED":            {"", "TLS to the brokers (certificates always verified)"},
	"KAFKA_CA_CERT":                {"", "PEM (or a file path) of the CAs to trust; empty: the system roots"},
	"KAFKA_TLS_CERT":               {"", "client certificate PEM (or path) for mutual TLS"},
	"KAFKA_TLS_KEY":                {"", "client certificate's private key PEM (or path)"},
	"KAFKA_TLS_SERVER_NAME":        {"", "name to verify instead of the broker's host"},
	"KAFKA_SASL_MECHANISM":         {"", "`PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`; empty: no SASL"},
	"KAFKA_SASL_USERNAME":          {"", "SASL username"},
	"KAFKA_SASL_PASSWORD":          {"", "SASL password"},
	"KAFKA_SCRAM_MECHANISM":        {"", "alias of KAFKA_SASL_MECHANISM"},
	"KAFKA_SCRAM_USERNAME":         {"", "alias of KAFKA_SASL_USERNAME"},
	"KAFKA_SCRAM_PASSWORD":         {"", "alias of KAFKA_SASL_PASSWORD"},
	"ALLOW_INSECURE_KAFKA":         {"", "accept plaintext Kafka with ENV=production, and SASL PLAIN without TLS"},
	"SIGNATURE_KEYS":               {"", "producers' envelope signing keys, `id=base64secret,...`; empty: signatures not verified"},
	"SIGNATURE_KEYS_FILE":          {"", "file holding SIGNATURE_KEYS"},
	"REQUIRE_SIGNATURES":           {"", "reject records without a valid producer signature (needs SIGNATURE_KEYS)"},
	"SIGNATURE_MAX_SKEW":           {"0", "how far a signed envelope's time may be from now; 0: not checked"},
	"DISPATCH_WORKERS":             {"", "dispatch workers per process: claim, prepare and send"},
	"DISPATCH_CLAIM_BATCH":         {"", "jobs per claim"},
	"DISPATCH_IDLE_INTERVAL_MS":    {"", "safety poll, in milliseconds: a claim across all subscriptions at least this often (new jobs wake dispatch at once, in process and by PostgreSQL LISTEN/NOTIFY; retries wake it when due)"},
	"DISPATCH_LEASE":               {"", "how long a delivering process's heartbeat stays fresh (renewed every fifth of it): its jobs are its own while it is, and another process takes them all over once it lapses (docs/delivery.md, crashes); a process that cannot renew stops its attempts before it lapses"},
	"DISPATCH_MAX_IN_FLIGHT":       {"", "attempts of a process waiting for their answers"},
	"DISPATCH_MAX_PER_DESTINATION": {"", "one destination's (scheme, host, port) share of DISPATCH_MAX_IN_FLIGHT"},
	"RESULT_FLUSH_SIZE":            {"", "delivery results written in one transaction at most; a batch is written once it holds this many"},
	"RESULT_FLUSH_INTERVAL":        {"", "longest a delivery result waits for its batch to be written (docs/architecture.md, the writer); a crash loses at most this window's results, whose jobs are sent again"},
	"STATS_FLUSH_INTERVAL":         {"", "how often the statistics a process gathers (event types seen, health rollups) are written, and at shutdown; a crash loses at most this interval of them, never an event, a job or an attempt (docs/operations.md, statistics)"},
	"POISON_THRESHOLD":             {"", "lease recoveries of a job before it is dead-lettered as poison"},
	"DELIVERY_TIMEOUT":             {"", "bound on one delivery attempt, connection to last byte"},
	"BREAKER_FAILURES":             {"", "consecutive failed attempts that open a destination's circuit breaker"},
	"BREAKER_OPEN":                 {"", "first open period of a breaker"},
	"BREAKER_MAX_OPEN":             {"", "the open period doubles after each failed probe up to this"},
	"AUTODISABLE_ENABLED":          {"", "disable subscriptions that keep failing (the kill switch)"},
	"AUTODISABLE_FAILURE_WINDOW":   {"", "failing without a success for this long disables a subscription"},
	"AUTODISABLE_FAILURE_SPREAD":   {"", "the failures must span at least this long"},
	"PULL_RATE":                    {"", "per-tenant rate of GET /v1/events, requests per second"},
	"PULL_BURST":                   {"", "per-tenant burst of GET /v1/events"},
	"IDEMPOTENCY_TTL":              {"", "how long a POST's answer is kept for its `Idempotency-Key`, at most `168h` ([lerian-platform.md](lerian-platform.md))"},
	"DLQ_RETENTION":                {"", "dead letters (and their attempt logs) are kept this long after dead-lettering, and records of the producers' DLQ topics after they arrive"},
	"INBOX_RETENTION":              {"", "events are kept this long after arrival, unless a job may still send them"},
	"JOB_RETENTION":                {"", "succeeded jobs and their attempts are kept this long"},
	"HOUSEKEEPING_INTERVAL":        {"", "how often a replica tries a housekeeping pass (retention, job counts)"},
	"HEALTH_WINDOW":                {"", "how far back subscription health reaches"},
	"PARTITION_INTERVAL":           {"", "PostgreSQL: how often a replica tries to make the weekly partitions ahead (one replica at a time; also at start)"},
	"PARTITION_FUTURE_WEEKS":       {"", "weeks of PostgreSQL partitions made ahead"},
	"MANIFEST_SOURCES":             {"", "producer manifest URLs (http(s)), comma-separated: the event catalog"},
	"MANIFEST_REFRESH_INTERVAL":    {"", "between manifest fetches"},
	"CONSOLE_FRAME_ANCESTORS":      {"", "CSP `frame-ancestors` of the console: `'none'` (also `X-Frame-Options: DENY`), or `'self'` and origins such as `https://app.example.com` allowed to embed it"},
	"CONSOLE_SESSION_MAX_AGE":      {"", "a console session's absolute lifetime, however often it is used (beside the fixed 12 h idle limit)"},
	"ADMIN_TOKEN":                  {"", "bearer token of the admin API; at least 16 characters in serve (dev generates and prints one)"},
	"ADMIN_TOKEN_FILE":             {"", "file holding ADMIN_TOKEN"},
	"KEK":                          {"", "key-encryption key, base64 of exactly 32 bytes (`openssl rand -base64 32`): seals stored secrets; required in serve (dev generates one); its file must be readable by the hub alone ([security.md](security.md#the-kek))"},
	"KEK_FILE":                     {"", "file holding KEK"},
	"KEK_PREVIOUS":                 {"", "earlier KEKs, comma-separated, still opened until `streaming-hub rewrap`: base64 of 32 to 64 bytes each (a longer key taken before can be rotated out)"},
	"KEK_PREVIOUS_FILE":            {"", "file holding KEK_PREVIOUS"},
	"ALLOW_PRIVATE_SINKS":          {"", "allow destinations on loopback, private, link-local, metadata or other special-purpose addresses ([security.md](security.md#destinations-and-the-ssrf-rule))"},
	"EGRESS_PROXY":                 {"", "`http://` or `https://` proxy (credentials allowed: `http://user:pass@proxy:3128`) every webhook attempt, probe and test event goes through by HTTP CONNECT to the address the hub checked; empty: direct ([security.md](security.md#fixed-egress))"},
	"EGRESS_PROXY_FILE":            {"", "file holding EGRESS_PROXY"},
	"AWS_HUB_PRINCIPAL_ARN":        {"", "the hub's own IAM role (or user) ARN, the principal tenants' roles trust for AWS destinations; shown by `GET /v1/aws/setup` and filled into the setup link ([aws.md](aws.md#settings))"},
	"AWS_SETUP_TEMPLATE_URL":       {"", "https URL of the CloudFormation template (`deploy/aws/streaming-hub-role.json` in an S3 bucket) the setup link launches; needs AWS_HUB_PRINCIPAL_ARN; empty: no setup link ([aws.md](aws.md#settings))"},
	"PLUGIN_AUTH_ENABLED":          {"false", "use Lerian's access manager for the API (also read without the prefix)"},
	"PLUGIN_AUTH_ADDRESS":          {"", "the access manager's http(s) URL (also read without the prefix)"},
	"AUTH_REQUIRED":                {"true with ENV=production", "refuse requests without credentials (also read without the prefix)"},
	"AUTH_JWT_VERIFY_CERT":         {"", "PEM of the keys verifying access tokens (also read without the prefix)"},
	"AUTH_JWT_VERIFY_CERT_PATH":    {"", "file holding AUTH_JWT_VERIFY_CERT (also read without the prefix)"},
	"AUTH_JWT_ISSUER":              {"", "required `iss` of access tokens (also read without the prefix)"},
	"AUTH_TIMEOUT":                 {"5s", "bound on one call to the access manager (also read without the prefix)"},
	"AUTH_CACHE_TTL":               {"0", "how long an authorization answer is cached, 0 (off) to 60s (also read without the prefix)"},
	"TRUSTED_PROXIES":              {"", "CIDRs of proxies whose X-Forwarded-For hops are skipped (also read without the prefix)"},
	"SHUTDOWN_TIMEOUT":             {"", "bound on a graceful stop"},
	"LOG_LEVEL":                    {"", "`debug`, `info`, `warn` or `error`"},
	"LOG_FORMAT":                   {"", "`json` or `text`"},

	// Single-tenant mode and topic drift (docs/operations.md).
	"MULTI_TENANT_ENABLED": {"true", "`false`: the hub serves one tenant, TENANT_ID (default `default`), created at start, and rejects records of any other `ce-tenantid` and API requests about any other tenant as `tenant_not_served` (also read without the prefix, as lib-commons reads it; [operations.md](operations.md#single-tenant-mode))"},
	"TENANT_ID":            {"", "the one tenant served; set, it makes the hub single-tenant (MULTI_TENANT_ENABLED may then not be `true`)"},
	"RECONCILER_ENABLED":   {"", "compare the topics on the cluster, those of the consumer group and those producers' manifests declare, and report each difference ([operations.md](operations.md#topic-drift))"},
	"RECONCILER_INTERVAL":  {"", "seconds between topic-drift checks (one replica at a time); a Go duration such as `5m` is accepted too"},
	// Read outside Load (otherNames).
	"SERVER":            {DefaultServer, "the CLI: the hub's URL"},
	"TOKEN":             {"", "the CLI: the admin token or a tenant API key"},
	"TENANT":            {"", "the CLI: the tenant acted on with the admin token"},
	"TEST_POSTGRES_URL": {"", "tests: the PostgreSQL database they use; unset: PostgreSQL tests skip"},
	"TEST_REDIS_URL":    {"", "tests and examples: the Redis they use"},
	"TEST_AMQP_URL":     {"", "tests: the RabbitMQ they publish to; unset: amqp://guest:guest@127.0.0.1:5672/ (the machine's own); they skip when nothing answers there"},
	"TEST_NATS_SERVER":  {"", "tests: the nats-server binary; unset: the first on PATH"},
	"TEST_NATS_LOG":     {"", "tests: set to see the nats-server's log"},
	"TRANSFORM_WORKER":  {"", "internal: set by the hub only on its own transform worker processes (docs/filters-and-transforms.md); never set it"},
	"CRASH_AT":          {"", "tests: in a binary built with the tag faults only, kill the process at a named step of the commit protocol (docs/architecture.md); ignored otherwise"},
}

// Variables is every variable the hub reads, by name, with its default
// (in serve and, when different, in dev) and description.
func Variables() []Variable {
	serve := reader{getenv: func(string) string { return "" }}
	loadInto(&serve, Serve)
	dev := reader{getenv: func(string) string { return "" }}
	loadInto(&dev, Dev)
	var out []Variable
	for _, n := range Known() {
		doc := variableDocs[n]
		v := Variable{Name: n, Default: serve.defaults[n], Description: doc.text, Chart: chartColumn(n)}
		if v.Default == "" {
			v.Default = doc.def
		}
		if d := dev.defaults[n]; d != serve.defaults[n] {
			v.DevDefault = d
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Markdown is docs/configuration.md: `go run ./internal/config/gen`
// writes it.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated by "go run ./internal/config/gen > docs/configuration.md" from
internal/config (Defaults and the readers of Load): do not edit by hand.
TestConfigurationDoc fails when this page and the code disagree. -->

Regenerate this page with:

    go run ./internal/config/gen > docs/configuration.md

Every variable the hub reads, all prefixed ` + "`" + Prefix + "`" + `. ` + "`streaming-hub serve`" + ` uses
the default column; ` + "`streaming-hub dev`" + ` the dev column where it differs (dev also
generates ADMIN_TOKEN and KEK and starts its embedded broker when
KAFKA_BROKERS is unset). A variable the hub does not read is warned about at
start, with the closest known name. Secrets (KEK, KEK_PREVIOUS, ADMIN_TOKEN,
SIGNATURE_KEYS, EGRESS_PROXY, POSTGRES_PASSWORD) may instead be read from the file their ` + "`_FILE`" + ` variable names.
The OpenTelemetry exporter reads the standard ` + "`OTEL_*`" + ` variables (service name
default ` + "`" + DefaultOTELServiceName + "`" + `, protocol default ` + "`" + DefaultOTLPProtocol + "`" + `).

Bad values stop the start (exit 2) with one line per bad variable, all of
them at once, each naming the variable, e.g. ` + "`streaming-hub: STREAMING_HUB_DISPATCH_WORKERS: must be a positive integer, got \"lots\"`" + `.
` + "`STREAMING_HUB_HTTP_ADDR`" + ` is checked and taken before anything else starts; a
database that cannot be reached is reported against
` + "`STREAMING_HUB_DATABASE_URL`" + `, without its password. Durations are Go durations
(` + "`30s`, `5m`, `120h`" + `). TLS and SASL to Kafka, the names Lerian's chart uses
(the "Lerian's chart" column: the name the chart sets, when it is another,
and the hub's own name wins when both are set) and what ` + "`ENV=production`" + ` refuses are in
[operations.md](operations.md#production).

| Variable | Default | Dev | Lerian's chart | Description |
|---|---|---|---|---|
`)
	for _, v := range Variables() {
		fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s | %s |\n", Prefix, v.Name, cell(v.Default), cell(v.DevDefault), chartCell(v.Chart), v.Description)
	}
	return b.String()
}

// cell writes a value as a table cell: code, or empty.
func cell(v string) string {
	if v == "" {
		return ""
	}
	if strings.Contains(v, " ") && !strings.ContainsAny(v, `\^$`) {
		return v
	}
	return "`" + strings.ReplaceAll(v, "|", `\|`) + "`"
}
