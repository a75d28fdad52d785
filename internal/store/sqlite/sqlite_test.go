package sqlite_test

import (
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

func BenchmarkIngest(b *testing.B) {
	storetest.BenchIngest(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

func BenchmarkDispatch(b *testing.B) {
	storetest.BenchDispatch(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}
