package postgres

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// composite joins data-modifying statements into one statement, each a
// WITH query of its own, so that a transaction sends one statement where
// it would send several: each statement costs PostgreSQL CPU of its own
// (parse, bind, executor start, and the protocol's round of messages),
// and the ingest and completion transactions run for every event
// (docs/performance.md, "Statements per event").
//
// PostgreSQL runs every data-modifying WITH query to completion whether
// or not the final query reads it; they all see the snapshot the
// statement started with, so none may read what another writes (the
// final query reads their RETURNING instead), and no two may modify the
// same row.
type composite struct {
	ctes []string
	args []any
}

// writer is what queues a write: a composite, or a batch (batchWriter).
type writer interface {
	write(sql string, args ...any)
}

// write adds a statement as a WITH query; its parameters ($1...) are
// renumbered after those already added.
func (c *composite) write(sql string, args ...any) {
	c.ctes = append(c.ctes, "w"+strconv.Itoa(len(c.ctes))+" AS ("+shiftParams(sql, len(c.args))+")")
	c.args = append(c.args, args...)
}

// with adds WITH queries written together (name AS (...), ...), sharing
// one numbering of their parameters.
func (c *composite) with(ctes string, args ...any) {
	c.ctes = append(c.ctes, shiftParams(ctes, len(c.args)))
	c.args = append(c.args, args...)
}

// empty reports whether nothing was added.
func (c *composite) empty() bool { return len(c.ctes) == 0 }

// queue queues the composite statement in b with final as its query
// (parameters numbered after the WITH queries', args its own); nothing
// when nothing was added.
func (c *composite) queue(b *pgx.Batch, final string, args ...any) *pgx.QueuedQuery {
	sql := "WITH " + strings.Join(c.ctes, ",\n") + "\n" + shiftParams(final, len(c.args))
	return b.Queue(sql, append(append([]any{}, c.args...), args...)...)
}

var param = regexp.MustCompile(`\$(\d+)`)

// shiftParams adds by to every parameter number of sql.
func shiftParams(sql string, by int) string {
	if by == 0 {
		return sql
	}
	return param.ReplaceAllStringFunc(sql, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+by)
	})
}

// batchWriter queues each write as a statement of its own.
type batchWriter struct{ b *pgx.Batch }

func (w batchWriter) write(sql string, args ...any) { w.b.Queue(sql, args...) }
