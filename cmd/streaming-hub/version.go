package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"runtime"

	hub "github.com/lerianstudio/streaming-hub"
)

func runVersion(args []string, e env) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var output string
	fs.StringVar(&output, "o", "table", "print a `table|json|yaml`")
	fs.StringVar(&output, "output", "table", "same as -o")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: streaming-hub version [-o table|json|yaml]\n       streaming-hub --version\n\nPrints the version of this binary and the Go release that built it.\n\nFlags:")
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
			Go      string `json:"go"`
		}{hub.Version, runtime.Version()})
		if output == "yaml" {
			return exitOf(printYAML(e.stdout, raw))
		}
		return exitOf(printJSON(e.stdout, raw))
	}
	fmt.Fprintf(e.stdout, "streaming-hub %s (%s)\n", hub.Version, runtime.Version())
	return exitOK
}

func exitOf(err error) int {
	if err != nil {
		return exitError
	}
	return exitOK
}
