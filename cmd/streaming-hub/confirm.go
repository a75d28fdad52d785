package main

// confirm.go: deletes and revokes ask first. On a terminal the command asks
// y/N on stderr and reads the answer from stdin; when stdin is not a
// terminal (a script, CI) it refuses unless --yes says the caller means it.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// stdinIsTerminal tells whether r is an interactive terminal; tests replace
// it to drive the prompt.
var stdinIsTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// yesFlag declares --yes (and -y) on a destructive subcommand.
func (c *apiCmd) yesFlag() *bool {
	yes := new(bool)
	c.fs.BoolVar(yes, "yes", false, "do it without asking (needed when stdin is not a terminal)")
	c.fs.BoolVar(yes, "y", false, "same as --yes")
	return yes
}

// confirm asks "question [y/N]" unless yes; when it returns false, the
// command exits with code (nothing was done).
func (c *apiCmd) confirm(yes bool, question string) (code int, ok bool) {
	if yes {
		return exitOK, true
	}
	if c.e.stdin == nil || !stdinIsTerminal(c.e.stdin) {
		return c.usageError("%s: stdin is not a terminal, so there is no one to ask; pass --yes to confirm", strings.TrimSuffix(question, "?")), false
	}
	fmt.Fprintf(c.e.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(c.e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return exitOK, true
	}
	fmt.Fprintln(c.e.stderr, "streaming-hub: not confirmed; nothing was done")
	return exitError, false
}
