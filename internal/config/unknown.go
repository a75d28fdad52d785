package config

import (
	"sort"
	"strings"
)

// otherNames are STREAMING_HUB_ variables read outside Load: the CLI
// client's and the test suite's.
var otherNames = []string{
	"SERVER", "TOKEN", "TENANT",
	"TEST_POSTGRES_URL", "TEST_REDIS_URL", "TEST_AMQP_URL", "TEST_NATS_SERVER", "TEST_NATS_LOG",
	"TRANSFORM_WORKER", "CRASH_AT",
}

// Known lists every variable name the hub reads (without the prefix).
func Known() []string {
	r := reader{getenv: func(string) string { return "" }}
	loadInto(&r, Dev)
	names := append([]string(nil), otherNames...)
	for n := range r.read {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Unknown warns about each STREAMING_HUB_ variable of environ (KEY=VALUE
// entries, as os.Environ gives them) that the hub does not read: a mistyped
// name would otherwise be silently ignored. Each warning names the closest
// known variable.
func Unknown(environ []string) []string {
	known := Known()
	isKnown := make(map[string]bool, len(known))
	for _, k := range known {
		isKnown[k] = true
	}
	ref := kekReference(environ)
	var out []string
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		name, ok := strings.CutPrefix(key, Prefix)
		if !ok || isKnown[name] || key == ref {
			continue
		}
		w := key + ": unknown"
		if best := closest(name, known); best != "" {
			w += "; did you mean " + Prefix + best + "?"
		}
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// closest is the known name nearest to name by edit distance, if near
// enough to be a typo.
func closest(name string, known []string) string {
	best, bestD := "", len(name)/2+2
	for _, k := range known {
		if d := distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
