// Package config reads the hub's configuration from STREAMING_HUB_*
// environment variables. A bad value stops the start with one line that
// names the variable.
package config

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every variable name.
const Prefix = "STREAMING_HUB_"

// Mode is how the binary runs: dev embeds everything, serve uses external
// Kafka and PostgreSQL and generates nothing.
type Mode string

const (
	Dev   Mode = "dev"
	Serve Mode = "serve"
)

// Role selects what a process does; every role serves the HTTP API.
type Role string

const (
	RoleAll      Role = "all"
	RoleIngest   Role = "ingest"
	RoleDelivery Role = "delivery"
)

// Ingests reports whether the role runs the Kafka consumer.
func (r Role) Ingests() bool { return r == RoleAll || r == RoleIngest }

// Delivers reports whether the role runs the dispatcher.
func (r Role) Delivers() bool { return r == RoleAll || r == RoleDelivery }

// Config is the whole configuration. Names follow the variables; Defaults
// holds every default value.
type Config struct {
	Mode Mode
	Role Role
	Env  string

	HTTPAddr    string
	DatabaseURL string
	// DatabaseMaxConns (DATABASE_MAX_CONNS) is the PostgreSQL pool size; a
	// pool_max_conns in DATABASE_URL wins. store.SplitPool divides it.
	DatabaseMaxConns int
	// DatabaseMinConns (POSTGRES_MAX_IDLE_CONNS, the chart's name) is how
	// many PostgreSQL connections the pool keeps open, idle or not: pgxpool's
	// MinConns. DatabaseConnMaxLifetime (POSTGRES_CONN_MAX_LIFETIME) closes
	// a connection this long after it was opened: pgxpool's MaxConnLifetime.
	// A pool_min_conns or pool_max_conn_lifetime in DATABASE_URL wins.
	DatabaseMinConns        int
	DatabaseConnMaxLifetime time.Duration

	DevKafkaAddr string
	Ingest       Ingest

	Dispatch        Dispatch
	DeliveryTimeout time.Duration // one attempt, and one verification probe
	Breaker         Breaker
	Autodisable     Autodisable

	Pull         Pull
	Housekeeping Housekeeping
	Manifests    Manifests
	Console      Console
	// AuthFailureLimit is how many failed authentications a client address
	// or a key id may make in a minute before the API answers 429.
	AuthFailureLimit int
	// IdempotencyTTL (IDEMPOTENCY_TTL) is how long the answer of a POST
	// made with an Idempotency-Key is kept and replayed
	// (docs/lerian-platform.md).
	IdempotencyTTL time.Duration

	// Tenancy is single-tenant mode (MULTI_TENANT_ENABLED, TENANT_ID);
	// Reconciler the topic-drift check (RECONCILER_*).
	Tenancy    Tenancy
	Reconciler Reconciler

	// Auth is Lerian's access manager (docs/lerian-platform.md).
	Auth Auth

	// Kafka is how the hub (and `streaming-hub produce`) secures its
	// connections to the brokers: TLS and SASL (docs/security.md).
	Kafka Kafka
	// AllowInsecureDBTLS (ALLOW_INSECURE_DB_TLS) lets serve with
	// ENV=production use a PostgreSQL URL without sslmode=require,
	// verify-ca or verify-full.
	AllowInsecureDBTLS bool

	AdminToken   string
	KEK          []byte   // nil in dev until generated
	PreviousKEKs [][]byte // older keys, still accepted for decryption
	// KEKSource (KEK_SOURCE, KEK_REF) says where KEK comes from; with
	// secretsmanager, KEK stays nil until the app fetches it.
	KEKSource         KEKSource
	AllowPrivateSinks bool
	// AWS is what tenants' roles trust and the setup link's template
	// (AWS_HUB_PRINCIPAL_ARN, AWS_SETUP_TEMPLATE_URL; docs/aws.md).
	AWS AWS
	// EgressProxy (EGRESS_PROXY) is the http(s) proxy webhook attempts,
	// probes and test events go through (HTTP CONNECT); nil: direct.
	EgressProxy *url.URL

	ShutdownTimeout time.Duration
	// PreStopDrain (PRE_STOP_DRAIN_TIMEOUT): on SIGTERM /readyz answers 503
	// at once and the process keeps serving, API and delivery, this long
	// before its graceful stop begins; 0: it begins at once.
	PreStopDrain time.Duration
	// MetricsEnabled (METRICS_ENABLED): false serves no /metrics route.
	MetricsEnabled bool
	// SwaggerEnabled (SWAGGER_ENABLED) serves the API reference at
	// /swagger, behind the API's authentication (docs/api.md).
	SwaggerEnabled bool
	LogLevel       slog.Level
	LogFormat      string // json | text
}

// Error is a configuration error: one line naming the variable.
type Error struct {
	Var, Problem string
	// Bare: Var was set without the prefix (lib-auth's names,
	// docs/lerian-platform.md).
	Bare bool
}

func (e *Error) Error() string {
	if e.Bare {
		return e.Var + ": " + e.Problem
	}
	return Prefix + e.Var + ": " + e.Problem
}

// Errors are every problem of one configuration, one line each, so an
// operator fixes them in one go instead of one start per variable.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Load reads the configuration for mode from getenv (os.Getenv in
// production, a map in tests): Defaults(mode), with what the variables set.
func Load(mode Mode, getenv func(string) string) (Config, error) {
	r := reader{getenv: getenv}
	c := loadInto(&r, mode)
	if len(r.errs) > 0 {
		return Config{}, r.errs
	}
	return c, nil
}

// loadInto reads every variable through r, which keeps the problems.
func loadInto(r *reader, mode Mode) Config {
	c := Defaults(mode)
	c.Role = Role(r.oneOf("ROLE", string(c.Role), "all", "ingest", "delivery"))
	r.str("ENV", &c.Env)
	r.str("HTTP_ADDR", &c.HTTPAddr)
	if err := checkListenAddr(c.HTTPAddr); err != nil {
		r.fail("HTTP_ADDR", "%s", err)
	}
	r.databaseURL(&c.DatabaseURL)
	c.DatabaseMaxConns = MaxConnsFor(c.Role)
	r.atLeast("DATABASE_MAX_CONNS", 2, &c.DatabaseMaxConns)
	if n, ok := urlPoolSize(c.DatabaseURL); ok && n < 2 {
		r.fail("DATABASE_URL", "pool_max_conns must be at least 2")
	}

	k := &c.Ingest
	r.list("KAFKA_BROKERS", &k.Brokers)
	r.str("KAFKA_TOPICS_REGEX", &k.TopicsRegex)
	if _, err := regexp.Compile(k.TopicsRegex); err != nil {
		r.fail("KAFKA_TOPICS_REGEX", "not a valid regular expression: %s", err)
	}
	k.Group = groupFor(c.Env)
	r.str("KAFKA_GROUP", &k.Group)
	r.duration("KAFKA_SESSION_TIMEOUT", &k.SessionTimeout)
	r.str("DLQ_TOPICS_REGEX", &k.DLQTopicsRegex)
	if _, err := regexp.Compile(k.DLQTopicsRegex); err != nil {
		r.fail("DLQ_TOPICS_REGEX", "not a valid regular expression: %s", err)
	}
	k.DLQGroup = dlqGroupFor(c.Env)
	r.str("DLQ_GROUP", &k.DLQGroup)
	r.quarantineTopic(&k.QuarantineTopic)
	r.str("KAFKA_INSTANCE_ID", &k.InstanceID)
	if err := checkInstanceID(k.InstanceID); err != nil {
		r.fail("KAFKA_INSTANCE_ID", "%s", err)
	}
	r.positiveInt("MAX_RECORD_BYTES", &k.MaxRecordBytes)
	r.duration("INGEST_STALL_AFTER", &k.StallAfter)
	r.signatures(&k.Signatures)
	r.str("DEV_KAFKA_ADDR", &c.DevKafkaAddr)
	r.kafka(&c.Kafka)
	r.boolean("ALLOW_INSECURE_DB_TLS", &c.AllowInsecureDBTLS)

	d := &c.Dispatch
	r.positiveInt("DISPATCH_WORKERS", &d.Workers)
	r.positiveInt("DISPATCH_CLAIM_BATCH", &d.ClaimBatch)
	r.milliseconds("DISPATCH_IDLE_INTERVAL_MS", &d.IdleInterval)
	r.duration("DISPATCH_LEASE", &d.Lease)
	r.positiveInt("POISON_THRESHOLD", &d.PoisonThreshold)
	r.positiveInt("DISPATCH_MAX_IN_FLIGHT", &d.MaxInFlight)
	r.positiveInt("DISPATCH_MAX_PER_DESTINATION", &d.MaxPerDestination)
	r.positiveInt("RESULT_FLUSH_SIZE", &d.FlushSize)
	r.duration("RESULT_FLUSH_INTERVAL", &d.FlushInterval)
	r.duration("STATS_FLUSH_INTERVAL", &d.StatsFlushInterval)
	r.duration("DELIVERY_TIMEOUT", &c.DeliveryTimeout)

	r.positiveInt("BREAKER_FAILURES", &c.Breaker.Failures)
	r.duration("BREAKER_OPEN", &c.Breaker.OpenFor)
	r.duration("BREAKER_MAX_OPEN", &c.Breaker.MaxOpen)

	r.boolean("AUTODISABLE_ENABLED", &c.Autodisable.Enabled)
	r.duration("AUTODISABLE_FAILURE_WINDOW", &c.Autodisable.FailureWindow)
	r.duration("AUTODISABLE_FAILURE_SPREAD", &c.Autodisable.FailureSpread)

	r.positiveFloat("PULL_RATE", &c.Pull.Rate)
	r.positiveInt("PULL_BURST", &c.Pull.Burst)

	hk := &c.Housekeeping
	r.duration("DLQ_RETENTION", &hk.DLQRetention)
	r.duration("INBOX_RETENTION", &hk.InboxRetention)
	r.duration("JOB_RETENTION", &hk.JobRetention)
	r.duration("HOUSEKEEPING_INTERVAL", &hk.Interval)
	r.duration("HEALTH_WINDOW", &hk.HealthWindow)
	r.duration("PARTITION_INTERVAL", &hk.PartitionInterval)
	r.positiveInt("PARTITION_FUTURE_WEEKS", &hk.PartitionFutureWeeks)
	r.chartSettings(&c)
	r.list("MANIFEST_SOURCES", &c.Manifests.Sources)
	for _, u := range c.Manifests.Sources {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			r.fail("MANIFEST_SOURCES", "%q is not an http(s) URL", u)
		}
	}
	r.duration("MANIFEST_REFRESH_INTERVAL", &c.Manifests.RefreshInterval)
	r.str("CONSOLE_FRAME_ANCESTORS", &c.Console.FrameAncestors)
	if err := CheckFrameAncestors(c.Console.FrameAncestors); err != nil {
		r.fail("CONSOLE_FRAME_ANCESTORS", "%s", err)
	}
	r.duration("CONSOLE_SESSION_MAX_AGE", &c.Console.SessionMaxAge)
	r.idempotencyTTL(&c.IdempotencyTTL)
	r.tenancy(&c.Tenancy)
	r.reconciler(&c.Reconciler)

	r.str("ADMIN_TOKEN", &c.AdminToken)
	c.KEK, c.KEKSource = r.kekByRef()
	var previous []string
	r.list("KEK_PREVIOUS", &previous)
	for _, k := range previous {
		c.PreviousKEKs = append(c.PreviousKEKs, r.decodeKey("KEK_PREVIOUS", k, KEKSize, MaxPreviousKEKSize))
	}
	r.boolean("ALLOW_PRIVATE_SINKS", &c.AllowPrivateSinks)
	r.boolean("SWAGGER_ENABLED", &c.SwaggerEnabled)
	c.EgressProxy = r.proxyURL("EGRESS_PROXY", c.EgressProxy)
	r.aws(&c.AWS)
	r.auth(&c)

	r.duration("SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	r.level("LOG_LEVEL", &c.LogLevel)
	c.LogFormat = r.oneOf("LOG_FORMAT", c.LogFormat, "json", "text")
	c.check(r)
	return c
}

// check enforces what a mode requires. serve fails closed: no generated
// secrets, no embedded infrastructure. A variable already reported bad is
// not reported again.
func (c Config) check(r *reader) {
	r.checkKEKFiles(c.Env)
	switch {
	case r.bad["DATABASE_URL"]:
	case c.DatabaseURL == "":
		r.fail("DATABASE_URL", "required (postgres://... or, in dev, sqlite:///path/to/file.db; or POSTGRES_HOST and the other POSTGRES_* variables)")
	case !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") && !strings.HasPrefix(c.DatabaseURL, "sqlite://"):
		r.fail("DATABASE_URL", "must start with postgres:// or sqlite://")
	case c.Mode == Serve && strings.HasPrefix(c.DatabaseURL, "sqlite://"):
		r.fail("DATABASE_URL", "serve needs PostgreSQL; SQLite is for `streaming-hub dev` (one process)")
	}
	c.checkAuth(r)
	if c.Mode != Serve {
		return
	}
	if c.Role.Ingests() && len(c.Ingest.Brokers) == 0 && !r.bad["KAFKA_BROKERS"] {
		r.fail("KAFKA_BROKERS", "required in serve mode for role %s (host:port,host:port)", c.Role)
	}
	if c.KEK == nil && !r.bad["KEK"] && !r.bad["KEK_REF"] && !r.bad["KEK_SOURCE"] && !c.KEKSource.Fetched() {
		r.fail("KEK", "required in serve mode: base64 of exactly 32 random bytes (the hub never sends unsigned webhooks)")
	}
	switch {
	case r.bad["ADMIN_TOKEN"]:
	case c.AdminToken == "" && c.Auth.Enabled:
		// Operators come with JWTs the access manager authorizes.
	case c.AdminToken == "":
		r.fail("ADMIN_TOKEN", "required in serve mode (or PLUGIN_AUTH_ENABLED=true: operators then use access-manager JWTs)")
	case len(c.AdminToken) < 16:
		r.fail("ADMIN_TOKEN", "must be at least 16 characters")
	}
	c.checkProduction(r)
}

// checkListenAddr checks a listen address before anything starts: host:port
// with a numeric port (the host may be empty: every interface).
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port or :port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be a number from 0 to 65535, got %q", port)
	}
	return nil
}

// checkInstanceID applies Kafka's rule for a group.instance.id (the rule
// of topic names): 1 to 249 characters of ASCII letters, digits, '.', '_'
// and '-', and neither "." nor "..". Empty is unset: no static membership.
func checkInstanceID(id string) error {
	const maxLen = 249
	switch {
	case id == "":
		return nil
	case len(id) > maxLen:
		return fmt.Errorf("must be at most %d characters (Kafka's group.instance.id), got %d", maxLen, len(id))
	case id == "." || id == "..":
		return fmt.Errorf("must not be %q (Kafka's group.instance.id)", id)
	case !instanceIDChars.MatchString(id):
		return fmt.Errorf("must be ASCII letters, digits, '.', '_' and '-' only (Kafka's group.instance.id), got %q", id)
	}
	return nil
}

var instanceIDChars = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// SQLitePath returns the file path of a sqlite:// URL.
func SQLitePath(url string) (string, bool) {
	path, ok := strings.CutPrefix(url, "sqlite://")
	return path, ok && path != ""
}

type reader struct {
	getenv func(string) string
	// lookup, when set, also tells a variable set empty from one unset
	// (LoadLookup).
	lookup func(string) (string, bool)
	errs   Errors            // every problem, one per variable
	bad    map[string]bool   // variables already reported
	read   map[string]bool   // every name read: the known variables
	from   map[string]string // variable -> the alias its value came from
	bare   map[string]bool   // variables whose value came without the prefix
	// defaults is each variable's value before it was read (its default),
	// as the typed readers below saw it: what docs/configuration.md shows.
	defaults map[string]string
	// warnings are what loads but deserves a line at start (Warnings).
	warnings []string
	// fromParts: the database URL was made of the POSTGRES_* parts.
	fromParts bool
	// files are the paths values were read from (<name>_FILE), by name.
	files map[string]string
	// looseKEKs are KEK files readable by their group or others: a
	// warning at start, refused with ENV=production (checkKEKFiles).
	looseKEKs []looseFile
}

// note records v as the default of name, the first time name is read.
func (r *reader) note(name, v string) {
	if r.defaults == nil {
		r.defaults = make(map[string]string)
	}
	if _, ok := r.defaults[name]; !ok {
		r.defaults[name] = v
	}
}

// aliases are the names Lerian's chart uses for some of the hub's
// variables (docs/security.md): either name may be set; both set to
// different values is an error naming both.
var aliases = map[string]string{
	"KAFKA_SASL_MECHANISM": "KAFKA_SCRAM_MECHANISM",
	"KAFKA_SASL_USERNAME":  "KAFKA_SCRAM_USERNAME",
	"KAFKA_SASL_PASSWORD":  "KAFKA_SCRAM_PASSWORD",
}

func (r *reader) raw(name string) (string, bool) {
	if r.read == nil {
		r.read = make(map[string]bool)
	}
	r.read[name] = true
	if secretFiles[name] {
		if v, set := r.fromFile(name); set {
			return v, v != ""
		}
	}
	v := strings.TrimSpace(r.getenv(Prefix + name))
	if _, ok := chartNames[name]; ok {
		return r.chartRaw(name, v)
	}
	alias, ok := aliases[name]
	if !ok {
		return v, v != ""
	}
	r.read[alias] = true
	a := strings.TrimSpace(r.getenv(Prefix + alias))
	switch {
	case a == "" || a == v:
	case v != "":
		// Neither value is echoed: one of these is a password.
		r.fail(name, "and %s%s are both set, to different values: set only one of them", Prefix, alias)
		return "", false
	default:
		if r.from == nil {
			r.from = make(map[string]string)
		}
		r.from[name] = alias
		v = a
	}
	return v, v != ""
}

// fail reports a problem of the variable name, under the name the operator
// set: the alias when the value came from one.
func (r *reader) fail(name, format string, args ...any) {
	if r.bad == nil {
		r.bad = make(map[string]bool)
	}
	if !r.bad[name] {
		r.bad[name] = true
		shown := name
		if a := r.from[name]; a != "" {
			shown = a
		}
		r.errs = append(r.errs, &Error{Var: shown, Problem: fmt.Sprintf(format, args...), Bare: r.bare[name]})
	}
}

// The readers below leave *v (its default) alone when the variable is
// unset or bad.

func (r *reader) str(name string, v *string) {
	r.note(name, *v)
	if s, ok := r.raw(name); ok {
		*v = s
	}
}

func (r *reader) list(name string, v *[]string) {
	r.note(name, strings.Join(*v, ","))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	*v = out
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	r.note(name, def)
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	return def
}

func (r *reader) positiveInt(name string, v *int) {
	r.note(name, strconv.Itoa(*v))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		r.fail(name, "must be a positive integer, got %q", s)
		return
	}
	*v = n
}

func (r *reader) atLeast(name string, least int, v *int) {
	r.note(name, strconv.Itoa(*v))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		r.fail(name, "must be an integer of at least %d, got %q", least, s)
		return
	}
	*v = n
}

// urlPoolSize reads the pool_max_conns of a PostgreSQL URL, if it has one
// (a value that is not a number is pgx's to report).
func urlPoolSize(raw string) (int, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return 0, false
	}
	n, err := strconv.Atoi(u.Query().Get("pool_max_conns"))
	return n, err == nil
}

func (r *reader) milliseconds(name string, v *time.Duration) {
	n := int(*v / time.Millisecond)
	r.positiveInt(name, &n)
	*v = time.Duration(n) * time.Millisecond
}

func (r *reader) positiveFloat(name string, v *float64) {
	r.note(name, strconv.FormatFloat(*v, 'g', -1, 64))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		r.fail(name, "must be a positive number, got %q", s)
		return
	}
	*v = f
}

func (r *reader) duration(name string, v *time.Duration) {
	r.note(name, FormatDuration(*v))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		r.fail(name, "must be a positive Go duration such as 30s, 5m or 120h, got %q", s)
		return
	}
	*v = d
}

func (r *reader) boolean(name string, v *bool) {
	r.note(name, strconv.FormatBool(*v))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		r.fail(name, "must be true or false, got %q", s)
		return
	}
	*v = b
}

func (r *reader) level(name string, v *slog.Level) {
	r.note(name, strings.ToLower(v.String()))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		r.fail(name, "must be debug, info, warn or error, got %q", s)
		return
	}
	*v = l
}

func (r *reader) key(name string) []byte {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	return r.decodeKey(name, v, KEKSize, KEKSize)
}

// decodeKey decodes a base64 key of least to most bytes; the value itself
// is never echoed in the error, which names the file it came from, if any.
func (r *reader) decodeKey(name, v string, least, most int) []byte {
	b, err := decodeKey(v, least, most)
	if err != nil {
		if path := r.files[name]; path != "" {
			r.fail(name, "the file %q: %s", path, err)
		} else {
			r.fail(name, "%s", err)
		}
		return nil
	}
	return b
}

// Keys is what streaming-hub rewrap needs: the database and the KEKs.
type Keys struct {
	DatabaseURL  string
	KEK          []byte
	PreviousKEKs [][]byte
	// KEKSource: with secretsmanager, KEK is nil until fetched.
	KEKSource KEKSource
}

// LoadKeys reads STREAMING_HUB_DATABASE_URL, STREAMING_HUB_KEK and
// STREAMING_HUB_KEK_PREVIOUS (or their _FILE), all problems at once.
func LoadKeys(getenv func(string) string) (Keys, error) {
	r := reader{getenv: getenv}
	var k Keys
	r.str("DATABASE_URL", &k.DatabaseURL)
	k.KEK, k.KEKSource = r.kekByRef()
	var previous []string
	r.list("KEK_PREVIOUS", &previous)
	for _, p := range previous {
		k.PreviousKEKs = append(k.PreviousKEKs, r.decodeKey("KEK_PREVIOUS", p, KEKSize, MaxPreviousKEKSize))
	}
	var environment string
	r.str("ENV", &environment)
	r.checkKEKFiles(environment)
	if k.DatabaseURL == "" && !r.bad["DATABASE_URL"] {
		r.fail("DATABASE_URL", "required (postgres://... or sqlite:///path/to/file.db)")
	}
	if k.KEK == nil && !r.bad["KEK"] && !r.bad["KEK_REF"] && !r.bad["KEK_SOURCE"] && !k.KEKSource.Fetched() {
		r.fail("KEK", "required: the key to seal every secret under")
	}
	if len(r.errs) > 0 {
		return Keys{}, r.errs
	}
	return k, nil
}

// FormatDuration writes d as the variables are written: 30s, 5m, 120h,
// 1h30m (time.Duration's String without its zero units).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// proxyURL reads an http(s) proxy URL: a scheme, a host and nothing but
// an optional userinfo and "/". Its errors never echo the value, which may
// hold a password.
func (r *reader) proxyURL(name string, def *url.URL) *url.URL {
	r.note(name, "")
	s, ok := r.raw(name)
	if !ok {
		return def
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		r.fail(name, "must be an http:// or https:// proxy URL (http://user:pass@host:port)")
		return def
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			r.fail(name, "bad port")
			return def
		}
	}
	return u
}
