package main

// cli.go: what the client commands (tenants, keys, subscriptions,
// deliveries, events) share: subcommand groups, the common flags, parsing
// flags mixed with positional arguments, and --help.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// Variables the client commands read.
const (
	envServer = "STREAMING_HUB_SERVER"
	envToken  = "STREAMING_HUB_TOKEN"
	envTenant = "STREAMING_HUB_TENANT"

	// What dev listens on, which the client commands follow when their own
	// settings are unset (docs/cli.md, "Where the client commands connect").
	envHTTPAddr       = config.Prefix + "HTTP_ADDR"
	envHTTPListenAddr = config.Prefix + "HTTP_LISTEN_ADDR"
	envDevKafkaAddr   = config.Prefix + "DEV_KAFKA_ADDR"

	defaultServer = config.DefaultServer
)

// subcommand is one verb of a group: `streaming-hub <group> <name> ...`.
type subcommand struct {
	name     string
	synopsis string // what follows the name in the usage line
	summary  string
	run      func(args []string, e env) int
}

// group is a command made of subcommands, such as `tenants`.
type group struct {
	name  string
	about string
	subs  []subcommand
}

func (g group) run(args []string, e env) int {
	if len(args) == 0 {
		g.usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		g.usage(e.stdout)
		return exitOK
	case "help":
		// `tenants help list` is `tenants list --help`, on stdout.
		if len(args) == 1 {
			g.usage(e.stdout)
			return exitOK
		}
		return g.run([]string{args[1], "--help"}, helpEnv(e))
	}
	for _, s := range g.subs {
		if s.name == args[0] {
			return s.run(args[1:], e)
		}
	}
	names := make([]string, len(g.subs))
	for i, s := range g.subs {
		names[i] = s.name
	}
	fmt.Fprintf(e.stderr, "streaming-hub %s: unknown subcommand %q%s\n%s\n", g.name, args[0], didYouMean(args[0], names),
		seeHelp(g.name, "its subcommands"))
	return exitUsage
}

func (g group) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: streaming-hub %s <subcommand> [flags]\n\n%s\n\nSubcommands:\n", g.name, g.about)
	width := 0
	for _, s := range g.subs {
		width = max(width, len(s.name))
	}
	for _, s := range g.subs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
	}
	fmt.Fprintf(w, "\nRun `streaming-hub %s <subcommand> --help` for its arguments, flags and variables.\n", g.name)
}

// apiCmd is one API subcommand being parsed: its own flags plus the common
// ones (--server, --tenant on tenant-scoped endpoints, -o), its positional
// arguments, and, once parsed, the client to call the API with.
type apiCmd struct {
	name     string   // "subscriptions get"
	posNames []string // positional arguments, such as "<id>"
	fs       *flag.FlagSet
	e        env

	ctx    *hubContext // the current context, nil when none
	server string
	tenant string
	output string

	args []string // the positional arguments, once parsed
	set  map[string]bool
	cl   *client
}

// newAPICmd declares a subcommand. synopsis is the usage line after the
// name; posNames are its positional arguments, all required; scoped adds
// --tenant (X-Tenant-Id) for tenant-scoped endpoints.
func newAPICmd(e env, name, synopsis, about string, scoped bool, posNames ...string) *apiCmd {
	c := &apiCmd{name: name, posNames: posNames, e: e}
	c.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	c.fs.SetOutput(e.stderr)
	// Flag > variable > current context > default.
	c.ctx = currentContext(e)
	server := e.getenv(envServer)
	if server == "" && c.ctx != nil {
		server = c.ctx.Server
	}
	if server == "" {
		server = serverOfListenAddr(e)
	}
	tenant := e.getenv(envTenant)
	if tenant == "" && c.ctx != nil {
		tenant = c.ctx.Tenant
	}
	c.fs.StringVar(&c.server, "server", server, "base URL of the hub's API (env "+envServer+")")
	if scoped {
		c.fs.StringVar(&c.tenant, "tenant", tenant, "tenant to act on when the token is the admin token, sent as X-Tenant-Id (env "+envTenant+")")
	}
	c.fs.StringVar(&c.output, "o", "table", "print a `table|wide|json|yaml`: wide is the table with more columns on lists; json\nand yaml show the API's answer as it came, and with json errors are JSON too, on stderr")
	c.fs.StringVar(&c.output, "output", "table", "same as -o")
	c.fs.Usage = func() {
		w := c.fs.Output()
		fmt.Fprintf(w, "Usage: streaming-hub %s %s\n\n%s\n\nFlags (before or after the arguments):\n", name, synopsis, strings.TrimSpace(about))
		printFlags(c.fs)
		fmt.Fprintf(w, "\nEnvironment:\n")
		fmt.Fprintf(w, "  %-21s the admin token or a tenant API key, sent as Authorization: Bearer %s\n", envToken, c.tokenNeed())
		fmt.Fprintf(w, "  %-21s default of --server (else the current context's, else the address\n  %-21s %s names, else %s)\n",
			envServer, "", envHTTPAddr, defaultServer)
		if scoped {
			fmt.Fprintf(w, "  %-21s default of --tenant (else the current context's)\n", envTenant)
		}
		fmt.Fprintf(w, "  When a variable is not set, the current context (streaming-hub config) gives the value.\n")
	}
	return c
}

// tokenNeed says in --help whether STREAMING_HUB_TOKEN must be set: not
// when the current context holds a token.
func (c *apiCmd) tokenNeed() string {
	if c.ctx != nil && c.ctx.Token != "" {
		return "(optional: the current context has a token)"
	}
	return "(required unless the current context has a token)"
}

// serverOfListenAddr is the URL of the hub on this machine that dev (or
// serve) listens on when STREAMING_HUB_HTTP_ADDR (or the chart's
// STREAMING_HUB_HTTP_LISTEN_ADDR) is set in this shell too: one variable
// moves the hub and its clients together. Unset or unusable, the default.
func serverOfListenAddr(e env) string {
	addr := e.getenv(envHTTPAddr)
	if addr == "" {
		addr = e.getenv(envHTTPListenAddr)
	}
	host, port, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil || port == "" {
		return defaultServer
	}
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1" // listening everywhere: this machine answers on loopback
	}
	return "http://" + net.JoinHostPort(host, port)
}

// parse reads the arguments, checks them and STREAMING_HUB_TOKEN, and makes
// the client. When it returns false, the command exits with code.
func (c *apiCmd) parse(args []string) (code int, ok bool) {
	pos, err := parseInterleaved(c.fs, args)
	if err != nil {
		return flagExit(err), false
	}
	if len(pos) != len(c.posNames) {
		want := "no arguments"
		if len(c.posNames) > 0 {
			want = strings.Join(c.posNames, " ")
		}
		return c.usageError("want %s, got %d argument(s)", want, len(pos)), false
	}
	if !validOutput(c.output) {
		output := c.output
		c.output = "table" // the error itself cannot be in an unknown form
		return c.usageError("-o: table, wide, json or yaml, not %q", output), false
	}
	c.args = pos
	c.set = map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	token := c.e.getenv(envToken)
	if token == "" && c.ctx != nil {
		token = c.ctx.Token
	}
	if token == "" {
		c.errorLine("usage", 0, envToken+": required (the admin token or a tenant API key), or a current context with a token (streaming-hub config set-context)")
		return exitUsage, false
	}
	cl, err := newClient(c.server, token, c.tenant)
	if err != nil {
		return c.usageError("--server: %v", err), false
	}
	c.cl = cl
	return exitOK, true
}

// usageError prints one line about bad arguments and where help is, and
// returns exitUsage.
func (c *apiCmd) usageError(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if c.output == "json" {
		c.errorLine("usage", 0, c.name+": "+msg)
		return exitUsage
	}
	fmt.Fprintf(c.e.stderr, "streaming-hub %s: %s (see --help)\n", c.name, msg)
	return exitUsage
}

// errorLine prints one error on stderr: with -o json as
// {"error":{"code","message"[,"status"]}} (status: the API's, when it
// answered), else as "streaming-hub: message".
func (c *apiCmd) errorLine(code string, status int, msg string) {
	msg = oneLine(msg)
	if c.output != "json" {
		fmt.Fprintf(c.e.stderr, "streaming-hub: %s\n", msg)
		return
	}
	body := map[string]any{"code": code, "message": msg}
	if status != 0 {
		body["status"] = status
	}
	line, _ := json.Marshal(map[string]any{"error": body})
	fmt.Fprintf(c.e.stderr, "%s\n", line)
}

// validOutput tells the forms -o takes.
func validOutput(o string) bool { return o == "table" || o == "wide" || o == "json" || o == "yaml" }

// parseInterleaved parses flags wherever they are among the positional
// arguments (the flag package alone stops at the first non-flag), so
// `subscriptions get sub_1 -o json` works. After "--" everything is
// positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// boolText is a boolean flag that takes its value as the next argument
// (`--enabled false`), unlike flag.Bool.
type boolText struct{ v *bool }

// String is empty: the flag has no default to show (unset sends nothing).
func (b boolText) String() string { return "" }

func (b boolText) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "yes", "1":
		*b.v = true
	case "false", "no", "0":
		*b.v = false
	default:
		return errors.New("true or false")
	}
	return nil
}

// keyValue splits K=V, as --header takes it.
func keyValue(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if k = strings.TrimSpace(k); !ok || k == "" {
		return "", "", fmt.Errorf("%q is not NAME=VALUE", s)
	}
	return k, v, nil
}
