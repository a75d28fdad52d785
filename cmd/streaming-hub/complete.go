package main

// complete.go: `streaming-hub __complete flags <words...>`, which the
// completion scripts call for the flags of the command being typed. The
// flags are read from that command's own --help, so they cannot drift
// from what it accepts.

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// completeCommand is hidden: not in the command table, help or
// completion.
const completeCommand = "__complete"

// flagLine matches a flag in printFlags' help: "  --name TYPE",
// "  -o, --output ...", "  --yes, -y".
var flagLine = regexp.MustCompile(`^  (-{1,2}[A-Za-z0-9][A-Za-z0-9-]*)(?:, (-{1,2}[A-Za-z0-9][A-Za-z0-9-]*))?`)

// destinationTypes are --type's values on subscriptions create/update.
const destinationTypes = "webhook rabbitmq kafka nats pubsub"

func runComplete(args []string, e env) int {
	if len(args) == 0 || args[0] != "flags" {
		fmt.Fprintln(e.stderr, "usage: streaming-hub __complete flags <command> [<subcommand>]")
		return exitUsage
	}
	for _, f := range flagsOf(args[1:]) {
		fmt.Fprintln(e.stdout, f)
	}
	return exitOK
}

// flagsOf lists the flags of the command that words (as typed after the
// program's name, flags and arguments included) name.
func flagsOf(words []string) []string {
	if len(words) == 0 {
		return []string{"--help", "--version"}
	}
	name := canonical(words[0])
	if _, ok := commands[name]; !ok || name == "help" {
		return nil
	}
	help := []string{name, "--help"}
	if g, ok := groups[name]; ok {
		help = nil
		if len(words) > 1 {
			for _, s := range g.subs {
				if s.name == words[1] {
					help = []string{name, s.name, "--help"}
				}
			}
		}
		if help == nil {
			return []string{"--help"}
		}
	}
	var out bytes.Buffer
	run(help, env{stdout: &out, stderr: &out, getenv: func(string) string { return "" }})
	var flags []string
	for _, line := range strings.Split(out.String(), "\n") {
		m := flagLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, f := range m[1:] {
			if f != "" {
				flags = append(flags, f)
			}
		}
	}
	return append(flags, "--help")
}
