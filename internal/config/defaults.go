package config

import (
	"log/slog"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// DefaultServer is the hub the CLI talks to when neither --server,
// STREAMING_HUB_SERVER nor a context names one: the address `streaming-hub
// dev` listens on (127.0.0.1, not localhost, which may resolve to ::1
// first). The configuration page and the CLI's --help show this value.
const DefaultServer = "http://127.0.0.1:8080"

// DefaultPostgresPort is the port of a database URL made of the POSTGRES_*
// parts when POSTGRES_PORT is unset: PostgreSQL's own.
const DefaultPostgresPort = 5432

// Defaults is the complete configuration of mode before any variable is
// read: the one place where a default value is written. Load starts from
// it; tests build the configurations of single packages from it
// (config.Defaults(config.Serve).Dispatch), so they never repeat a number.
func Defaults(mode Mode) Config {
	c := Config{
		Mode:     mode,
		Role:     RoleAll,
		Env:      "local",
		HTTPAddr: ":8080",
		// DATABASE_MAX_CONNS: by role (MaxConnsFor), for RoleAll here.
		DatabaseMaxConns: MaxConnsFor(RoleAll),
		// POSTGRES_MAX_IDLE_CONNS and POSTGRES_CONN_MAX_LIFETIME: pgxpool's
		// own defaults (no connection kept open, an hour's life).
		DatabaseMinConns:        0,
		DatabaseConnMaxLifetime: time.Hour,

		DevKafkaAddr: "127.0.0.1:9092",
		Ingest: Ingest{
			TopicsRegex:    hub.DefaultTopicsRegex,
			DLQTopicsRegex: DefaultDLQTopicsRegex,
			// The hub's own quarantine (docs/wire-contract.md#quarantine-on-kafka).
			QuarantineTopic: DefaultQuarantineTopic,
			SessionTimeout:  15 * time.Second,
			MaxRecordBytes:  1 << 20,
			MaxBatch:        1000,
			RetryMin:        100 * time.Millisecond,
			RetryMax:        5 * time.Second,
			WriteTimeout:    15 * time.Second,
			StallAfter:      10 * time.Second,
			// Kafka's own consumer default (fetch.max.wait.ms); franz-go's
			// is 5s. A partition resumed after its backlog drained is
			// fetched only once the fetch in flight to its broker returns,
			// and that one, for idle partitions, waits this long: at 5s one
			// tenant's busy partition among idle ones ingested ~850
			// events/s (docs/performance.md).
			FetchMaxWait: 500 * time.Millisecond,
			// No keys: signatures are not verified (docs/lerian-platform.md).
			Signatures: Signatures{Require: false, MaxSkew: 0},
		},
		Dispatch: Dispatch{
			Workers: 8,
			// A claim's round trip and the claim loop's turn cost the
			// same for 16 jobs as for 256; at 16 they bounded 100 ordered
			// tenants to ~2,400 deliveries/s and 1,000 events/s over 10
			// ordered tenants fell behind (docs/performance.md).
			ClaimBatch:   256,
			IdleInterval: time.Second,
			// A process's jobs are its own while its heartbeat, renewed
			// every fifth of this, is fresh: a crash pauses its
			// subscriptions about this long (docs/delivery.md, "Crashes").
			Lease:               5 * time.Second,
			MaxInFlight:         1024,
			MaxPerDestination:   64,
			RunLength:           64,
			PoisonThreshold:     5,
			MaintenanceInterval: 5 * time.Second,
			FlushSize:           256,
			FlushInterval:       20 * time.Millisecond,
			StatsFlushInterval:  time.Second,
			BackfillChunk:       500,
			BackfillPassChunks:  20,
		},
		// Plaintext, no SASL: serve with ENV=production refuses this
		// unless ALLOW_INSECURE_KAFKA (docs/security.md).
		Kafka: Kafka{
			TLS:           false,
			SASLMechanism: "",
			AllowInsecure: false,
		},
		AllowInsecureDBTLS: false,
		DeliveryTimeout:    15 * time.Second,
		Breaker: Breaker{
			Failures: 5,
			OpenFor:  30 * time.Second,
			MaxOpen:  10 * time.Minute,
		},
		Autodisable: Autodisable{
			Enabled:       true,
			FailureWindow: 120 * time.Hour,
			FailureSpread: 12 * time.Hour,
		},
		Pull:             Pull{Rate: 100, Burst: 200},
		AuthFailureLimit: 20,
		IdempotencyTTL:   24 * time.Hour,
		Housekeeping: Housekeeping{
			Interval:       time.Minute,
			DLQRetention:   7 * 24 * time.Hour,
			InboxRetention: 7 * 24 * time.Hour,
			JobRetention:   7 * 24 * time.Hour,
			Batch:          1000,
			Budget:         30 * time.Second,
			HealthWindow:   720 * time.Hour,
			// Time partitions on PostgreSQL (docs/performance.md).
			PartitionInterval:    6 * time.Hour,
			PartitionFutureWeeks: 4,
			// Weeks past retention are dropped whole, as before
			// PARTITION_RETENTION_ENABLED existed; its horizon is
			// INBOX_RETENTION. Lerian's chart sets it to false.
			PartitionRetention:        true,
			PartitionRetentionHorizon: 0,
			// Every housekeeping pass, as before these variables existed.
			DLQPruneInterval:        time.Minute,
			IdempotencyReapInterval: time.Minute,
		},
		Console: Console{
			FrameAncestors: "'none'",
			IdleTimeout:    12 * time.Hour,
			SessionMaxAge:  12 * time.Hour,
		},
		// Lerian's access manager (docs/lerian-platform.md): off;
		// AUTH_REQUIRED follows ENV.
		Auth: Auth{Timeout: 5 * time.Second},
		Manifests: Manifests{
			RefreshInterval: 300 * time.Second,
			Timeout:         10 * time.Second,
			MaxBytes:        1 << 20,
		},
		// Every tenant of the roster; the topic-drift check every 5 minutes.
		Tenancy:    Tenancy{MultiTenant: true},
		Reconciler: Reconciler{Enabled: true, Interval: 300 * time.Second},

		// The KEK is STREAMING_HUB_KEK (or its _FILE) unless
		// KEK_SOURCE and KEK_REF say otherwise.
		KEKSource: KEKSource{Source: KEKFromEnv},

		// No egress proxy: destinations are dialed directly.
		EgressProxy: nil,
		// No AWS setup link: tenants make their roles by hand
		// (docs/aws.md).
		AWS: AWS{HubPrincipalARN: "", SetupTemplateURL: ""},

		ShutdownTimeout: 30 * time.Second,
		PreStopDrain:    0,
		MetricsEnabled:  true,
		// The API reference at /swagger: off unless asked for.
		SwaggerEnabled: false,
		LogLevel:       slog.LevelInfo,
		LogFormat:      "json",
	}
	c.Ingest.Group = groupFor(c.Env)
	c.Ingest.DLQGroup = dlqGroupFor(c.Env)
	// A partition queues a few batches before its fetching pauses.
	c.Ingest.MaxBacklog = 4 * c.Ingest.MaxBatch
	if mode == Dev {
		// Dev allows private sinks and prints its admin token: it does not
		// face a network unless told to (docs/cli.md).
		c.HTTPAddr = "127.0.0.1:8080"
		c.DatabaseURL = "sqlite://./streaming-hub.db"
		c.AllowPrivateSinks = true
		c.LogFormat = "text"
		// docs/cli.md: a new topic is noticed within seconds.
		c.Ingest.MetadataMaxAge = 2 * time.Second
	}
	return c
}

// MaxConnsFor is the default database pool size of a role
// (docs/performance.md): a process that delivers needs connections for
// claims, completions and the API; one that only ingests, for its partitions'
// transactions and the API. Σ(replicas × pool) must stay within PostgreSQL's
// max_connections.
func MaxConnsFor(r Role) int {
	if r == RoleIngest {
		return 8
	}
	return 16
}

// DefaultDLQTopicsRegex is what the DLQ consumer reads unless
// STREAMING_HUB_DLQ_TOPICS_REGEX says otherwise: the producers' dead-letter
// topics (docs/lerian-platform.md).
const DefaultDLQTopicsRegex = `^lerian\.streaming\..+\.dlq$`

// DefaultQuarantineTopic is where the hub quarantines the records it
// refuses unless STREAMING_HUB_QUARANTINE_TOPIC says otherwise (empty:
// off): lib-streaming's name for the consuming application's own
// dead-letter topic, lerian.streaming.<app>.dlq
// (docs/wire-contract.md#quarantine-on-kafka).
const DefaultQuarantineTopic = "lerian.streaming.streaming-hub.dlq"

// DefaultTenantID is the tenant a single-tenant hub serves when only
// MULTI_TENANT_ENABLED=false is given (no TENANT_ID).
const DefaultTenantID = "default"

// Store defaults, for what store.Options and the prune calls leave zero:
// how many rejected records are kept (the newest; a window for operators,
// not an archive), and how many rows one bounded delete takes.
const (
	DefaultMaxRejections = 10_000
	DefaultPruneBatch    = 1000
)

// DefaultCertificateCheckInterval is how often, at most, a process's
// housekeeping looks for client certificates that expire within
// hub.CertificateExpiringWithin (docs/concepts.md, "Operational events"):
// the event they emit is once a day, so an hour is soon enough.
const DefaultCertificateCheckInterval = time.Hour

// dlqGroupFor is the DLQ consumer's group of an environment.
func dlqGroupFor(env string) string { return "streaming-hub-dlq." + env }

// groupFor is the consumer group of an environment (STREAMING_HUB_ENV).
func groupFor(env string) string { return "streaming-hub." + env }

// Ingest configures the Kafka consumer. Fields without a variable are
// fixed tunings.
type Ingest struct {
	Brokers     []string // KAFKA_BROKERS; dev fills in its embedded broker
	TopicsRegex string   // KAFKA_TOPICS_REGEX
	Group       string   // KAFKA_GROUP (default streaming-hub.<ENV>)
	// DLQTopicsRegex (DLQ_TOPICS_REGEX) and DLQGroup (DLQ_GROUP, default
	// streaming-hub-dlq.<ENV>): the producers' dead-letter topics, read by a
	// second consumer group and kept for operators, never delivered
	// (docs/lerian-platform.md). Their records are kept for
	// Housekeeping.DLQRetention.
	DLQTopicsRegex string
	DLQGroup       string
	// QuarantineTopic (QUARANTINE_TOPIC) is the hub's own dead-letter
	// topic: every record ingest refuses is produced there, with its
	// origin and cause in x-lerian-dlq-* headers, before its offset is
	// committed. Empty: no quarantine (the rejection log alone). Neither
	// consumer ever reads it (docs/wire-contract.md#quarantine-on-kafka).
	QuarantineTopic string
	// SessionTimeout (KAFKA_SESSION_TIMEOUT) is how long the group waits
	// for a silent member (a crashed process) before giving its partitions
	// to others: 15s, well within a dispatch lease (docs/performance.md).
	SessionTimeout time.Duration
	// InstanceID (KAFKA_INSTANCE_ID), when set, makes the consumer a static
	// member of its group: a process restarted with the same id (after a
	// kill -9, an OOM) gets its partitions back at once, without a
	// rebalance and without waiting out SessionTimeout; a graceful stop
	// still leaves the group, so its partitions move at once. Distinct per
	// replica; the chart uses the pod name. Empty: a dynamic member.
	InstanceID string

	MaxRecordBytes int // MAX_RECORD_BYTES: bound on a record value

	MaxBatch     int           // records per transaction
	MaxBacklog   int           // queued records per partition before fetching pauses
	RetryMin     time.Duration // first wait after a failed transaction
	RetryMax     time.Duration // longest wait
	WriteTimeout time.Duration // bound on one transaction
	// StallAfter (INGEST_STALL_AFTER) is how long a partition may fail to
	// persist its batch before /readyz reports ingest as failing (disk
	// full, a read-only database, constraint errors): docs/operations.md and
	// docs/performance.md.
	StallAfter time.Duration
	// FetchMaxWait is how long a fetch waits at a broker for new records
	// when it has none to answer. It also bounds how long a partition
	// whose fetching resumed waits for its next records: franz-go adds it
	// to the next fetch to its broker, after the one in flight returns.
	FetchMaxWait time.Duration
	// Signatures verifies producers' signed envelopes (SIGNATURE_KEYS,
	// REQUIRE_SIGNATURES, SIGNATURE_MAX_SKEW; docs/lerian-platform.md).
	Signatures Signatures
	// MetadataMaxAge bounds how long a new matching topic goes unnoticed;
	// 0 keeps franz-go's own (5m). Dev mode lowers it.
	MetadataMaxAge time.Duration
}

// Kafka secures the connections to the brokers (docs/security.md). There is
// no option that skips certificate verification.
type Kafka struct {
	TLS bool // KAFKA_TLS_ENABLED
	// CACert (KAFKA_CA_CERT) is the PEM of the CAs to trust, read from the
	// variable or the file it names; nil trusts the system roots.
	CACert []byte
	// TLSCert and TLSKey (KAFKA_TLS_CERT, KAFKA_TLS_KEY) are the client's
	// certificate and key in PEM, for mutual TLS; nil for none.
	TLSCert, TLSKey []byte
	ServerName      string // KAFKA_TLS_SERVER_NAME: name to verify instead of the broker's host

	SASLMechanism string // KAFKA_SASL_MECHANISM: "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	SASLUsername  string // KAFKA_SASL_USERNAME
	SASLPassword  string // KAFKA_SASL_PASSWORD

	// AllowInsecure (ALLOW_INSECURE_KAFKA) accepts plaintext Kafka with
	// ENV=production, and SASL PLAIN without TLS anywhere.
	AllowInsecure bool
}

// Dispatch configures the dispatcher.
type Dispatch struct {
	Workers    int // DISPATCH_WORKERS: claim, prepare and send
	ClaimBatch int // DISPATCH_CLAIM_BATCH: jobs per claim
	// IdleInterval (DISPATCH_IDLE_INTERVAL_MS) is the safety poll: a claim
	// across all subscriptions at least this often. New jobs wake dispatch
	// at once (in process, and through LISTEN/NOTIFY on PostgreSQL), and
	// the jobs a process puts back to wait wake it when they are due; the
	// poll finds what neither announces (another replica's retries once
	// that replica is gone, jobs a replica gave back as it stopped).
	IdleInterval time.Duration
	// Lease (DISPATCH_LEASE) is how long a process's heartbeat stays
	// fresh: its jobs are its own while it is (docs/delivery.md,
	// "Crashes"); it is renewed every fifth of it.
	Lease           time.Duration
	PoisonThreshold int // POISON_THRESHOLD: recoveries before poison
	// MaxInFlight (DISPATCH_MAX_IN_FLIGHT) bounds the attempts of a process
	// waiting for their answers; MaxPerDestination
	// (DISPATCH_MAX_PER_DESTINATION) is one destination's (scheme, host,
	// port) share of them.
	MaxInFlight       int
	MaxPerDestination int
	// RunLength is how many next jobs of an ordered subscription
	// (max_in_flight 1) one claim may lease to a process, to be attempted
	// there strictly one at a time without a database round trip between
	// them.
	RunLength int

	MaintenanceInterval time.Duration // recover leases, auto-disable, sweep
	// Results are written behind, in batches across subscriptions: at
	// FlushSize results (RESULT_FLUSH_SIZE) or once the oldest waited
	// FlushInterval (RESULT_FLUSH_INTERVAL), whichever comes first.
	FlushSize     int
	FlushInterval time.Duration
	// StatsFlushInterval (STATS_FLUSH_INTERVAL): the statistics a process
	// gathers (the types its events carry, its subscriptions' health
	// rollups) are written by its writer this often and at shutdown, not
	// per event (docs/operations.md, "Statistics").
	StatsFlushInterval time.Duration
	// Backfills (docs/backfill.md)
	// advance on every maintenance pass: each running backfill walks up to
	// BackfillPassChunks chunks of BackfillChunk events, each chunk its own
	// transaction.
	BackfillChunk      int
	BackfillPassChunks int
}

// Breaker configures the circuit breakers (BREAKER_*).
type Breaker struct {
	Failures int           // BREAKER_FAILURES: consecutive failed attempts that open it
	OpenFor  time.Duration // BREAKER_OPEN: first open period
	MaxOpen  time.Duration // BREAKER_MAX_OPEN: the open period doubles up to this
}

// Autodisable configures automatic disabling (AUTODISABLE_*).
type Autodisable struct {
	Enabled       bool          // AUTODISABLE_ENABLED: the kill switch
	FailureWindow time.Duration // AUTODISABLE_FAILURE_WINDOW
	FailureSpread time.Duration // AUTODISABLE_FAILURE_SPREAD
}

// Pull is the per-tenant token bucket of GET /v1/events.
type Pull struct {
	Rate  float64 // PULL_RATE, per second
	Burst int     // PULL_BURST
}

// Housekeeping configures retention and the job counts.
type Housekeeping struct {
	Interval time.Duration // HOUSEKEEPING_INTERVAL: between passes
	// Retention bounds: dead letters after dead-lettering (DLQ_RETENTION),
	// events after arrival unless a job may still send them
	// (INBOX_RETENTION), succeeded jobs and their attempts after completion
	// (JOB_RETENTION).
	DLQRetention, InboxRetention, JobRetention time.Duration
	// Batch bounds each delete; Budget bounds the deleting in one pass, so
	// a backlog is worked off over several passes instead of holding the
	// lock for long.
	Batch  int
	Budget time.Duration
	// HealthWindow (HEALTH_WINDOW) is how far back subscription health
	// reaches: rollups older are pruned, and no health window is longer.
	HealthWindow time.Duration
	// PostgreSQL's weekly partitions (docs/performance.md): every
	// PartitionInterval (PARTITION_INTERVAL) one replica makes the current
	// week's and the PartitionFutureWeeks (PARTITION_FUTURE_WEEKS) next
	// weeks' partitions unless they exist. SQLite has none.
	PartitionInterval    time.Duration
	PartitionFutureWeeks int
	// PartitionRetention (PARTITION_RETENTION_ENABLED): retention drops
	// PostgreSQL's weeks past their bounds whole; false drops no partition
	// and deletes the rows past retention in batches instead.
	// PartitionRetentionHorizon (PARTITION_RETENTION_HORIZON) is then how
	// long events are kept instead of InboxRetention; 0: InboxRetention.
	PartitionRetention        bool
	PartitionRetentionHorizon time.Duration
	// DLQPruneInterval (DLQ_PRUNE_INTERVAL) and IdempotencyReapInterval
	// (IDEMPOTENCY_REAP_INTERVAL): a pass deletes the producers' DLQ
	// records past DLQRetention, and the idempotency keys past their TTL,
	// when this long has passed since it last did.
	DLQPruneInterval        time.Duration
	IdempotencyReapInterval time.Duration
}

// Manifests configures the fetching of producer manifests (MANIFEST_*).
type Manifests struct {
	Sources         []string      // MANIFEST_SOURCES: URLs, comma-separated
	RefreshInterval time.Duration // MANIFEST_REFRESH_INTERVAL
	Timeout         time.Duration // one fetch, connection to last byte
	MaxBytes        int           // a larger manifest is refused
}

// OpenTelemetry defaults (docs/tracing.md), for what the standard
// OTEL_* variables leave unset: service.name, and the OTLP protocol (the
// OpenTelemetry specification's default).
const (
	DefaultOTELServiceName = "streaming-hub"
	DefaultOTLPProtocol    = "http/protobuf"
)

// Console configures the web console (docs/console.md).
type Console struct {
	// FrameAncestors (CONSOLE_FRAME_ANCESTORS) is the CSP frame-ancestors
	// source list: who may embed the console in a frame. 'none' (the
	// default) also sends X-Frame-Options: DENY.
	FrameAncestors string
	// IdleTimeout is how long a session lives without use (fixed: 12 h).
	IdleTimeout time.Duration
	// SessionMaxAge (CONSOLE_SESSION_MAX_AGE) is how long a session lives
	// at most, however often it is used (docs/security.md).
	SessionMaxAge time.Duration
}
