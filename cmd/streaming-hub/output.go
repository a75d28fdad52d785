package main

// output.go: the two output forms of the client commands. -o json prints
// the API's answer as it came, pretty-printed; the table form prints lists
// as aligned columns and single resources as "key: value" lines.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// printJSON writes raw JSON indented, keys in the order they came.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("the answer is not JSON: %v", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// table writes a header and rows as aligned columns.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	writeRow(tw, header)
	for _, r := range rows {
		writeRow(tw, r)
	}
	tw.Flush()
}

func writeRow(w io.Writer, cells []string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		io.WriteString(w, cell(c))
	}
	io.WriteString(w, "\n")
}

// streamTable prints rows as they come (pulled events while following):
// columns at least minWidths wide and as wide as the widest cell so far, the
// header with the first rows.
type streamTable struct {
	w         io.Writer
	header    []string
	minWidths []int
	widths    []int
}

func (st *streamTable) write(rows [][]string) {
	if st.widths == nil {
		st.widths = make([]int, len(st.header))
		copy(st.widths, st.minWidths)
		rows = append([][]string{st.header}, rows...)
	}
	for _, r := range rows {
		for i, c := range r {
			st.widths[i] = max(st.widths[i], len([]rune(cell(c))))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			c = cell(c)
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", st.widths[i]-len([]rune(c))+2))
			}
		}
		b.WriteByte('\n')
	}
	io.WriteString(st.w, b.String())
}

// fields writes "key: value" lines, values aligned; kv alternates keys and
// values.
func fields(w io.Writer, kv ...string) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], cell(kv[i+1]))
	}
	tw.Flush()
}

// cell makes a value fit one table cell: one line, no tabs, "-" if empty.
func cell(s string) string {
	s = oneLine(s)
	if s == "" {
		return "-"
	}
	return s
}

// oneLine replaces control characters (newlines, tabs) with spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// str shows an optional string.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func itoa[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// joinMap shows a map as "k=v, k=v", sorted by key.
func joinMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

// listPage is the shape of every list answer but /v1/events.
type listPage[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// pageFlags are --cursor and --limit of list subcommands.
type pageFlags struct {
	cursor string
	limit  int
	all    bool
}

func (c *apiCmd) pageFlags() *pageFlags {
	p := &pageFlags{}
	c.fs.StringVar(&p.cursor, "cursor", "", "start after this cursor (the next_cursor of the previous page)")
	c.fs.IntVar(&p.limit, "limit", 0, "page size, 1 to 500 (default 50)")
	c.fs.BoolVar(&p.all, "all", false, "walk every page (from --cursor, if given) and print them as one list")
	return p
}

func (p *pageFlags) query() url.Values {
	q := url.Values{}
	if p.cursor != "" {
		q.Set("cursor", p.cursor)
	}
	if p.limit != 0 {
		q.Set("limit", strconv.Itoa(p.limit))
	}
	return q
}

// more tells, on stderr, how to get the next page of a list.
func (c *apiCmd) more(next *string) {
	if next != nil && *next != "" {
		fmt.Fprintf(c.e.stderr, "more: --cursor %s\n", *next)
	}
}

// listCmd is a list subcommand's fetch and print: one page, then the
// cursor of the next on stderr.
//
// wide are the columns -o wide adds after the table's own (kubectl's
// -o wide): what the narrow table leaves out to stay on one screen line.
func listCmd[T any](c *apiCmd, path string, p *pageFlags, extra url.Values, header []string, row func(T) []string, wide ...column[T]) int {
	q := p.query()
	for k, vs := range extra {
		q[k] = vs
	}
	var (
		raw  []byte
		pg   listPage[T]
		code int
	)
	if p.all {
		raw, code = allPages(c, path, q)
	} else {
		raw, code = c.send(context.Background(), "GET", path, q, nil)
	}
	if code != exitOK {
		return code
	}
	if err := json.Unmarshal(raw, &pg); err != nil {
		return c.fail(fmt.Errorf("unexpected answer from %s: %v", c.cl.base, err))
	}
	code = c.print(raw, nil, func(w io.Writer) {
		rows := make([][]string, len(pg.Data))
		for i, item := range pg.Data {
			rows[i] = row(item)
		}
		if c.output == "wide" {
			header = append(append([]string{}, header...), columnNames(wide)...)
			for i, item := range pg.Data {
				for _, col := range wide {
					rows[i] = append(rows[i], col.value(item))
				}
			}
		}
		table(w, header, rows)
	})
	c.more(pg.NextCursor)
	return code
}

// column is one column of a list's -o wide form: its header and its value.
type column[T any] struct {
	name  string
	value func(T) string
}

func columnNames[T any](cols []column[T]) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names
}

// maxPages bounds --all, against a server that never stops paging.
const maxPages = 100_000

// allPages follows next_cursor from q's page to the last, and returns one
// answer of the list's shape holding every item, next_cursor null.
func allPages(c *apiCmd, path string, q url.Values) ([]byte, int) {
	items := []json.RawMessage{}
	for range maxPages {
		raw, code := c.send(context.Background(), "GET", path, q, nil)
		if code != exitOK {
			return nil, code
		}
		var pg listPage[json.RawMessage]
		if err := json.Unmarshal(raw, &pg); err != nil {
			return nil, c.fail(fmt.Errorf("unexpected answer from %s: %v", c.cl.base, err))
		}
		items = append(items, pg.Data...)
		if pg.NextCursor == nil || *pg.NextCursor == "" || *pg.NextCursor == q.Get("cursor") {
			break
		}
		q.Set("cursor", *pg.NextCursor)
	}
	out, err := json.Marshal(map[string]any{"data": items, "next_cursor": nil})
	if err != nil {
		return nil, c.fail(err)
	}
	return out, exitOK
}
