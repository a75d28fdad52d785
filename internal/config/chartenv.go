package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// chartNames are the names Lerian's chart (LerianStudio/helm,
// charts/streaming-hub) sets for some of the hub's own variables, with the
// same meaning (docs/operations.md, "Deploying with Lerian's chart"). Either
// name may be set; when both are, the hub's own name wins and Warnings
// says so in one line naming both.
var chartNames = map[string]string{
	"HTTP_ADDR":              "HTTP_LISTEN_ADDR",
	"DATABASE_URL":           "POSTGRES_DSN",
	"DATABASE_MAX_CONNS":     "POSTGRES_MAX_OPEN_CONNS",
	"PARTITION_INTERVAL":     "PARTITION_CRON_INTERVAL",
	"PARTITION_FUTURE_WEEKS": "PARTITION_FUTURE_BUFFER_WEEKS",
}

// ChartName is the name Lerian's chart uses for the hub's variable name,
// "" when it uses none other.
func ChartName(name string) string { return chartNames[name] }

// chartRaw reads name, or its chart name when name is unset. Both set to
// different values: name wins, with a warning that shows neither value
// (one of them may hold a password).
func (r *reader) chartRaw(name, v string) (string, bool) {
	alias := chartNames[name]
	r.read[alias] = true
	a := strings.TrimSpace(r.getenv(Prefix + alias))
	switch {
	case a == "" || a == v:
	case v != "":
		r.warn("%s%s and %s%s are both set, to different values: %s%s is used", Prefix, name, Prefix, alias, Prefix, name)
	default:
		if r.from == nil {
			r.from = make(map[string]string)
		}
		r.from[name] = alias
		v = a
	}
	return v, v != ""
}

// warn records a warning about the configuration: it does not stop the
// start; serve logs it (Warnings).
func (r *reader) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// Warnings are the lines serve prints at start about a configuration that
// loads but says something twice (a variable and its chart name both set,
// to different values). Nothing when Load would fail.
func Warnings(mode Mode, getenv func(string) string) []string {
	r := reader{getenv: getenv}
	loadInto(&r, mode)
	if len(r.errs) > 0 {
		return nil
	}
	return r.warnings
}

// chartSettings reads the variables Lerian's chart sets that have no other
// name in the hub: the pool's kept connections and lifetime, partition
// retention, the prune and reap intervals of the producers' DLQ records and
// the idempotency keys, the /metrics switch and the drain before a stop.
func (r *reader) chartSettings(c *Config) {
	r.atLeast("POSTGRES_MAX_IDLE_CONNS", 0, &c.DatabaseMinConns)
	if c.DatabaseMinConns > c.DatabaseMaxConns && !r.bad["POSTGRES_MAX_IDLE_CONNS"] && !r.bad["DATABASE_MAX_CONNS"] {
		r.fail("POSTGRES_MAX_IDLE_CONNS", "must be at most the pool size (%sDATABASE_MAX_CONNS or %sPOSTGRES_MAX_OPEN_CONNS, %d), got %d",
			Prefix, Prefix, c.DatabaseMaxConns, c.DatabaseMinConns)
	}
	r.duration("POSTGRES_CONN_MAX_LIFETIME", &c.DatabaseConnMaxLifetime)

	hk := &c.Housekeeping
	r.boolean("PARTITION_RETENTION_ENABLED", &hk.PartitionRetention)
	r.zeroOrDuration("PARTITION_RETENTION_HORIZON", &hk.PartitionRetentionHorizon)
	r.duration("DLQ_PRUNE_INTERVAL", &hk.DLQPruneInterval)
	r.duration("IDEMPOTENCY_REAP_INTERVAL", &hk.IdempotencyReapInterval)

	r.boolean("METRICS_ENABLED", &c.MetricsEnabled)
	r.zeroOrDuration("PRE_STOP_DRAIN_TIMEOUT", &c.PreStopDrain)
}

// zeroOrDuration reads a Go duration that may be 0 (written "0"): off, or
// "the default" as the variable's description says.
func (r *reader) zeroOrDuration(name string, v *time.Duration) {
	if *v == 0 {
		r.note(name, "0")
	} else {
		r.note(name, FormatDuration(*v))
	}
	s, ok := r.raw(name)
	if !ok {
		return
	}
	if n, err := strconv.Atoi(s); err == nil && n == 0 {
		*v = 0
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		r.fail(name, "must be 0 or a positive Go duration such as 30s, 5m or 120h, got %q", s)
		return
	}
	*v = d
}

// chartSetsAsIs are the variables Lerian's chart sets under the hub's own
// name (its ConfigMap, the Deployment's env and its Secret): the
// configuration page marks them. The chart's other names are chartNames.
var chartSetsAsIs = map[string]bool{
	"ROLE": true, "ENV": true, "LOG_LEVEL": true, "SHUTDOWN_TIMEOUT": true,
	"KAFKA_BROKERS": true, "KAFKA_TLS_ENABLED": true, "ALLOW_INSECURE_KAFKA": true, "ALLOW_INSECURE_DB_TLS": true,
	"KEK_SOURCE": true, "KEK_REF": true, "DLQ_RETENTION": true, "IDEMPOTENCY_TTL": true,
	"POSTGRES_MAX_IDLE_CONNS": true, "POSTGRES_CONN_MAX_LIFETIME": true,
	"PARTITION_RETENTION_ENABLED": true, "PARTITION_RETENTION_HORIZON": true,
	"DLQ_PRUNE_INTERVAL": true, "IDEMPOTENCY_REAP_INTERVAL": true,
	"METRICS_ENABLED": true, "PRE_STOP_DRAIN_TIMEOUT": true,
	"PLUGIN_AUTH_ENABLED": true, "PLUGIN_AUTH_ADDRESS": true,
	// The app's full reference, which the chart's ConfigMap renders: the
	// database by parts (unprefixed; the password in its Secret) and the
	// API reference's switch.
	"POSTGRES_HOST": true, "POSTGRES_PORT": true, "POSTGRES_USER": true, "POSTGRES_PASSWORD": true,
	"POSTGRES_DB": true, "POSTGRES_SSLMODE": true, "SWAGGER_ENABLED": true,
}

// chartColumn is what the configuration page shows for name in its
// column of Lerian's chart: the chart's other name, "same" when the chart
// sets this very name, "" when it sets none.
func chartColumn(name string) string {
	switch {
	case chartNames[name] != "":
		return Prefix + chartNames[name]
	case chartSetsAsIs[name]:
		return "same"
	}
	for own, alias := range chartNames {
		if alias == name {
			return "same (for " + Prefix + own + ")"
		}
	}
	return ""
}

// chartVariableDocs describe the variables of Lerian's chart; init adds
// them to variableDocs.
var chartVariableDocs = map[string]struct{ def, text string }{
	"POSTGRES_MAX_OPEN_CONNS":       {"", "Lerian's chart name of DATABASE_MAX_CONNS (the pool size); DATABASE_MAX_CONNS wins when both are set"},
	"POSTGRES_MAX_IDLE_CONNS":       {"", "PostgreSQL connections the pool keeps open, idle or not (pgxpool's `MinConns`), at most the pool size; a `pool_min_conns` in the URL wins"},
	"POSTGRES_CONN_MAX_LIFETIME":    {"", "a PostgreSQL connection is closed and replaced this long after it opened (pgxpool's `MaxConnLifetime`); a `pool_max_conn_lifetime` in the URL wins"},
	"PARTITION_CRON_INTERVAL":       {"", "Lerian's chart name of PARTITION_INTERVAL; PARTITION_INTERVAL wins when both are set"},
	"PARTITION_FUTURE_BUFFER_WEEKS": {"", "Lerian's chart name of PARTITION_FUTURE_WEEKS; PARTITION_FUTURE_WEEKS wins when both are set"},
	"PARTITION_RETENTION_ENABLED":   {"", "PostgreSQL: retention drops weeks past their bounds as whole partitions (the hub's behaviour before this variable); `false` drops no partition and deletes rows past retention in batches"},
	"PARTITION_RETENTION_HORIZON":   {"", "with PARTITION_RETENTION_ENABLED on PostgreSQL, how long events are kept before their week may be dropped; `0`: INBOX_RETENTION"},
	"DLQ_PRUNE_INTERVAL":            {"", "how often housekeeping deletes the producers' DLQ records past DLQ_RETENTION (at most once a HOUSEKEEPING_INTERVAL)"},
	"IDEMPOTENCY_REAP_INTERVAL":     {"", "how often housekeeping deletes the idempotency keys past IDEMPOTENCY_TTL (at most once a HOUSEKEEPING_INTERVAL)"},
	"METRICS_ENABLED":               {"", "`false`: no `/metrics` route (404)"},
	"PRE_STOP_DRAIN_TIMEOUT":        {"", "on SIGTERM `/readyz` answers 503 at once and the process keeps serving, API and delivery, this long before its graceful stop (SHUTDOWN_TIMEOUT) begins; `0`: at once"},
	"KEK_SOURCE":                    {"", "where the KEK comes from: `env` (the variable KEK_REF names), `file` (the file KEK_REF names) or `secretsmanager` (AWS Secrets Manager's secret KEK_REF names, with the AWS SDK's default credentials and region): [lerian-platform.md](lerian-platform.md#the-kek-by-reference)"},
	"KEK_REF":                       {"`STREAMING_HUB_KEK` with `env`", "the KEK's variable (`env`; Lerian's chart names its `…_DEV_KEK`), file path (`file`) or secret name or ARN (`secretsmanager`)"},
}

func init() {
	for n, d := range chartVariableDocs {
		variableDocs[n] = d
	}
}

// chartCell writes Variable.Chart as a table cell.
func chartCell(v string) string {
	if strings.HasPrefix(v, Prefix) {
		return "`" + v + "`"
	}
	return v
}
