package main

// deliveries.go: `streaming-hub deliveries`, a subscription's delivery jobs.

import (
	"fmt"
	"io"
	"net/url"

	"github.com/lerianstudio/streaming-hub/internal/human"
)

var deliveriesGroup = group{
	name: "deliveries",
	about: "Inspects and replays a subscription's deliveries (one job per event and subscription).\n" +
		"STREAMING_HUB_TOKEN is a tenant API key, or the admin token with --tenant naming the tenant.",
	subs: []subcommand{
		{"list", "<subscription_id> [--status S]", "list a subscription's deliveries, newest first, one page", deliveriesList},
		{"get", "<delivery_id>", "show one delivery and its attempt log", deliveriesGet},
		{"replay", "<delivery_id>", "deliver the same event again, as a fresh delivery", deliveriesReplay},
		{"replay-subscription", "<subscription_id> [--status S] [--since T]", "replay a subscription's dead letters (or successes)", deliveriesReplaySubscription},
		{"search", "[--status S] [--subscription ID] [--event CE-ID] [--since T] [--until T]", "search all the tenant's deliveries, newest first, one page", deliveriesSearch},
	},
}

func runDeliveries(args []string, e env) int { return deliveriesGroup.run(args, e) }

// jobView is a delivery as the API shows it.
type jobView struct {
	ID               string  `json:"id"`
	SubscriptionID   string  `json:"subscription_id"`
	EventID          string  `json:"event_id"`
	Sequence         int64   `json:"sequence"`
	Status           string  `json:"status"`
	Attempts         int     `json:"attempts"`
	NextAttemptAt    *string `json:"next_attempt_at"`
	DeadLetterReason *string `json:"dead_letter_reason"`
	LastError        *string `json:"last_error"`
	CreatedAt        string  `json:"created_at"`
	CompletedAt      *string `json:"completed_at"`
	ReplayedAt       *string `json:"replayed_at"`
	ReplayedBy       *string `json:"replayed_by"`
	ReplayedAs       *string `json:"replayed_as"`
	AttemptLog       []struct {
		ID           string  `json:"id"`
		StartedAt    string  `json:"started_at"`
		DurationMS   int64   `json:"duration_ms"`
		StatusCode   *int    `json:"status_code"`
		Error        *string `json:"error"`
		ResponseBody string  `json:"response_body"`
	} `json:"attempt_log"`
}

// reason is why a delivery is where it is: its dead-letter reason, else its
// last error.
func (j *jobView) reason() string {
	if r := str(j.DeadLetterReason); r != "" {
		return r
	}
	return str(j.LastError)
}

func (j *jobView) print(w io.Writer) {
	fields(w,
		"id", j.ID,
		"subscription_id", j.SubscriptionID,
		"event_id", j.EventID,
		"sequence", itoa(j.Sequence),
		"status", j.Status,
		"attempts", itoa(j.Attempts),
		"next_attempt_at", str(j.NextAttemptAt),
		"dead_letter_reason", str(j.DeadLetterReason),
		"last_error", str(j.LastError),
		"created_at", j.CreatedAt,
		"completed_at", str(j.CompletedAt),
		"replayed_at", str(j.ReplayedAt),
		"replayed_by", str(j.ReplayedBy),
		"replayed_as", str(j.ReplayedAs),
	)
	if len(j.AttemptLog) == 0 {
		return
	}
	fmt.Fprintln(w, "\nattempt_log:")
	rows := make([][]string, len(j.AttemptLog))
	for i, a := range j.AttemptLog {
		status := ""
		if a.StatusCode != nil {
			status = itoa(*a.StatusCode)
		}
		rows[i] = []string{a.StartedAt, human.Millis(float64(a.DurationMS)), status, truncate(str(a.Error), 60), truncate(a.ResponseBody, 60)}
	}
	table(w, []string{"STARTED", "DURATION", "STATUS", "ERROR", "RESPONSE"}, rows)
}

func deliveriesList(args []string, e env) int {
	c := newAPICmd(e, "deliveries list", "<subscription_id> [--status S] [--cursor C] [--limit N] [flags]",
		"Lists a subscription's deliveries, newest first, one page; when there are more, the\nlast line on stderr says which --cursor to pass next.", true, "<subscription_id>")
	status := c.fs.String("status", "", "only deliveries in this status: pending, in_flight, succeeded or dead_lettered")
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	q := url.Values{}
	if *status != "" {
		q.Set("status", *status)
	}
	return listCmd(c, "/v1/subscriptions/"+pathEscape(c.args[0])+"/deliveries", p, q,
		[]string{"ID", "EVENT", "SEQ", "STATUS", "ATTEMPTS", "NEXT_ATTEMPT", "REASON"}, func(j jobView) []string {
			return []string{j.ID, j.EventID, itoa(j.Sequence), j.Status, itoa(j.Attempts), str(j.NextAttemptAt), truncate(j.reason(), 60)}
		},
		column[jobView]{"CREATED", func(j jobView) string { return j.CreatedAt }},
		column[jobView]{"COMPLETED", func(j jobView) string { return str(j.CompletedAt) }},
		column[jobView]{"REPLAYED_AS", func(j jobView) string { return str(j.ReplayedAs) }},
		column[jobView]{"LAST_ERROR", func(j jobView) string { return str(j.LastError) }})
}

func deliveriesGet(args []string, e env) int {
	c := newAPICmd(e, "deliveries get", "<delivery_id> [flags]", "Shows one delivery and its attempt log.", true, "<delivery_id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var j jobView
	return c.do("GET", "/v1/deliveries/"+pathEscape(c.args[0]), nil, nil, &j, j.print)
}

func deliveriesReplay(args []string, e env) int {
	c := newAPICmd(e, "deliveries replay", "<delivery_id> [flags]",
		"Delivers the same event to the same subscription again, as a fresh delivery (shown).", true, "<delivery_id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var j jobView
	return c.do("POST", "/v1/deliveries/"+pathEscape(c.args[0])+"/replay", nil, []byte("{}"), &j, j.print)
}

func deliveriesReplaySubscription(args []string, e env) int {
	c := newAPICmd(e, "deliveries replay-subscription", "<subscription_id> [--status S] [--since T] [flags]",
		`Replays a subscription's deliveries that ended in --status since --since: a fresh
delivery each, at most 10,000 per call. Deliveries already replayed are skipped, so
running it again replays the rest.`, true, "<subscription_id>")
	status := c.fs.String("status", "", "dead_lettered (default) or succeeded")
	since := c.fs.String("since", "", "RFC 3339 time, such as 2026-01-02T15:04:05Z (default: all)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	body := map[string]string{}
	if *status != "" {
		body["status"] = *status
	}
	if *since != "" {
		body["since"] = *since
	}
	var r struct {
		Replayed        int    `json:"replayed"`
		Matched         int    `json:"matched"`
		AlreadyReplayed int    `json:"already_replayed"`
		Reason          string `json:"reason,omitempty"`
	}
	return c.do("POST", "/v1/subscriptions/"+pathEscape(c.args[0])+"/replay", nil, body, &r, func(w io.Writer) {
		fmt.Fprintf(w, "replayed: %d\nmatched: %d\nalready replayed: %d\n", r.Replayed, r.Matched, r.AlreadyReplayed)
		if r.Reason != "" {
			fmt.Fprintf(w, "reason: %s\n", r.Reason)
		}
	})
}
