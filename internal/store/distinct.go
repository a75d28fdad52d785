package store

// distinct returns the distinct keys of xs, in the order first seen.
func distinct[T any](xs []T, key func(T) string) []string {
	seen := make(map[string]bool, len(xs))
	var out []string
	for _, x := range xs {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
