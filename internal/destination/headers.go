package destination

import (
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// sign adds to m's headers what every attempt carries besides the hub's
// own: Content-Type, User-Agent and the Standard Webhooks signature of the
// body at m.Time under secrets.
func sign(m *Message, secrets []string) error {
	ts := m.Time.Unix()
	sig, err := Sign(secrets, m.ID, ts, m.Body)
	if err != nil {
		return err
	}
	h := make(http.Header, len(m.Headers)+5)
	for k, vs := range m.Headers {
		h[k] = vs
	}
	h.Set("Content-Type", m.ContentType)
	h.Set("User-Agent", hub.UserAgent())
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	m.Headers = h
	return nil
}

// BrokerHeaders are m's headers as a broker carries them, by name: ce-*,
// webhook-*, traceparent and extensions in lower case, X-Lerian-* as
// written; Content-Type and User-Agent are left to the message's own
// properties.
func (m Message) BrokerHeaders() iter.Seq2[string, string] {
	type header struct{ name, value string }
	hs := make([]header, 0, len(m.Headers))
	for k, vs := range m.Headers {
		if len(vs) == 0 {
			continue
		}
		switch lk := strings.ToLower(k); {
		case lk == "content-type", lk == "user-agent":
		case strings.HasPrefix(lk, "x-lerian-"):
			hs = append(hs, header{http.CanonicalHeaderKey(k), vs[0]})
		default:
			hs = append(hs, header{lk, vs[0]})
		}
	}
	slices.SortFunc(hs, func(a, b header) int { return strings.Compare(a.name, b.name) })
	return func(yield func(string, string) bool) {
		for _, h := range hs {
			if !yield(h.name, h.value) {
				return
			}
		}
	}
}

// RoutingKey expands a routing key template: {type} is the event type,
// {tenant} the tenant.
func RoutingKey(template, eventType, tenant string) string {
	return strings.NewReplacer("{type}", eventType, "{tenant}", tenant).Replace(template)
}

// SentHeaders are h, the request headers of an attempt to t, as the
// attempt log keeps them: a header sent twice has its values joined with
// ", ", and secrets read hub.Redacted: Authorization, and t's auth header
// (auth type header).
func SentHeaders(t Target, h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		v := strings.Join(vs, ", ")
		if secretHeader(t, k) {
			v = hub.Redacted
		}
		out[k] = v
	}
	return out
}

// secretHeader is whether header name carries one of t's credentials.
func secretHeader(t Target, name string) bool {
	if strings.EqualFold(name, "Authorization") {
		return true
	}
	return t.AuthType == hub.AuthHeader && t.AuthHeaderName != "" && strings.EqualFold(name, t.AuthHeaderName)
}

// AnswerHeaders are h, a webhook's answer's headers, as the attempt log
// keeps them (hub.Attempt.ResponseHeaders): values joined with ", ", at
// most hub.MaxResponseHeaders of them (the first by name), each value cut
// to hub.MaxResponseHeaderValue bytes of valid UTF-8. Nil when h is.
func AnswerHeaders(h http.Header) map[string]string {
	if h == nil {
		return nil
	}
	flat := make(map[string]string, len(h))
	for k, vs := range h {
		flat[k] = strings.Join(vs, ", ")
	}
	return store.CleanHeaders(flat, hub.MaxResponseHeaders, hub.MaxResponseHeaderValue)
}
