package ingest

import (
	"context"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
)

// kgoLogger forwards franz-go's warnings and errors to slog; its info and
// debug lines are too chatty for a service log.
type kgoLogger struct {
	l   *slog.Logger
	sec *kafkasec.Security
}

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

// refusals are franz-go's lines for a connection that failed; they repeat
// on every retry.
var refusals = []string{"unable to open connection", "unable to initialize sasl", "unable to request api versions"}

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
	if k.sec != nil && k.sec.Cause() != nil {
		// The security watch has logged the cause once, in one line;
		// franz-go's retries of the same refusal are debug.
		for _, r := range refusals {
			if strings.HasPrefix(msg, r) {
				lvl = slog.LevelDebug
			}
		}
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
