package main

// flags.go: flag help as users of other CLIs expect it: --name for long
// flags, -o with --output on one line.

import (
	"flag"
	"fmt"
	"strings"
)

// printFlags lists fs's flags on its output, like flag.PrintDefaults but
// with two dashes for names longer than one letter.
func printFlags(fs *flag.FlagSet) {
	w := fs.Output()
	hasOutput := fs.Lookup("output") != nil
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "output" && fs.Lookup("o") != nil {
			return // shown with -o
		}
		if f.Name == "y" && fs.Lookup("yes") != nil {
			return // shown with --yes
		}
		label := dashed(f.Name)
		if f.Name == "yes" && fs.Lookup("y") != nil {
			label = "--yes, -y"
		}
		if f.Name == "o" && hasOutput {
			label = "-o, --output"
		}
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			label += " " + typ
		}
		fmt.Fprintf(w, "  %s\n    \t%s", label, strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			if typ == "string" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w)
	})
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
