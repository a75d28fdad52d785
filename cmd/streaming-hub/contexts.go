package main

// contexts.go: `streaming-hub config`, named contexts (a hub's URL, a token
// and a tenant) in $XDG_CONFIG_HOME/streaming-hub/config.json, so client
// commands need no variables. Flags win over variables, variables over the
// current context.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

var configGroup = group{
	name: "config",
	about: "Keeps the client's configuration: named contexts, each a hub URL, a token and optionally a\n" +
		"tenant, in $XDG_CONFIG_HOME/streaming-hub/config.json (else ~/.config/streaming-hub/config.json).\n" +
		"Client commands use the current context when neither a flag nor a variable gives the value.",
	subs: []subcommand{
		{"set-context", "NAME --url U --token T [--tenant X]", "create or change a context (the first one becomes current)", configSetContext},
		{"use-context", "NAME", "make a context the current one", configUseContext},
		{"get-contexts", "", "list the contexts (never their tokens)", configGetContexts},
		{"current-context", "", "print the current context's name", configCurrentContext},
	},
}

func runConfig(args []string, e env) int { return configGroup.run(args, e) }

// hubContext is one context of the config file.
type hubContext struct {
	Server string `json:"server"`
	Token  string `json:"token,omitempty"`
	Tenant string `json:"tenant,omitempty"`
}

// cliConfig is the config file.
type cliConfig struct {
	CurrentContext string                 `json:"current_context,omitempty"`
	Contexts       map[string]*hubContext `json:"contexts"`
}

// configPath is where the config file lives, from the environment; "" when
// neither XDG_CONFIG_HOME nor HOME is set.
func configPath(e env) string {
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "streaming-hub", "config.json")
}

// loadConfig reads the config file; a missing file is an empty config.
func loadConfig(e env) (*cliConfig, error) {
	cfg := &cliConfig{Contexts: map[string]*hubContext{}}
	path := configPath(e)
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if cfg.Contexts == nil {
		cfg.Contexts = map[string]*hubContext{}
	}
	return cfg, nil
}

// save writes the config file, 0600 in a 0700 directory (it holds tokens).
func (cfg *cliConfig) save(e env) error {
	path := configPath(e)
	if path == "" {
		return errors.New("neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the config")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// currentContext is the current context, or nil (also when the file cannot
// be read: commands then say what they miss).
func currentContext(e env) *hubContext {
	cfg, err := loadConfig(e)
	if err != nil || cfg.CurrentContext == "" {
		return nil
	}
	return cfg.Contexts[cfg.CurrentContext]
}

// configCmd parses a config subcommand's flags and its positional names.
func configCmd(e env, name, synopsis, about string, npos int, args []string, declare func(fs *flag.FlagSet)) ([]string, int, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if declare != nil {
		declare(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: streaming-hub %s %s\n\n%s\n", name, synopsis, about)
		if declare != nil {
			fmt.Fprintf(fs.Output(), "\nFlags:\n")
			printFlags(fs)
		}
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, flagExit(err), false
	}
	if len(pos) != npos {
		fmt.Fprintf(e.stderr, "streaming-hub %s: want %d argument(s), got %d (see --help)\n", name, npos, len(pos))
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

func configFail(e env, err error) int {
	fmt.Fprintf(e.stderr, "streaming-hub: %s\n", oneLine(err.Error()))
	return exitError
}

func configSetContext(args []string, e env) int {
	var url, token, tenant string
	pos, code, ok := configCmd(e, "config set-context", "NAME --url U --token T [--tenant X]",
		"Creates the context NAME, or changes the values given of an existing one. The first context\n"+
			"made becomes the current one. The file is written 0600 (it holds the token).", 1, args, func(fs *flag.FlagSet) {
			fs.StringVar(&url, "url", "", "base URL of the hub's API, such as http://127.0.0.1:8080")
			fs.StringVar(&url, "server", "", "same as --url")
			fs.StringVar(&token, "token", "", "the admin token or a tenant API key")
			fs.StringVar(&tenant, "tenant", "", "tenant to act on with the admin token (X-Tenant-Id)")
		})
	if !ok {
		return code
	}
	name := pos[0]
	cfg, err := loadConfig(e)
	if err != nil {
		return configFail(e, err)
	}
	ctx := cfg.Contexts[name]
	if ctx == nil {
		if url == "" {
			fmt.Fprintf(e.stderr, "streaming-hub config set-context: --url: required for a new context (see --help)\n")
			return exitUsage
		}
		ctx = &hubContext{}
		cfg.Contexts[name] = ctx
	}
	if url != "" {
		if _, err := newClient(url, "", ""); err != nil {
			fmt.Fprintf(e.stderr, "streaming-hub config set-context: --url: %v\n", err)
			return exitUsage
		}
		ctx.Server = url
	}
	if token != "" {
		ctx.Token = token
	}
	if tenant != "" {
		ctx.Tenant = tenant
	}
	if cfg.CurrentContext == "" {
		cfg.CurrentContext = name
	}
	if err := cfg.save(e); err != nil {
		return configFail(e, err)
	}
	fmt.Fprintf(e.stdout, "context %s saved in %s\n", name, configPath(e))
	return exitOK
}

func configUseContext(args []string, e env) int {
	pos, code, ok := configCmd(e, "config use-context", "NAME", "Makes NAME the current context.", 1, args, nil)
	if !ok {
		return code
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return configFail(e, err)
	}
	if cfg.Contexts[pos[0]] == nil {
		names := contextNames(cfg)
		fmt.Fprintf(e.stderr, "streaming-hub config use-context: no context %q%s\n", pos[0], didYouMean(pos[0], names))
		return exitUsage
	}
	cfg.CurrentContext = pos[0]
	if err := cfg.save(e); err != nil {
		return configFail(e, err)
	}
	fmt.Fprintf(e.stdout, "current context: %s\n", pos[0])
	return exitOK
}

func contextNames(cfg *cliConfig) []string {
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func configGetContexts(args []string, e env) int {
	if _, code, ok := configCmd(e, "config get-contexts", "", "Lists the contexts, * marking the current one. Tokens are never shown.", 0, args, nil); !ok {
		return code
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return configFail(e, err)
	}
	rows := [][]string{}
	for _, n := range contextNames(cfg) {
		c := cfg.Contexts[n]
		cur, tok := "", "no"
		if n == cfg.CurrentContext {
			cur = "*"
		}
		if c.Token != "" {
			tok = "yes"
		}
		rows = append(rows, []string{cur, n, c.Server, c.Tenant, tok})
	}
	table(e.stdout, []string{"CURRENT", "NAME", "URL", "TENANT", "TOKEN"}, rows)
	return exitOK
}

func configCurrentContext(args []string, e env) int {
	if _, code, ok := configCmd(e, "config current-context", "", "Prints the current context's name.", 0, args, nil); !ok {
		return code
	}
	cfg, err := loadConfig(e)
	if err != nil {
		return configFail(e, err)
	}
	if cfg.CurrentContext == "" {
		fmt.Fprintln(e.stderr, "streaming-hub: no current context (streaming-hub config set-context NAME --url U --token T)")
		return exitError
	}
	fmt.Fprintln(e.stdout, strings.TrimSpace(cfg.CurrentContext))
	return exitOK
}
