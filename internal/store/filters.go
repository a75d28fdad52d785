package store

import (
	"sync"

	hub "github.com/lerianstudio/streaming-hub"
)

// filterCache holds parsed filters by the text of their column. Ingest
// reads every subscription of a batch's tenants in its transaction (a
// change applies to the very next record), so the column is read each
// time, but its text is parsed once: the key is the text itself, so an
// entry can never be stale.
var filterCache = struct {
	sync.RWMutex
	m map[string][]hub.Filter
}{m: make(map[string][]hub.Filter)}

// maxCachedFilters bounds the cache; past it the cache starts over (a
// re-parse is cheap, an unbounded map is not).
const maxCachedFilters = 10000

// Filters returns the parsed filters of a subscription's filters column
// (nil for NULL or none), parsing each distinct text once. The column was
// validated when it was written; should it hold anything unparsable, the
// subscription gets a filter no event satisfies: it asked for a subset, and
// delivering everything would be the worse surprise.
func Filters(column []byte) []hub.Filter {
	if len(column) == 0 {
		return nil
	}
	filterCache.RLock()
	f, ok := filterCache.m[string(column)]
	filterCache.RUnlock()
	if ok {
		return f
	}
	f, err := hub.ParseFilters(column)
	if err != nil {
		f = []hub.Filter{unsatisfiable}
	}
	filterCache.Lock()
	if len(filterCache.m) >= maxCachedFilters {
		filterCache.m = make(map[string][]hub.Filter)
	}
	filterCache.m[string(column)] = f
	filterCache.Unlock()
	return f
}

// unsatisfiable holds for no event: any of nothing.
var unsatisfiable = hub.Filter{Dialect: hub.FilterAny}
