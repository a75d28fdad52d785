// Package config reads the hub's configuration from STREAMING_HUB_*
// environment variables. A bad value stops the start with one line that
// names the variable.
package config

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
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

// DefaultHTTPAddr is where the API listens unless STREAMING_HUB_HTTP_ADDR
// says otherwise: every interface in serve, loopback only in dev, which
// allows private sinks and prints its admin token (SPEC section 14).
func DefaultHTTPAddr(mode Mode) string {
	if mode == Dev {
		return "127.0.0.1:8080"
	}
	return ":8080"
}

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

// Config is the whole configuration. Names follow the variables.
type Config struct {
	Mode Mode
	Role Role
	Env  string

	HTTPAddr    string
	DatabaseURL string

	KafkaBrokers     []string
	KafkaTopicsRegex string
	KafkaGroup       string
	KafkaSession     time.Duration
	MaxRecordBytes   int
	DevKafkaAddr     string

	DispatchWorkers      int
	DispatchClaimBatch   int
	DispatchIdleInterval time.Duration
	DispatchLease        time.Duration
	DeliveryTimeout      time.Duration
	PoisonThreshold      int

	BreakerFailures int
	BreakerOpen     time.Duration
	BreakerMaxOpen  time.Duration

	AutodisableEnabled       bool
	AutodisableFailureWindow time.Duration
	AutodisableFailureSpread time.Duration

	PullRate  float64
	PullBurst int

	DLQRetention         time.Duration
	InboxRetention       time.Duration
	JobRetention         time.Duration
	HousekeepingInterval time.Duration

	AdminToken        string
	KEK               []byte   // nil in dev until generated
	PreviousKEKs      [][]byte // older keys, still accepted for decryption
	AllowPrivateSinks bool

	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogFormat       string // json | text
}

// Error is a configuration error: one line naming the variable.
type Error struct {
	Var, Problem string
}

func (e *Error) Error() string { return Prefix + e.Var + ": " + e.Problem }

// Load reads the configuration for mode from getenv (os.Getenv in
// production, a map in tests).
func Load(mode Mode, getenv func(string) string) (Config, error) {
	r := reader{getenv: getenv}
	c := Config{Mode: mode}
	c.Role = Role(r.oneOf("ROLE", "all", "all", "ingest", "delivery"))
	c.Env = r.str("ENV", "local")
	c.HTTPAddr = r.str("HTTP_ADDR", DefaultHTTPAddr(mode))

	devDB := ""
	if mode == Dev {
		devDB = "sqlite://./streaming-hub.db"
	}
	c.DatabaseURL = r.str("DATABASE_URL", devDB)

	c.KafkaBrokers = r.list("KAFKA_BROKERS")
	c.KafkaTopicsRegex = r.str("KAFKA_TOPICS_REGEX", hub.DefaultTopicsRegex)
	if _, err := regexp.Compile(c.KafkaTopicsRegex); err != nil && r.err == nil {
		r.err = &Error{"KAFKA_TOPICS_REGEX", "not a valid regular expression: " + err.Error()}
	}
	c.KafkaGroup = r.str("KAFKA_GROUP", "streaming-hub."+c.Env)
	c.KafkaSession = r.duration("KAFKA_SESSION_TIMEOUT", 45*time.Second)
	c.MaxRecordBytes = r.positiveInt("MAX_RECORD_BYTES", 1<<20)
	c.DevKafkaAddr = r.str("DEV_KAFKA_ADDR", "127.0.0.1:9092")

	c.DispatchWorkers = r.positiveInt("DISPATCH_WORKERS", 8)
	c.DispatchClaimBatch = r.positiveInt("DISPATCH_CLAIM_BATCH", 16)
	c.DispatchIdleInterval = time.Duration(r.positiveInt("DISPATCH_IDLE_INTERVAL_MS", 250)) * time.Millisecond
	c.DispatchLease = r.duration("DISPATCH_LEASE", 60*time.Second)
	c.DeliveryTimeout = r.duration("DELIVERY_TIMEOUT", 15*time.Second)
	c.PoisonThreshold = r.positiveInt("POISON_THRESHOLD", 5)

	c.BreakerFailures = r.positiveInt("BREAKER_FAILURES", 5)
	c.BreakerOpen = r.duration("BREAKER_OPEN", 30*time.Second)
	c.BreakerMaxOpen = r.duration("BREAKER_MAX_OPEN", 10*time.Minute)

	c.AutodisableEnabled = r.boolean("AUTODISABLE_ENABLED", true)
	c.AutodisableFailureWindow = r.duration("AUTODISABLE_FAILURE_WINDOW", 120*time.Hour)
	c.AutodisableFailureSpread = r.duration("AUTODISABLE_FAILURE_SPREAD", 12*time.Hour)

	c.PullRate = r.positiveFloat("PULL_RATE", 100)
	c.PullBurst = r.positiveInt("PULL_BURST", 200)

	c.DLQRetention = r.duration("DLQ_RETENTION", 168*time.Hour)
	c.InboxRetention = r.duration("INBOX_RETENTION", 7*24*time.Hour)
	c.JobRetention = r.duration("JOB_RETENTION", 7*24*time.Hour)
	c.HousekeepingInterval = r.duration("HOUSEKEEPING_INTERVAL", time.Minute)

	c.AdminToken = r.str("ADMIN_TOKEN", "")
	c.KEK = r.key("KEK")
	for _, k := range r.list("KEK_PREVIOUS") {
		c.PreviousKEKs = append(c.PreviousKEKs, r.decodeKey("KEK_PREVIOUS", k))
	}
	c.AllowPrivateSinks = r.boolean("ALLOW_PRIVATE_SINKS", mode == Dev)

	c.ShutdownTimeout = r.duration("SHUTDOWN_TIMEOUT", 30*time.Second)
	c.LogLevel = r.level("LOG_LEVEL", slog.LevelInfo)
	defFormat := "json"
	if mode == Dev {
		defFormat = "text"
	}
	c.LogFormat = r.oneOf("LOG_FORMAT", defFormat, "json", "text")
	if r.err != nil {
		return Config{}, r.err
	}
	return c, c.check()
}

// check enforces what a mode requires. serve fails closed: no generated
// secrets, no embedded infrastructure.
func (c Config) check() error {
	if c.DatabaseURL == "" {
		return &Error{"DATABASE_URL", "required (postgres://... or, in dev, sqlite:///path/to/file.db)"}
	}
	if !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") && !strings.HasPrefix(c.DatabaseURL, "sqlite://") {
		return &Error{"DATABASE_URL", "must start with postgres:// or sqlite://"}
	}
	if c.Mode != Serve {
		return nil
	}
	if strings.HasPrefix(c.DatabaseURL, "sqlite://") {
		return &Error{"DATABASE_URL", "serve needs PostgreSQL; SQLite is for `streaming-hub dev` (one process)"}
	}
	if c.Role.Ingests() && len(c.KafkaBrokers) == 0 {
		return &Error{"KAFKA_BROKERS", "required in serve mode for role " + string(c.Role) + " (host:port,host:port)"}
	}
	if c.KEK == nil {
		return &Error{"KEK", "required in serve mode: base64 of at least 32 random bytes (the hub never sends unsigned webhooks)"}
	}
	if c.AdminToken == "" {
		return &Error{"ADMIN_TOKEN", "required in serve mode"}
	}
	if len(c.AdminToken) < 16 {
		return &Error{"ADMIN_TOKEN", "must be at least 16 characters"}
	}
	return nil
}

// SQLitePath returns the file path of a sqlite:// URL.
func SQLitePath(url string) (string, bool) {
	path, ok := strings.CutPrefix(url, "sqlite://")
	return path, ok && path != ""
}

type reader struct {
	getenv func(string) string
	err    error // the first problem; later reads are ignored
}

func (r *reader) raw(name string) (string, bool) {
	if r.err != nil {
		return "", false
	}
	v := strings.TrimSpace(r.getenv(Prefix + name))
	return v, v != ""
}

func (r *reader) fail(name, format string, args ...any) {
	if r.err == nil {
		r.err = &Error{name, fmt.Sprintf(format, args...)}
	}
}

func (r *reader) str(name, def string) string {
	if v, ok := r.raw(name); ok {
		return v
	}
	return def
}

func (r *reader) list(name string) []string {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
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

func (r *reader) positiveInt(name string, def int) int {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		r.fail(name, "must be a positive integer, got %q", v)
		return def
	}
	return n
}

func (r *reader) positiveFloat(name string, def float64) float64 {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		r.fail(name, "must be a positive number, got %q", v)
		return def
	}
	return f
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, "must be a positive Go duration such as 30s, 5m or 120h, got %q", v)
		return def
	}
	return d
}

func (r *reader) boolean(name string, def bool) bool {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, "must be true or false, got %q", v)
		return def
	}
	return b
}

func (r *reader) level(name string, def slog.Level) slog.Level {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.fail(name, "must be debug, info, warn or error, got %q", v)
		return def
	}
	return l
}

func (r *reader) key(name string) []byte {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	return r.decodeKey(name, v)
}

// decodeKey decodes a base64 key of at least 32 bytes; the value itself is
// never echoed in the error.
func (r *reader) decodeKey(name, v string) []byte {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if b, err = base64.RawURLEncoding.DecodeString(v); err != nil {
			r.fail(name, "must be base64 (standard or URL alphabet)")
			return nil
		}
	}
	if len(b) < 32 {
		r.fail(name, "must decode to at least 32 bytes, got %d", len(b))
		return nil
	}
	return b
}
