package main

// events.go: `streaming-hub events pull`, the tenant's events through the
// pull API (GET /v1/events), once or following new ones.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

var eventsGroup = group{
	name: "events",
	about: "Reads a tenant's events through the pull API, in arrival order. STREAMING_HUB_TOKEN is a\n" +
		"tenant API key, or the admin token with --tenant naming the tenant.",
	subs: []subcommand{
		{"pull", "[--after C] [--types T,T] [--limit N] [--wait D] [--follow]", "read one page of events, or follow new ones", eventsPull},
		{"get", "<ce-id>", "show one event and its deliveries", eventsGet},
		{"types", "", "list the event types the tenant can subscribe to", eventsTypes},
	},
}

func runEvents(args []string, e env) int { return eventsGroup.run(args, e) }

// followWait is the long poll of --follow when --wait is not given.
const followWait = 30 * time.Second

// eventView is one pulled event; data is JSON, or base64 in data_base64.
type eventView struct {
	ID         string          `json:"id"`
	Sequence   int64           `json:"sequence"`
	Type       string          `json:"type"`
	CEType     string          `json:"ce_type"`
	Source     string          `json:"source"`
	Subject    string          `json:"subject"`
	Time       string          `json:"time"`
	Data       json.RawMessage `json:"data"`
	DataBase64 *string         `json:"data_base64"`
}

func (ev *eventView) row() []string {
	data := ""
	switch {
	case len(ev.Data) > 0:
		data = string(compactJSON(ev.Data))
	case ev.DataBase64 != nil:
		data = "base64:" + *ev.DataBase64
	}
	return []string{itoa(ev.Sequence), ev.ID, ev.Type, ev.Subject, ev.Time, truncate(data, 80)}
}

var eventsHeader = []string{"SEQ", "ID", "TYPE", "SUBJECT", "TIME", "DATA"}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

func eventsPull(args []string, e env) int {
	c := newAPICmd(e, "events pull", "[--after C] [--types T,T] [--limit N] [--wait D] [--follow [--count N]] [flags]",
		`Reads the tenant's events in arrival order, from the oldest retained one or after the
cursor --after. Without --follow it prints one page and, on stderr, the --after that
continues it. With --follow it long-polls for new events, passing each next_cursor back,
and prints them as they arrive until interrupted (or --count events).

With -o json or -o yaml each page is printed as the API answered it (empty pages are
skipped when following; with yaml each page is one document after "---").`, true)
	after := c.fs.String("after", "", "start after this cursor (a next_cursor); default: the oldest retained event")
	types := c.fs.String("types", "", "only these event types, comma-separated, such as transaction.posted,balance.updated")
	limit := c.fs.Int("limit", 0, "events per page, 1 to 1000 (default 50)")
	wait := c.fs.Duration("wait", 0, "hold an empty answer until an event arrives, up to this long (at most 30s; --follow defaults to 30s)")
	follow := c.fs.Bool("follow", false, "keep pulling and print events as they arrive, until interrupted")
	count := c.fs.Int("count", 0, "with --follow, stop after this many events (0: never)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *count < 0 || *limit < 0 {
		return c.usageError("--count and --limit must not be negative")
	}
	if *follow && !c.set["wait"] {
		*wait = followWait
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cursor, printed := *after, 0
	stream := &streamTable{w: e.stdout, header: eventsHeader, minWidths: []int{4, 24, 18, 8, 27}}
	for {
		q := url.Values{}
		if cursor != "" {
			q.Set("after", cursor)
		}
		if *types != "" {
			q.Set("types", *types)
		}
		n := *limit
		if *follow && *count > 0 && (n == 0 || n > *count-printed) {
			n = *count - printed // print no more than asked
		}
		if n > 0 {
			q.Set("limit", strconv.Itoa(n))
		}
		if *wait > 0 {
			q.Set("wait", wait.String())
		}
		raw, err := c.cl.call(ctx, "GET", "/v1/events", q, nil)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK // interrupted
			}
			var ae *apiError
			if *follow && errors.As(err, &ae) && ae.status == 429 {
				if sleep(ctx, max(ae.retryAfter, time.Second)) != nil {
					return exitOK
				}
				continue
			}
			return c.fail(err)
		}
		var page struct {
			Data       []eventView `json:"data"`
			NextCursor string      `json:"next_cursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return c.fail(fmt.Errorf("unexpected answer from %s: %v", c.cl.base, err))
		}
		if !*follow {
			code := c.print(raw, nil, func(w io.Writer) {
				rows := make([][]string, len(page.Data))
				for i := range page.Data {
					rows[i] = page.Data[i].row()
				}
				table(w, eventsHeader, rows)
			})
			if (c.output == "table" || c.output == "wide") && page.NextCursor != "" {
				fmt.Fprintf(e.stderr, "next: --after %s\n", page.NextCursor)
			}
			return code
		}
		if len(page.Data) > 0 {
			switch c.output {
			case "json":
				if err := printJSON(e.stdout, raw); err != nil {
					return c.fail(err)
				}
			case "yaml":
				// One YAML document per page.
				fmt.Fprintln(e.stdout, "---")
				if err := printYAML(e.stdout, raw); err != nil {
					return c.fail(err)
				}
			default:
				rows := make([][]string, len(page.Data))
				for i := range page.Data {
					rows[i] = page.Data[i].row()
				}
				stream.write(rows)
			}
			printed += len(page.Data)
		}
		if page.NextCursor != "" {
			cursor = page.NextCursor
		}
		if *count > 0 && printed >= *count {
			return exitOK
		}
		if len(page.Data) == 0 && *wait == 0 && sleep(ctx, time.Second) != nil {
			return exitOK // --wait 0s: poll once a second, not in a busy loop
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
