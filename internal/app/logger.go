package app

import (
	"io"
	"log/slog"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// NewLogger builds the process logger: JSON in serve, text in dev, unless
// STREAMING_HUB_LOG_FORMAT says otherwise.
func NewLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
