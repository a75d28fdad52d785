package main

// listen.go: `streaming-hub listen --forward-to URL`, a tenant's events
// (pull API, long poll) forwarded to a local URL signed like a delivery,
// for developing a receiver behind NAT.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/human"
)

func runListen(args []string, e env) int {
	c := newAPICmd(e, "listen", "--forward-to URL [--tenant T] [--event-type X] [--secret whsec_...] [flags]",
		`Forwards the tenant's events to a local URL, as the hub would deliver them: POST of the
event's data with the hub's headers and a Standard Webhooks signature (webhook-id,
webhook-timestamp, webhook-signature). It long-polls the pull API (GET /v1/events) one
event at a time and moves past an event only once the URL answered 2xx; otherwise it
retries that event with a growing pause. One line per attempt; Ctrl-C stops.

Without --secret a fresh signing secret is made and printed at start: verify with it.
It starts after the newest event unless --after gives a cursor (or --from-start).`, true)
	forward := c.fs.String("forward-to", "", "`URL` to POST each event to, such as http://localhost:3000/webhooks")
	types := c.fs.String("event-type", "", "only these event `types`, comma-separated, such as transaction.posted")
	secret := c.fs.String("secret", "", "sign with this `whsec_...` secret (default: a new one, printed at start)")
	after := c.fs.String("after", "", "start after this pull cursor")
	fromStart := c.fs.Bool("from-start", false, "start from the oldest retained event")
	count := c.fs.Int("count", 0, "stop after forwarding this many events (0: until interrupted)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *forward == "" {
		return c.usageError("--forward-to: required")
	}
	if u, err := url.Parse(*forward); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c.usageError("--forward-to: %q is not an http(s) URL", *forward)
	}
	if *secret == "" {
		*secret = destination.NewSecret()
	}
	if _, err := destination.SecretKey(*secret); err != nil {
		return c.usageError("--secret: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	l := &listener{c: c, to: *forward, secret: *secret, types: *types, http: &http.Client{Timeout: 30 * time.Second}}
	cursor := *after
	if cursor == "" && !*fromStart {
		var err error
		if cursor, err = l.newest(ctx); err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			return c.fail(err)
		}
	}
	fmt.Fprintf(e.stderr, "Forwarding events to %s; signing secret: %s\n", *forward, *secret)
	fmt.Fprintln(e.stderr, "Ctrl-C stops.")
	forwarded := 0
	for *count == 0 || forwarded < *count {
		ev, next, err := l.pull(ctx, cursor)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			var ae *apiError
			if errors.As(err, &ae) && ae.status == 429 {
				if sleep(ctx, max(ae.retryAfter, time.Second)) != nil {
					return exitOK
				}
				continue
			}
			return c.fail(err)
		}
		if ev == nil {
			if next != "" {
				cursor = next
			}
			continue
		}
		if !l.deliver(ctx, ev) {
			return exitOK // interrupted
		}
		cursor = next // acknowledged: the URL answered 2xx
		forwarded++
	}
	return exitOK
}

type listener struct {
	c      *apiCmd
	to     string
	secret string
	types  string
	http   *http.Client
}

type pullPage struct {
	Data       []eventView `json:"data"`
	NextCursor string      `json:"next_cursor"`
}

func (l *listener) get(ctx context.Context, q url.Values) (*pullPage, error) {
	if l.types != "" {
		q.Set("types", l.types)
	}
	raw, err := l.c.cl.call(ctx, "GET", "/v1/events", q, nil)
	if err != nil {
		return nil, err
	}
	var p pullPage
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("unexpected answer from %s: %v", l.c.cl.base, err)
	}
	return &p, nil
}

// newest returns the cursor after the newest retained event: listen
// forwards what arrives from now on.
func (l *listener) newest(ctx context.Context) (string, error) {
	cursor := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if cursor != "" {
			q.Set("after", cursor)
		}
		p, err := l.get(ctx, q)
		if err != nil {
			return "", err
		}
		if p.NextCursor != "" {
			cursor = p.NextCursor
		}
		if len(p.Data) == 0 {
			return cursor, nil
		}
	}
}

// pull long-polls for the one event after cursor; nil when none came.
func (l *listener) pull(ctx context.Context, cursor string) (*eventView, string, error) {
	q := url.Values{"limit": {"1"}, "wait": {followWait.String()}}
	if cursor != "" {
		q.Set("after", cursor)
	}
	p, err := l.get(ctx, q)
	if err != nil {
		return nil, "", err
	}
	if len(p.Data) == 0 {
		return nil, p.NextCursor, nil
	}
	return &p.Data[0], p.NextCursor, nil
}

// deliver POSTs ev until the URL answers 2xx; false when interrupted.
func (l *listener) deliver(ctx context.Context, ev *eventView) bool {
	body, ctype := []byte(ev.Data), hub.DefaultContentType
	if ev.DataBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*ev.DataBase64)
		if err == nil {
			body, ctype = b, "application/octet-stream"
		}
	}
	pause := time.Second
	for {
		start := time.Now()
		status, err := l.post(ctx, ev, body, ctype)
		if ctx.Err() != nil {
			return false
		}
		took := human.Duration(time.Since(start))
		outcome := ""
		switch {
		case err != nil:
			outcome = "error: " + oneLine(err.Error())
		default:
			outcome = fmt.Sprintf("%d %s", status, http.StatusText(status))
		}
		fmt.Fprintf(l.c.e.stdout, "%s  seq=%d  %s  %s  -> %s (%s)\n", time.Now().UTC().Format(time.RFC3339), ev.Sequence, ev.Type, ev.ID, outcome, took)
		if err == nil && status/100 == 2 {
			return true
		}
		fmt.Fprintf(l.c.e.stderr, "streaming-hub listen: retrying %s in %s\n", ev.ID, human.Duration(pause))
		if sleep(ctx, pause) != nil {
			return false
		}
		pause = min(pause*2, 30*time.Second)
	}
}

func (l *listener) post(ctx context.Context, ev *eventView, body []byte, ctype string) (int, error) {
	ts := time.Now().Unix()
	id := ev.ID // the webhook-id is the ce-id, as in a delivery
	sig, err := destination.Sign([]string{l.secret}, id, ts, body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", l.to, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	h := destination.EventHeaders(hub.Event{
		ID: ev.ID, Sequence: ev.Sequence, Type: ev.CEType, EventType: ev.Type, Source: ev.Source,
		Subject: ev.Subject, Time: ev.Time, TenantID: l.c.cl.tenant, SpecVersion: "1.0",
	}, id, "")
	for k, vs := range h {
		if len(vs) > 0 && vs[0] != "" {
			req.Header[k] = vs
		}
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "streaming-hub-listen/"+hub.Version)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(ts))
	req.Header.Set("webhook-signature", sig)
	resp, err := l.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}
