package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
)

// view is what every page template gets.
type view struct {
	S     *session
	CSRF  string
	Title string
	Nav   string // the menu entry to highlight
	Path  string // this page's path (the admin's tenant picker returns to it)
	// Tenants are the admin's choices of tenant (tenant pages only).
	Tenants []map[string]any
	// TenantName names a tenant session's own tenant in its badge.
	TenantName string
	Flash      string
	Data       any
}

var funcs = template.FuncMap{
	"link":       safeLink,
	"pretty":     prettyJSON,
	"when":       when,
	"utc":        when,
	"pct":        pct,
	"str":        str,
	"num":        num,
	"path":       url.PathEscape,
	"query":      url.QueryEscape,
	"dict":       dict,
	"hasType":    hasType,
	"othertypes": otherTypes,
	"ms":         millis,
	"permin":     perMinute,
	"etype":      eventTypeName,
	"defaultretry": func() string {
		steps := make([]string, len(hub.DefaultRetrySchedule))
		for i, d := range hub.DefaultRetrySchedule {
			steps[i] = duration(d)
		}
		return strings.Join(steps, ", ")
	},
	"plural":     plural,
	"dtlocal":    dtLocal,
	"tenantname": func(tenants []m, id string) string { return tenantNames(tenants)[id] },
}

// eventTypeName writes an event type as code that a narrow column breaks
// only after a dot ("transaction.<wbr>posted"), never inside a word: the
// stylesheet gives code.etype overflow-wrap break-word, which, unlike the
// anywhere other code has, leaves a table column at least as wide as the
// type's longest word.
func eventTypeName(v any) template.HTML {
	name := template.HTMLEscapeString(str(v))
	return template.HTML(`<code class="etype">` + strings.ReplaceAll(name, ".", ".<wbr>") + `</code>`)
}

// parsePages parses every page with the layout; now is the clock relative
// times are told against (the console's, so tests can fix it).
func parsePages(now func() time.Time) (map[string]*template.Template, error) {
	fm := template.FuncMap{}
	for k, v := range funcs {
		fm[k] = v
	}
	fm["when"] = func(v any) template.HTML { return timeTag(v, now()) }
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(fm).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes page name with data inside the layout.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, name string, data any) {
	c.renderView(w, r, status, name, view{S: s, Data: data})
}

func (c *Console) renderView(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	if v.S != nil {
		v.CSRF = v.S.CSRF
		if !v.S.Admin() {
			v.TenantName = c.tenantName(r, v.S)
		}
	}
	if v.Path == "" {
		v.Path = r.URL.Path
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, v); err != nil {
		c.deps.Logger.Error("rendering a console page failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderError shows the error page: 404 for what does not exist or is
// another tenant's, 403 for what needs the admin, and so on.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	title := http.StatusText(status)
	if status == http.StatusNotFound {
		title = "Not found"
	}
	c.renderView(w, r, status, "error", view{S: s, Title: title, Data: map[string]any{"Status": status, "Message": msg}})
}

func (c *Console) internalError(w http.ResponseWriter, r *http.Request, s *session, err error) {
	c.deps.Logger.Error("console request failed", "method", r.Method, "path", api.LoggedPath(r.URL.Path), "err", err)
	c.renderError(w, r, s, http.StatusInternalServerError, "Something went wrong on the hub; the log says what.")
}

// safeLink returns u as a URL to link to only when it is http(s);
// anything else ("javascript:", "data:") is shown as text by the caller.
func safeLink(u any) template.URL {
	s, _ := u.(string)
	p, err := url.Parse(s)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return template.URL(p.String())
}

// prettyJSON indents a JSON value for a <pre>; html/template escapes it.
// payloadLimit bounds the payload a delivery page shows.
const payloadLimit = 64 << 10

// boundedPayload writes an event's payload as the event page does
// (pretty-printed JSON, or its base64), cut at payloadLimit bytes; cut
// says it was.
func boundedPayload(e m) (text string, cut bool) {
	if b, ok := e["data_base64"].(string); ok && b != "" {
		text = b
	} else {
		text = prettyJSON(e["data"])
	}
	if len(text) > payloadLimit {
		text = strings.ToValidUTF8(text[:payloadLimit], "")
		cut = true
	}
	return text, cut
}

func prettyJSON(v any) string {
	if raw, ok := v.(string); ok {
		var out bytes.Buffer
		if json.Indent(&out, []byte(raw), "", "  ") == nil {
			return out.String()
		}
		return raw
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // html/template escapes; show the characters as sent
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// timeTag is how every page shows a time (docs/console.md): relative to now
// ("3 min ago", "in 5 s") in a <time> whose datetime and title hold the exact
// RFC 3339 time, shown on hover; "—" for none, and the text as sent when it
// is not a time.
func timeTag(v any, now time.Time) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "—"
		}
		t = *x
	case string:
		if x == "" {
			return "—"
		}
		p, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return template.HTML(template.HTMLEscapeString(x))
		}
		t = p
	default:
		return "—"
	}
	exact := t.UTC().Format(time.RFC3339)
	if t.Nanosecond() != 0 {
		exact = t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return template.HTML(`<time datetime="` + exact + `" title="` + exact + `">` + relative(t, now) + `</time>`)
}

// relative says how long before or after now t is, in the largest unit
// that fits ("just now", "42 s ago", "3 min ago", "in 5 h", "12 d ago");
// beyond 60 days, the date.
func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "min"
	case d < 48*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	case d < 60*24*time.Hour:
		n, unit = int64(d/(24*time.Hour)), "d"
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}

// dtLocal is a time as a datetime-local input shows it (UTC, to the
// second): what such an input sent is shown again as it is, RFC 3339 is
// converted, anything else is dropped (the input would refuse it).
func dtLocal(v string) string {
	if v == "" {
		return ""
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if _, err := time.Parse(layout, v); err == nil {
			return v
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC().Format("2006-01-02T15:04:05")
	}
	return ""
}

// when shows an RFC 3339 time as the API sent it, shortened; "—" for none
// (the chart's captions; pages use timeTag).
func when(v any) string {
	s, _ := v.(string)
	if s == "" {
		return "—"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func pct(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", f*100)
}

// str shows a value that may be null.
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case string:
		if x == "" {
			return "—"
		}
		return x
	case float64:
		return num(x)
	default:
		return fmt.Sprint(x)
	}
}

// num writes a number as number does ("12,345"); anything else as str.
func num(v any) string {
	f, ok := v.(float64)
	if !ok {
		return str(v)
	}
	return number(f)
}

func dict(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return m
}

// hasType reports whether a subscription's event_types hold t at schema
// major major (the picker's checked boxes).
func hasType(types any, t any, major any) bool {
	list, _ := types.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && m["type"] == t && majorOf(m["schema_major"]) == majorOf(major) {
			return true
		}
	}
	return false
}

func majorOf(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}

// otherTypes are a subscription's types the catalog's checkboxes do not
// show, as the free-text input takes them (type@major).
func otherTypes(types any, catalog []m) string {
	shown := map[string]bool{}
	for _, t := range catalog {
		majors, _ := t["schema_majors"].([]any)
		for _, mj := range majors {
			shown[fmt.Sprintf("%v@%d", t["type"], majorOf(mj))] = true
		}
	}
	list, _ := types.([]any)
	var out []string
	for _, e := range list {
		t, _ := e.(map[string]any)
		key := fmt.Sprintf("%v@%d", t["type"], majorOf(t["schema_major"]))
		if shown[key] {
			continue
		}
		if majorOf(t["schema_major"]) == 1 {
			key = fmt.Sprint(t["type"])
		}
		out = append(out, key)
	}
	return strings.Join(out, ", ")
}

// apiError is an API answer other than 2xx.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// call runs an API request as the session, on its tenant, and decodes the
// answer into out (nil: ignore it).
func (c *Console) call(r *http.Request, s *session, method, target string, body, out any) error {
	status, data, err := c.deps.API.Call(r.Context(), s.Principal, s.Tenant, method, target, body)
	if err != nil {
		return err
	}
	if status >= 300 {
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(data, &e)
		return &apiError{Status: status, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

// fail shows what an API call answered: its status and message as the
// error page (another tenant's object is the API's 404, so the 404 page).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	if ae, ok := err.(*apiError); ok {
		msg := ae.Message
		if ae.Status == http.StatusNotFound {
			msg = "There is nothing here, or it is not yours to see."
		}
		if ae.Code == api.CodeAuthUnavailable {
			c.renderError(w, r, s, http.StatusServiceUnavailable, "The access manager could not be asked, so nothing was done: try again in a moment.")
			return
		}
		if ae.Code == hub.EUNAVAILABLE || ae.Code == hub.ENOTRETAINED {
			// A replay's: what Kafka holds or answers, the operator's to know.
			c.renderError(w, r, s, ae.Status, msg)
			return
		}
		if ae.Status >= 500 {
			c.internalError(w, r, s, err)
			return
		}
		if ae.Status == http.StatusBadRequest && ae.Code == hub.EINVALID && s != nil && s.Admin() && s.Tenant == "" {
			msg = "Choose a tenant to act on first (the menu's tenant picker)."
		}
		c.renderError(w, r, s, ae.Status, msg)
		return
	}
	c.internalError(w, r, s, err)
}
