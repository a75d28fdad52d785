package api

import (
	"encoding/base64"
	"net/http"
	"strconv"

	hub "github.com/lerianstudio/streaming-hub"
)

// Lists answer {"data":[...],"next_cursor":...}; next_cursor is null on the
// last page.
type page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// Page size bounds of every list (docs/api.md).
const (
	defaultLimit = 50
	maxLimit     = 500
)

// limitParam reads ?limit=, answering 400 when it is not a positive integer
// within bounds.
func limitParam(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, hub.Errorf(hub.EINVALID, "limit: must be an integer from 1 to %d", max)
	}
	return n, nil
}

// Cursors are opaque to clients: base64 of the key of the last item.
func encodeCursor(key string) *string {
	s := base64.RawURLEncoding.EncodeToString([]byte(key))
	return &s
}

// pageParams reads a list's ?limit= (default 50, at most 500) and its
// ?cursor=.
func pageParams(r *http.Request) (limit int, cursor string, err error) {
	if limit, err = limitParam(r, defaultLimit, maxLimit); err != nil {
		return 0, "", err
	}
	if cursor, err = decodeCursor(r, "cursor"); err != nil {
		return 0, "", err
	}
	return limit, cursor, nil
}

func decodeCursor(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || !hub.PlainText(string(b)) {
		return "", hub.Errorf(hub.EINVALID, "%s: not a cursor this API issued", name)
	}
	return string(b), nil
}

// paginate trims a result fetched with limit+1 to limit and sets the cursor
// from the last item kept.
func paginate[T any](items []T, limit int, key func(T) string) page[T] {
	p := page[T]{Data: items}
	if p.Data == nil {
		p.Data = []T{}
	}
	if len(items) > limit {
		p.Data = items[:limit]
		p.NextCursor = encodeCursor(key(p.Data[limit-1]))
	}
	return p
}
