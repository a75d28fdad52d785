package main

import (
	"flag"
	"fmt"
	"runtime"

	hub "github.com/lerianstudio/streaming-hub"
)

func runVersion(args []string, e env) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: streaming-hub version\n\nPrints the version of this binary.")
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	fmt.Fprintf(e.stdout, "streaming-hub %s (%s)\n", hub.Version, runtime.Version())
	return exitOK
}
