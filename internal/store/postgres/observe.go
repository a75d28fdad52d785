package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// observer is a pgx tracer that tells store.Options.OnStatement of every
// statement the pool runs, with its time on the client (sent to result
// read). A batch's statements are pipelined: each is timed from the
// previous one's result, so their times add up to the batch's.
type observer struct {
	on func(sql string, took time.Duration)
}

type observeKey struct{}

type observed struct {
	sql   string
	start time.Time
}

func (o observer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, observeKey{}, &observed{sql: data.SQL, start: time.Now()})
}

func (o observer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(observeKey{}).(*observed); ok {
		o.on(s.sql, time.Since(s.start))
	}
}

func (o observer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, observeKey{}, &observed{start: time.Now()})
}

func (o observer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if s, ok := ctx.Value(observeKey{}).(*observed); ok {
		now := time.Now()
		o.on(data.SQL, now.Sub(s.start))
		s.start = now
	}
}

func (o observer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
