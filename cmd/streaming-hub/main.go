// Command streaming-hub runs the hub (dev, serve), migrates its database,
// prints its version, and is a client of a running hub: its HTTP API
// (tenants, keys, subscriptions, deliveries, events) and its Kafka ingest
// (produce). main only parses arguments and handles signals and exit codes;
// the hub itself is wired in package app.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the hub failed while running
	exitUsage = 2 // bad arguments or configuration
)

type command struct {
	summary string
	run     func(args []string, env env) int
}

// env is what a command may touch: streams and variables, so tests can run
// commands in-process. stdin may be nil (read as empty).
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	stdin          io.Reader
	environ        func() []string // KEY=VALUE entries; nil means none
}

// lookup is getenv that also tells a variable set empty from one unset,
// by environ (STREAMING_HUB_QUARANTINE_TOPIC= turns the quarantine off).
func (e env) lookup(k string) (string, bool) {
	if v := e.getenv(k); v != "" {
		return v, true
	}
	if e.environ != nil {
		for _, kv := range e.environ() {
			if name, _, ok := strings.Cut(kv, "="); ok && name == k {
				return "", true
			}
		}
	}
	return "", false
}

var commands = map[string]command{
	"dev":     {"run the whole hub on this machine, no infrastructure needed", runDev},
	"serve":   {"run the hub in production: external Kafka and PostgreSQL", runServe},
	"migrate": {"apply database migrations (STREAMING_HUB_DATABASE_URL)", runMigrate},
	"rewrap":  {"re-seal every stored secret under the current STREAMING_HUB_KEK", runRewrap},
	"version": {"print the version", runVersion},
	"bench":   {"measure the whole path on this machine (embedded Kafka, the hub, a local sink)", runBench},

	// Clients of a running hub.
	"tenants":       {"list, show, create and update tenants (admin API)", runTenants},
	"keys":          {"create and revoke tenant API keys (admin API)", runKeys},
	"portal-links":  {"make, list and revoke a tenant's console portal links (admin API)", runPortalLinks},
	"subscriptions": {"manage a tenant's subscriptions: webhooks and broker destinations (API)", runSubscriptions},
	"deliveries":    {"inspect and replay a subscription's deliveries (API)", runDeliveries},
	"events":        {"pull a tenant's events (API)", runEvents},
	"rejections":    {"list the records ingest rejected (admin API)", runRejections},
	"admin":         {"the whole hub's delivery health (admin API)", runAdmin},
	"produce":       {"send one CloudEvent to Kafka, as a producer would (no kcat needed)", runProduce},
	"listen":        {"forward a tenant's events to a local URL, signed like a delivery (receivers behind NAT)", runListen},
	"config":        {"keep named contexts (hub URL, token, tenant) for the client commands", runConfig}}

// completion reads the command table, so it joins it at init.
func init() {
	commands["completion"] = command{"print a shell completion script: bash, zsh or fish", runCompletion}
}

// aliases are the singular names of the resource commands, as kubectl
// takes `pod` for `pods`: `streaming-hub subscription list` is
// `streaming-hub subscriptions list`. They are resolved before anything else
// reads the name, so help, errors and completion say the plural.
var aliases = map[string]string{
	"tenant":       "tenants",
	"key":          "keys",
	"portal-link":  "portal-links",
	"subscription": "subscriptions",
	"sub":          "subscriptions",
	"subs":         "subscriptions",
	"delivery":     "deliveries",
	"event":        "events",
	"rejection":    "rejections",
}

// canonical is the command name that name stands for: itself, or the
// plural an alias stands for.
func canonical(name string) string {
	if plural, ok := aliases[name]; ok {
		return plural
	}
	return name
}

// groups are the commands made of subcommands, for help and completion.
var groups = map[string]*group{
	"tenants":       &tenantsGroup,
	"keys":          &keysGroup,
	"portal-links":  &portalLinksGroup,
	"subscriptions": &subscriptionsGroup,
	"deliveries":    &deliveriesGroup,
	"events":        &eventsGroup,
	"rejections":    &rejectionsGroup,
	"admin":         &adminGroup,
	"config":        &configGroup,
}

func main() {
	os.Exit(run(os.Args[1:], env{os.Stdout, os.Stderr, os.Getenv, os.Stdin, os.Environ}))
}

func run(args []string, e env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	args = append([]string{canonical(args[0])}, args[1:]...)
	switch args[0] {
	case "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	case "--version", "-version":
		return runVersion(args[1:], e)
	case completeCommand:
		return runComplete(args[1:], e)
	case "help":
		if len(args) == 1 {
			usage(e.stdout)
			return exitOK
		}
		// `help tenants` is `tenants --help`, `help tenants list` is
		// `tenants list --help`: the command's own help, on stdout.
		args = append([]string{args[0], canonical(args[1])}, args[2:]...)
		if _, ok := commands[args[1]]; !ok {
			fmt.Fprintf(e.stderr, "streaming-hub help: unknown command %q%s\nRun 'streaming-hub --help' for the commands.\n", args[1], didYouMean(args[1], commandNames()))
			return exitUsage
		}
		return run(append(append([]string{}, args[1:]...), "--help"), helpEnv(e))
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "streaming-hub: unknown command %q%s\nRun 'streaming-hub --help' for the commands.\n", args[0], didYouMean(args[0], commandNames()))
		return exitUsage
	}
	return cmd.run(args[1:], e)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "streaming-hub delivers CloudEvents from Kafka to every destination a tenant subscribed to.")
	fmt.Fprintln(w, "\nUsage: streaming-hub <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	width := 0
	for name := range commands {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nThe resource commands also answer to their singular: subscription, delivery,\ntenant, key, event, rejection, portal-link (and sub for subscriptions).")
	fmt.Fprintln(w, "\nRun `streaming-hub help <command>` (or `streaming-hub <command> --help`) for a command's")
	fmt.Fprintln(w, "flags and variables, `streaming-hub --version` for the version.")
}

// helpEnv is e with help, which flag packages write on stderr, on stdout:
// asked-for help is output, not a diagnostic.
func helpEnv(e env) env {
	e.stderr = e.stdout
	return e
}

// envHelp is the configuration summary every hub command's --help shows.
var envHelp = strings.TrimSpace(`
Configuration comes from the environment (docs/configuration.md lists all of it):
  STREAMING_HUB_ROLE              all | ingest | delivery (default all)
  STREAMING_HUB_HTTP_ADDR         API, /healthz, /readyz, /metrics (default :8080; dev 127.0.0.1:8080)
  STREAMING_HUB_DATABASE_URL      postgres://... (serve needs PostgreSQL; migrate also takes sqlite:///path/to/file.db)
  STREAMING_HUB_KAFKA_BROKERS     host:port,host:port
  STREAMING_HUB_KAFKA_TOPICS_REGEX  default ^lerian\.streaming\..+ (never .commands / .dlq)
  STREAMING_HUB_KAFKA_GROUP       default streaming-hub.<STREAMING_HUB_ENV>
  STREAMING_HUB_ADMIN_TOKEN       bearer token of the admin API
  STREAMING_HUB_KEK               base64, >= 32 bytes: encrypts stored secrets
  STREAMING_HUB_KEK_FILE, STREAMING_HUB_KEK_PREVIOUS_FILE, STREAMING_HUB_ADMIN_TOKEN_FILE
                                  read the secret from a mounted file instead
  STREAMING_HUB_LOG_LEVEL, STREAMING_HUB_LOG_FORMAT
`)
