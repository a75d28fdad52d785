// Package receivers holds the two consumers of the payment notifications,
// which sit at the two ends of the pattern's trade-off:
//
//   - Notifier needs the amount and the accounts to tell the customer, so it
//     fetches GET /payments/{id} for every notification it cares about, and
//     depends on the payments API being up;
//   - Counter only needs to know an approval happened, so it uses the
//     notification alone and calls nobody.
package receivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultFetchTimeout bounds one GET /payments/{id}.
const DefaultFetchTimeout = 2 * time.Second

// ErrPaymentGone means the source answered 404: the payment no longer exists.
var ErrPaymentGone = errors.New("payment no longer exists at the source")

// Payment is the receiver's view of GET /payments/{id}. It is declared here,
// not imported from the payments package: a receiver depends on the API's
// public JSON, not on the source's code.
type Payment struct {
	ID           string    `json:"id"`
	AmountCents  int64     `json:"amountCents"`
	Currency     string    `json:"currency"`
	PayerAccount string    `json:"payerAccount"`
	PayeeAccount string    `json:"payeeAccount"`
	Status       string    `json:"status"`
	Version      int64     `json:"version"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// PaymentsClient fetches payments from the payments API.
type PaymentsClient struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
}

// NewPaymentsClient returns a client for the API at baseURL. timeout bounds
// each fetch (0 means DefaultFetchTimeout); hc may be nil.
func NewPaymentsClient(baseURL string, timeout time.Duration, hc *http.Client) (*PaymentsClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("payments API URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payments API URL %q: want http(s)://host[:port]", baseURL)
	}
	if timeout < 0 {
		return nil, fmt.Errorf("fetch timeout %s must be >= 0", timeout)
	}
	if timeout == 0 {
		timeout = DefaultFetchTimeout
	}
	if hc == nil {
		hc = &http.Client{}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &PaymentsClient{base: u, http: hc, timeout: timeout}, nil
}

// Get fetches the current state of a payment. 404 -> ErrPaymentGone; any
// other failure (refused, timeout, 5xx) is an error the caller retries.
func (c *PaymentsClient) Get(ctx context.Context, id string) (Payment, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := c.base.JoinPath("payments", id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Payment{}, fmt.Errorf("build GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Payment{}, fmt.Errorf("fetch payment %s: %w", id, err) // *url.Error names method and URL
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 1<<20)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return Payment{}, fmt.Errorf("GET %s: %w", u, ErrPaymentGone)
	default:
		snippet, _ := io.ReadAll(io.LimitReader(body, 256))
		return Payment{}, fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	var p Payment
	if err := json.NewDecoder(body).Decode(&p); err != nil {
		return Payment{}, fmt.Errorf("GET %s: decode: %w", u, err)
	}
	if p.ID != id {
		return Payment{}, fmt.Errorf("GET %s: answered payment %q", u, p.ID)
	}
	return p, nil
}
