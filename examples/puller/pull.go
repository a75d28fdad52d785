package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Event is one event as GET /v1/events answers it. Data is the payload when
// its content type is JSON; DataBase64 (decoded) otherwise.
type Event struct {
	ID              string          `json:"id"` // the ce-id: dedupe on it
	Sequence        int64           `json:"sequence"`
	Type            string          `json:"type"`
	TenantID        string          `json:"tenant_id"`
	Time            string          `json:"time"`
	DataContentType string          `json:"data_content_type"`
	Data            json.RawMessage `json:"data"`
	DataBase64      []byte          `json:"data_base64"`
}

// Puller reads one tenant's events in arrival order.
type Puller struct {
	Hub    string // base URL, e.g. http://localhost:8080
	Token  string // the tenant's API key
	Types  string // comma-separated event types; "" means all
	Limit  int    // events per page; 0 means the hub's default (100)
	Client *http.Client
}

// Run reads events after cursor until ctx ends. For each page it calls
// handle for every event, in order, then save with the page's next_cursor:
// a crash between the two re-reads the page, so handle must be idempotent
// (pull is at least once, like webhooks). It waits out 429s as Retry-After
// says and retries other failures with back-off.
func (p *Puller) Run(ctx context.Context, cursor string, handle func(Event) error, save func(cursor string) error) error {
	backoff := time.Second
	for {
		page, retryAfter, err := p.page(ctx, cursor)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || retryAfter > 0 {
			wait := retryAfter
			if err != nil {
				wait, backoff = backoff, min(2*backoff, time.Minute)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		backoff = time.Second
		for _, ev := range page.Data {
			if err := handle(ev); err != nil {
				return fmt.Errorf("event %s: %w", ev.ID, err) // the cursor stays before it
			}
		}
		if page.NextCursor != cursor {
			if err := save(page.NextCursor); err != nil {
				return err
			}
			cursor = page.NextCursor
		}
	}
}

type eventsPage struct {
	Data       []Event `json:"data"`
	NextCursor string  `json:"next_cursor"`
}

// page long-polls for the events after cursor (up to 30s when there are
// none). A 429 answers how long to wait instead.
func (p *Puller) page(ctx context.Context, cursor string) (eventsPage, time.Duration, error) {
	q := url.Values{"wait": {"30s"}, "after": {cursor}}
	if p.Types != "" {
		q.Set("types", p.Types)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	req, err := http.NewRequestWithContext(ctx, "GET", p.Hub+"/v1/events?"+q.Encode(), nil)
	if err != nil {
		return eventsPage{}, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 40 * time.Second} // longer than the wait
	}
	resp, err := client.Do(req)
	if err != nil {
		return eventsPage{}, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return eventsPage{}, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return eventsPage{}, time.Duration(max(secs, 1)) * time.Second, nil
	case resp.StatusCode != http.StatusOK:
		return eventsPage{}, 0, fmt.Errorf("GET /v1/events: %s: %s", resp.Status, body)
	}
	var page eventsPage
	if err := json.Unmarshal(body, &page); err != nil {
		return eventsPage{}, 0, fmt.Errorf("GET /v1/events: %w", err)
	}
	return page, 0, nil
}
