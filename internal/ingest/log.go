package ingest

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger forwards franz-go's warnings and errors to slog; its info and
// debug lines are too chatty for a service log.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelInfo
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelWarn:
		lvl = slog.LevelWarn
	case kgo.LogLevelDebug:
		lvl = slog.LevelDebug
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
