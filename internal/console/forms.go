package console

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// Bounds of a POSTed form, as the handlers that read them set them: the
// sign-in form and every other action.
const (
	maxSignInForm = 64 << 10
	maxActionForm = 1 << 20
)

// badFormText reads a POSTed form, bounded, and names the first field (in
// name order) whose name or value is not valid UTF-8 (docs/security.md): the API
// would receive it re-encoded with U+FFFD, so it is refused before any
// handler reads it. "" when the form is clean, or cannot be read (the
// handler answers that as it always has: no CSRF token, a 403).
func badFormText(w http.ResponseWriter, r *http.Request) string {
	limit := int64(maxActionForm)
	if r.URL.Path == Prefix+"signin" {
		limit = maxSignInForm
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseMultipartForm(limit); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return ""
	}
	names := make([]string, 0, len(r.Form))
	for name := range r.Form {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !utf8.ValidString(name) {
			return "a form field's name is not valid UTF-8"
		}
		for _, v := range r.Form[name] {
			if !utf8.ValidString(v) {
				return formField(name) + ": not valid UTF-8"
			}
		}
	}
	return ""
}

// formField is how a message names a field: bounded, quoted when it holds
// what is not plain text.
func formField(name string) string {
	if len(name) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	if name == "" || !hub.PlainText(name) {
		return strconv.Quote(name)
	}
	return name
}
