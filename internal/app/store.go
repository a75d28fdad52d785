package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/sqlite"
)

// OpenStore opens the driver that url names: postgres://... or
// sqlite:///path/to/file.db.
func OpenStore(ctx context.Context, url string, opts store.Options) (store.Store, error) {
	if path, ok := config.SQLitePath(url); ok {
		return sqlite.Open(ctx, path, opts)
	}
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return postgres.Open(ctx, url, opts)
	}
	return nil, fmt.Errorf("STREAMING_HUB_DATABASE_URL: unsupported scheme (want postgres:// or sqlite://)")
}
