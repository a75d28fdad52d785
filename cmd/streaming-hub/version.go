package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

func runVersion(args []string, e env) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var output string
	fs.StringVar(&output, "o", "table", "print a `table|json|yaml`")
	fs.StringVar(&output, "output", "table", "same as -o")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: streaming-hub version [-o table|json|yaml]\n       streaming-hub --version\n\nPrints the version of this binary, the commit and date it was built from,\nand the Go release that built it.\n\nFlags:")
		printFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if !validOutput(output) || fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "streaming-hub version: -o: table, json or yaml, and no arguments (see --help)\n")
		return exitUsage
	}
	switch output {
	case "json", "yaml":
		raw, _ := json.Marshal(struct {
			Version string `json:"version"`
			Commit  string `json:"commit"`
			Date    string `json:"date"`
			Go      string `json:"go"`
		}{hub.Version, hub.Commit, hub.Date, runtime.Version()})
		if output == "yaml" {
			return exitOf(printYAML(e.stdout, raw))
		}
		return exitOf(printJSON(e.stdout, raw))
	}
	fmt.Fprintln(e.stdout, versionLine())
	return exitOK
}

// versionLine is what --version prints: "streaming-hub v0.9.0 (commit
// 0123abc..., built 2026-12-02T01:02:03Z, go1.27.3)", naming only what the
// build recorded.
func versionLine() string {
	var parts []string
	if hub.Commit != "" {
		parts = append(parts, "commit "+hub.Commit)
	}
	if hub.Date != "" {
		parts = append(parts, "built "+hub.Date)
	}
	parts = append(parts, runtime.Version())
	return "streaming-hub " + hub.Version + " (" + strings.Join(parts, ", ") + ")"
}

func exitOf(err error) int {
	if err != nil {
		return exitError
	}
	return exitOK
}
