package main

// produce.go: `streaming-hub produce`, one binary-mode CloudEvent to Kafka
// as a producer would send it (docs/wire-contract.md), for users without kcat.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
)

// defaultBrokers is dev's embedded broker at its default address.
var defaultBrokers = config.Defaults(config.Dev).DevKafkaAddr

func runProduce(args []string, e env) int {
	secValues := map[string]string{} // variable -> value given by its flag
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	// --brokers > STREAMING_HUB_KAFKA_BROKERS > dev's broker where this
	// shell moved it (STREAMING_HUB_DEV_KAFKA_ADDR) > its default address.
	brokers := e.getenv("STREAMING_HUB_KAFKA_BROKERS")
	if brokers == "" {
		brokers = e.getenv(envDevKafkaAddr)
	}
	if brokers == "" {
		brokers = defaultBrokers
	}
	tenantDefault := e.getenv(envTenant)
	if tenantDefault == "" {
		tenantDefault = "default"
	}
	fs.StringVar(&brokers, "brokers", brokers, "Kafka brokers, host:port,host:port (env STREAMING_HUB_KAFKA_BROKERS)")
	tenant := fs.String("tenant", tenantDefault, "ce-tenantid (env "+envTenant+")")
	ceType := fs.String("type", "studio.lerian.transaction.posted", "ce-type")
	source := fs.String("source", "//midaz/ledger", "ce-source")
	id := fs.String("id", "", "ce-id (default: evt-<unix nanoseconds>)")
	subject := fs.String("subject", "", "ce-subject (default: none)")
	schema := fs.String("schema-version", "1.0.0", "ce-schemaversion, MAJOR.MINOR.PATCH")
	contentType := fs.String("content-type", "application/json", "content-type of the value")
	data := fs.String("data", `{"amount":"10.00"}`, "the record value; @file reads a file, - reads stdin")
	topic := fs.String("topic", "", "Kafka topic (default: the one producers of --source use for --type, such as\nlerian.streaming.ledger_transaction.posted)")
	key := fs.String("key", "", "record key (default: the tenant)")
	var headers multiFlag
	fs.Var(&headers, "header", "extra record header `NAME=VALUE`, such as ce-dataschema=...; naming a header set\nabove (ce-time=...) replaces it (repeatable)")
	timeout := fs.Duration("timeout", 10*time.Second, "give up when the broker has not acknowledged within this long")
	// Kafka security: the hub's variables, each flag overriding its own.
	security := map[string]string{} // flag -> variable, for the flags given
	secFlag := func(name, variable, usage string) {
		fs.Func(name, usage+" (env "+config.Prefix+variable+")", func(v string) error {
			security[name] = variable
			secValues[variable] = v
			return nil
		})
	}
	secFlag("ca-cert", "KAFKA_CA_CERT", "`PEM` of the CAs to trust, inline or a file path (default: the system roots)")
	secFlag("tls-cert", "KAFKA_TLS_CERT", "client certificate `PEM` for mutual TLS, inline or a file path")
	secFlag("tls-key", "KAFKA_TLS_KEY", "its private key `PEM`, inline or a file path")
	secFlag("tls-server-name", "KAFKA_TLS_SERVER_NAME", "`name` to verify when the broker's certificate holds another than its address")
	secFlag("sasl-mechanism", "KAFKA_SASL_MECHANISM", "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (the password only from\n"+config.Prefix+"KAFKA_SASL_PASSWORD: a flag would show it to ps)")
	secFlag("sasl-username", "KAFKA_SASL_USERNAME", "SASL `user`")
	fs.BoolFunc("tls", "TLS to the brokers (env "+config.Prefix+"KAFKA_TLS_ENABLED)", func(v string) error {
		security["tls"] = "KAFKA_TLS_ENABLED"
		secValues["KAFKA_TLS_ENABLED"] = v
		return nil
	})
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: streaming-hub produce [flags]

Sends one CloudEvent to Kafka in binary content mode, as producers do: the
context attributes as ce- record headers (ce-specversion, ce-id, ce-source,
ce-type, ce-time, ce-tenantid, ce-schemaversion), the body as the record value.
It waits for the broker's acknowledgement and prints where the record landed.
The hub admits it only if the tenant is in its roster.

Example (the dev hub's broker):
  streaming-hub produce --tenant default --data '{"amount":"12.50"}'

Flags:
`)
		printFlags(fs)
		fmt.Fprintf(fs.Output(), "\nEnvironment:\n  %-28s default of --brokers\n  %-28s dev's broker: the default of --brokers when the above is unset (else %s)\n  %-28s default of --tenant (else default)\n",
			"STREAMING_HUB_KAFKA_BROKERS", envDevKafkaAddr, defaultBrokers, envTenant)
		fmt.Fprint(fs.Output(), `  and the hub's Kafka security variables: STREAMING_HUB_KAFKA_TLS_ENABLED, _CA_CERT, _TLS_CERT,
  _TLS_KEY, _TLS_SERVER_NAME, _SASL_MECHANISM, _SASL_USERNAME, _SASL_PASSWORD (or the chart's
  _KAFKA_SCRAM_*), STREAMING_HUB_ALLOW_INSECURE_KAFKA. SASL PLAIN is refused without TLS.
`)
	}
	if err := parseFlags(fs, args); err != nil {
		return flagExit(err)
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "streaming-hub produce: %s (see --help)\n", fmt.Sprintf(format, a...))
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	kafka, err := config.LoadKafka(func(name string) string {
		if v, ok := secValues[strings.TrimPrefix(name, config.Prefix)]; ok {
			return v
		}
		return e.getenv(name)
	})
	if err != nil {
		byVar := map[string]string{}
		for f, v := range security {
			byVar[v] = f
		}
		var cerrs config.Errors
		errors.As(err, &cerrs)
		for _, ce := range cerrs {
			if f, ok := byVar[ce.Var]; ok {
				fmt.Fprintf(e.stderr, "streaming-hub produce: --%s: %s\n", f, ce.Problem)
			} else {
				fmt.Fprintf(e.stderr, "streaming-hub produce: %s\n", ce)
			}
		}
		return exitUsage
	}
	sec, err := kafkasec.New(kafka, nil)
	if err != nil {
		return usageErr("%v", err)
	}
	seeds := splitList(brokers)
	if len(seeds) == 0 {
		return usageErr("--brokers: required")
	}
	if *topic == "" {
		t, err := hub.TopicForSource(*source, *ceType)
		if err != nil {
			return usageErr("no topic for --source %q and --type %q (%v); give --topic", *source, *ceType, err)
		}
		*topic = t
	}
	if *id == "" {
		*id = "evt-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	value, err := readValue(e, *data)
	if err != nil {
		return usageErr("--data: %v", err)
	}
	rec := &kgo.Record{Topic: *topic, Key: []byte(*tenant), Value: value}
	if *key != "" {
		rec.Key = []byte(*key)
	}
	hs := []kgo.RecordHeader{
		{Key: "ce-specversion", Value: []byte("1.0")},
		{Key: "ce-id", Value: []byte(*id)},
		{Key: "ce-source", Value: []byte(*source)},
		{Key: "ce-type", Value: []byte(*ceType)},
		{Key: "ce-time", Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
		{Key: "ce-tenantid", Value: []byte(*tenant)},
		{Key: "ce-schemaversion", Value: []byte(*schema)},
		{Key: "content-type", Value: []byte(*contentType)},
	}
	if *subject != "" {
		hs = append(hs, kgo.RecordHeader{Key: "ce-subject", Value: []byte(*subject)})
	}
	for _, h := range headers {
		k, v, err := keyValue(h)
		if err != nil {
			return usageErr("--header: %v", err)
		}
		hs = setHeader(hs, k, v)
	}
	rec.Headers = hs
	for _, h := range hs {
		if h.Key == "ce-id" {
			*id = string(h.Value) // --header ce-id=... wins
		}
	}

	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.AllowAutoTopicCreation(), // the dev broker creates topics on first produce
		kgo.DisableIdempotentWrite(), // one record: no producer id (or its ACL) needed
		kgo.RecordDeliveryTimeout(*timeout),
		kgo.DialTimeout(min(*timeout, 10*time.Second)),
	}, sec.Opts()...)...)
	if err != nil {
		return usageErr("--brokers: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		if cause := sec.Cause(); cause != nil {
			fmt.Fprintf(e.stderr, "streaming-hub: produce: %s: %s\n", brokers, cause)
			return exitError
		}
		fmt.Fprintf(e.stderr, "streaming-hub: produce: no Kafka broker reachable at %s: %s\n", brokers, describeKafkaErr(err, *timeout))
		return exitError
	}
	r, err := cl.ProduceSync(ctx, rec).First()
	if err != nil {
		fmt.Fprintf(e.stderr, "streaming-hub: produce: %s: %s\n", *topic, describeKafkaErr(err, *timeout))
		return exitError
	}
	fmt.Fprintf(e.stdout, "produced ce-id=%s tenant=%s topic=%s partition=%d offset=%d\n", *id, *tenant, r.Topic, r.Partition, r.Offset)
	return exitOK
}

// describeKafkaErr makes a franz-go error one readable line.
func describeKafkaErr(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %v (--timeout)", timeout)
	}
	return oneLine(err.Error())
}

// setHeader replaces the header named k (case-insensitively) or appends it:
// a duplicated ce- header with another value would be rejected at ingest.
func setHeader(hs []kgo.RecordHeader, k, v string) []kgo.RecordHeader {
	for i := range hs {
		if strings.EqualFold(hs[i].Key, k) {
			hs[i] = kgo.RecordHeader{Key: hs[i].Key, Value: []byte(v)}
			return hs
		}
	}
	return append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
}

// readValue reads --data: @file, - for stdin, else the text itself.
func readValue(e env, v string) ([]byte, error) {
	switch {
	case v == "-":
		return readInput(e, "-")
	case strings.HasPrefix(v, "@"):
		return readInput(e, v[1:])
	}
	return []byte(v), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
