package main

// suggest.go: "did you mean" for unknown commands, subcommands and flags,
// by edit distance over the names that exist.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strings"
)

// levenshtein is the edit distance between a and b (insertions, deletions,
// substitutions), over runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// suggest returns the known name closest to got, or "" when none is close:
// within a third of its length (at least 2 edits), or got is its prefix.
func suggest(got string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		d := levenshtein(strings.ToLower(got), strings.ToLower(k))
		if d > max(2, len(k)/3) && !(len(got) >= 3 && strings.HasPrefix(k, got)) {
			continue
		}
		if bestD < 0 || d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

// didYouMean is `; did you mean "x"?` when a name is close, else "".
func didYouMean(got string, known []string) string {
	if s := suggest(got, known); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// parseFlags is fs.Parse with errors as one line, and "did you mean" after
// an unknown flag's name, then where the flags are listed: not the whole
// usage, which buries the line that matters. Asked-for help (-h, --help)
// prints the usage as it is.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		_, _ = out.Write(buf.Bytes())
		return err
	}
	msg := err.Error()
	const prefix = "flag provided but not defined: -"
	if rest, ok := strings.CutPrefix(msg, prefix); ok {
		name := strings.TrimLeft(rest, "-")
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		msg = fmt.Sprintf("unknown flag %q", dashed(name))
		if s := suggest(name, known); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", dashed(s))
		}
	}
	// The flag package names a flag -name; help shows it --name.
	msg = flagInMessage.ReplaceAllStringFunc(msg, func(m string) string {
		return "for flag " + dashed(strings.TrimPrefix(m, "for flag -"))
	})
	fmt.Fprintf(out, "streaming-hub %s: %s\n%s\n", fs.Name(), msg, seeHelp(fs.Name(), "its flags"))
	return err
}

var flagInMessage = regexp.MustCompile(`for flag -[A-Za-z0-9][A-Za-z0-9_-]*`)

// seeHelp is the line under an error that says where the names are.
func seeHelp(command, what string) string {
	return fmt.Sprintf("Run 'streaming-hub %s --help' for %s.", command, what)
}
