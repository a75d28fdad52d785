package main

// insight.go: the insight subcommands
// (docs/insight.md):
// keys list, events get and types, deliveries search, subscriptions health
// and test, admin health.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/lerianstudio/streaming-hub/internal/human"
)

type keyView struct {
	ID         string  `json:"id"`
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
}

func keysList(args []string, e env) int {
	c := newAPICmd(e, "keys list", "<tenant> [flags]",
		"Lists a tenant's API keys with when each was created and last used (to the minute);\nnever a secret. Needs the admin token.", false, "<tenant>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var keys struct {
		Data []keyView `json:"data"`
	}
	return c.do("GET", "/v1/tenants/"+pathEscape(c.args[0])+"/keys", nil, nil, &keys, func(w io.Writer) {
		rows := make([][]string, len(keys.Data))
		for i, k := range keys.Data {
			rows[i] = []string{k.ID, k.CreatedAt, str(k.LastUsedAt)}
		}
		table(w, []string{"ID", "CREATED", "LAST_USED"}, rows)
	})
}

func eventsGet(args []string, e env) int {
	c := newAPICmd(e, "events get", "<ce-id> [flags]",
		"Shows one of the tenant's events by its ce-id, with what happened to it: one delivery\nper subscription that matched it.", true, "<ce-id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var ev struct {
		eventView
		Deliveries []struct {
			ID             string  `json:"id"`
			SubscriptionID string  `json:"subscription_id"`
			Status         string  `json:"status"`
			Attempts       int     `json:"attempts"`
			LastError      *string `json:"last_error"`
			CreatedAt      string  `json:"created_at"`
		} `json:"deliveries"`
	}
	return c.do("GET", "/v1/events/"+pathEscape(c.args[0]), nil, nil, &ev, func(w io.Writer) {
		data := ev.Data
		if len(data) == 0 {
			data, _ = json.Marshal(ev.DataBase64)
		}
		fields(w, "id", ev.ID, "sequence", itoa(ev.Sequence), "type", ev.Type, "source", ev.Source,
			"time", ev.Time, "data", truncate(string(compactJSON(data)), 200))
		fmt.Fprintln(w, "\ndeliveries:")
		rows := make([][]string, len(ev.Deliveries))
		for i, d := range ev.Deliveries {
			rows[i] = []string{d.ID, d.SubscriptionID, d.Status, itoa(d.Attempts), truncate(str(d.LastError), 60)}
		}
		table(w, []string{"ID", "SUBSCRIPTION", "STATUS", "ATTEMPTS", "LAST_ERROR"}, rows)
	})
}

func eventsTypes(args []string, e env) int {
	c := newAPICmd(e, "events types", "[flags]",
		"Lists the event types the tenant can subscribe to: those its traffic carried, those\nproducer manifests list, and the hub's own operational events.", true)
	if code, ok := c.parse(args); !ok {
		return code
	}
	var cat struct {
		Data []struct {
			Type         string  `json:"type"`
			SchemaMajors []int   `json:"schema_majors"`
			Source       string  `json:"source"`
			LastSeenAt   *string `json:"last_seen_at"`
			InManifest   bool    `json:"in_manifest"`
			Description  string  `json:"description"`
		} `json:"data"`
	}
	return c.do("GET", "/v1/event-types", nil, nil, &cat, func(w io.Writer) {
		rows := make([][]string, len(cat.Data))
		for i, t := range cat.Data {
			majors := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(t.SchemaMajors)), ","), "[]")
			rows[i] = []string{t.Type, majors, t.Source, str(t.LastSeenAt), fmt.Sprint(t.InManifest), truncate(t.Description, 50)}
		}
		table(w, []string{"TYPE", "MAJORS", "SOURCE", "LAST_SEEN", "IN_MANIFEST", "DESCRIPTION"}, rows)
	})
}

func deliveriesSearch(args []string, e env) int {
	c := newAPICmd(e, "deliveries search", "[--status S] [--subscription ID] [--event CE-ID] [--since T] [--until T] [--cursor C] [--limit N] [flags]",
		"Searches all the tenant's deliveries, newest first, one page; when there are more, the\nlast line on stderr says which --cursor to pass next.", true)
	status := c.fs.String("status", "", "pending, in_flight, succeeded or dead_lettered")
	sub := c.fs.String("subscription", "", "only this subscription's")
	event := c.fs.String("event", "", "only this event's (its ce-id)")
	since := c.fs.String("since", "", "created at or after this RFC 3339 time")
	until := c.fs.String("until", "", "created before this RFC 3339 time")
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "subscription_id": *sub, "event_id": *event, "since": *since, "until": *until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return listCmd(c, "/v1/deliveries", p, q,
		[]string{"ID", "SUBSCRIPTION", "EVENT", "STATUS", "ATTEMPTS", "CREATED", "REASON"}, func(j jobView) []string {
			return []string{j.ID, j.SubscriptionID, j.EventID, j.Status, itoa(j.Attempts), j.CreatedAt, truncate(j.reason(), 60)}
		})
}

// healthView is what a subscription's health and the hub's share: the
// attempts over a window, their latency and the window's buckets.
type healthView struct {
	Window      string   `json:"window"`
	Attempts    int64    `json:"attempts"`
	Successes   int64    `json:"successes"`
	Failures    int64    `json:"failures"`
	SuccessRate *float64 `json:"success_rate"`
	LatencyMS   struct {
		P50, P95, P99 *float64
	} `json:"latency_ms"`
	LastSuccessAt *string `json:"last_success_at"`
	LastFailureAt *string `json:"last_failure_at"`
	BucketSeconds int64   `json:"bucket_seconds"`
	Buckets       []struct {
		Start     string   `json:"start"`
		Successes int64    `json:"successes"`
		Failures  int64    `json:"failures"`
		P99MS     *float64 `json:"p99_ms"`
	} `json:"buckets"`
}

// fields are the summary's "key: value" pairs, in the API's order.
func (h *healthView) fields() []string {
	var rate *float64
	if h.SuccessRate != nil {
		r := *h.SuccessRate * 100
		rate = &r
	}
	return []string{"window", h.Window, "attempts", itoa(h.Attempts), "successes", itoa(h.Successes), "failures", itoa(h.Failures),
		"success_rate", optFloat(rate, "%.1f%%"),
		"latency", latency(h.LatencyMS.P50, h.LatencyMS.P95, h.LatencyMS.P99),
		"last_success_at", str(h.LastSuccessAt), "last_failure_at", str(h.LastFailureAt)}
}

// latency writes the API's percentiles in milliseconds as durations:
// "p50 12 ms, p95 40 ms, p99 1.2 s"; empty when there were no attempts.
func latency(p50, p95, p99 *float64) string {
	var parts []string
	for _, p := range []struct {
		name string
		ms   *float64
	}{{"p50", p50}, {"p95", p95}, {"p99", p99}} {
		if p.ms != nil {
			parts = append(parts, p.name+" "+human.Millis(*p.ms))
		}
	}
	return strings.Join(parts, ", ")
}

// optMillis writes milliseconds as a duration, or "-" for none.
func optMillis(ms *float64) string {
	if ms == nil {
		return "-"
	}
	return human.Millis(*ms)
}

// optFloat formats f, or is empty for none.
func optFloat(f *float64, format string) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf(format, *f)
}

func subscriptionsHealth(args []string, e env) int {
	c := newAPICmd(e, "subscriptions health", "<id> [--window D] [flags]",
		"Shows a subscription's health over a window: attempts, success rate, latency, the last\nerror, its backlog and breaker.", true, "<id>")
	window := c.fs.String("window", "", "Go duration up to STREAMING_HUB_HEALTH_WINDOW (default 24h)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var h struct {
		healthView
		LastError *string `json:"last_error"`
		Backlog   struct {
			Pending      int64 `json:"pending"`
			InFlight     int64 `json:"in_flight"`
			DeadLettered int64 `json:"dead_lettered"`
		} `json:"backlog"`
		BreakerState string `json:"breaker_state"`
	}
	return c.do("GET", "/v1/subscriptions/"+pathEscape(c.args[0])+"/health", windowQuery(*window), nil, &h, func(w io.Writer) {
		fields(w, append(h.fields(), "last_error", str(h.LastError),
			"backlog", fmt.Sprintf("pending %d, in_flight %d, dead_lettered %d", h.Backlog.Pending, h.Backlog.InFlight, h.Backlog.DeadLettered),
			"breaker_state", h.BreakerState)...)
	})
}

func windowQuery(window string) url.Values {
	q := url.Values{}
	if window != "" {
		q.Set("window", window)
	}
	return q
}

var adminGroup = group{
	name: "admin",
	about: "Looks at the whole hub through the admin API: STREAMING_HUB_TOKEN must be the admin token\n" +
		"(or an operator's JWT, with Lerian's access manager).",
	subs: []subcommand{
		{"health", "[--window D]", "every tenant's delivery attempts over a window: success rate, latency, busy buckets", adminHealth},
	},
}

func runAdmin(args []string, e env) int { return adminGroup.run(args, e) }

// adminHealth: GET /v1/admin/health, printed as subscriptions health is,
// then the buckets that had attempts (-o json shows every bucket).
func adminHealth(args []string, e env) int {
	c := newAPICmd(e, "admin health", "[--window D] [flags]",
		"Shows every tenant's delivery attempts over a window, from the same rollups as a\n"+
			"subscription's health: attempts, success rate, latency (p50, p95, p99), the last\n"+
			"success and failure, then each bucket that had attempts. Needs the admin token.", false)
	window := c.fs.String("window", "", "Go duration up to STREAMING_HUB_HEALTH_WINDOW (default 24h)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var h healthView
	return c.do("GET", "/v1/admin/health", windowQuery(*window), nil, &h, func(w io.Writer) {
		fields(w, append(h.fields(), "bucket_seconds", itoa(h.BucketSeconds))...)
		var rows [][]string
		for _, b := range h.Buckets {
			if b.Successes+b.Failures > 0 {
				rows = append(rows, []string{b.Start, itoa(b.Successes), itoa(b.Failures), optMillis(b.P99MS)})
			}
		}
		fmt.Fprintf(w, "\nbuckets with attempts (%d of %d):\n", len(rows), len(h.Buckets))
		table(w, []string{"START", "SUCCESSES", "FAILURES", "P99"}, rows)
	})
}

func subscriptionsTest(args []string, e env) int {
	c := newAPICmd(e, "subscriptions test", "<id> [--type T] [--data JSON] [flags]",
		`Sends one signed test event to the subscription's destination now, whatever its state,
with X-Lerian-Test: true and a ce-id test_<random>; nothing is stored or retried. It
spends the tenant's pull rate limit.`, true, "<id>")
	typ := c.fs.String("type", "", "event type (default hub.test)")
	data := c.fs.String("data", "", `JSON payload (default {"test":true})`)
	if code, ok := c.parse(args); !ok {
		return code
	}
	body := map[string]any{}
	if *typ != "" {
		body["type"] = *typ
	}
	if *data != "" {
		if !json.Valid([]byte(*data)) {
			return c.usageError("--data: not valid JSON")
		}
		body["data"] = json.RawMessage(*data)
	}
	var r struct {
		DeliveryID   string  `json:"delivery_id"`
		StatusCode   *int    `json:"status_code"`
		DurationMS   int64   `json:"duration_ms"`
		ResponseBody string  `json:"response_body"`
		Error        *string `json:"error"`
	}
	return c.do("POST", "/v1/subscriptions/"+pathEscape(c.args[0])+"/test", nil, body, &r, func(w io.Writer) {
		status := ""
		if r.StatusCode != nil {
			status = itoa(*r.StatusCode)
		}
		fields(w, "delivery_id", r.DeliveryID, "status_code", status, "duration", human.Millis(float64(r.DurationMS)),
			"response_body", truncate(r.ResponseBody, 200), "error", str(r.Error))
	})
}
