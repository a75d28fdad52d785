package main

// client.go: the HTTP client of the hub's API and how its errors read.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// requestTimeout bounds one API call (long polls add their wait).
const requestTimeout = 30 * time.Second

// client calls the API as one token, acting on tenant when it is set.
type client struct {
	base   string // scheme://host[:port][/prefix], no trailing slash
	token  string
	tenant string
	http   *http.Client
}

func newClient(server, token, tenant string) (*client, error) {
	server = strings.TrimRight(strings.TrimSpace(server), "/")
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not an http(s) URL", server)
	}
	return &client{base: server, token: token, tenant: tenant, http: &http.Client{}}, nil
}

// apiError is an answer outside 2xx.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter time.Duration // from Retry-After, on 429
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message)
}

// call sends one request and returns the answer's body; a non-2xx answer
// is an *apiError. body, when not nil, is sent as JSON.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout+waitOf(query))
	defer cancel()
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "streaming-hub-cli/"+hub.Version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.tenant != "" {
		req.Header.Set("X-Tenant-Id", c.tenant)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 == 2 {
		return data, nil
	}
	return nil, toAPIError(resp, data)
}

// toAPIError reads {"error":{"code","message"}}; anything else (a proxy's
// page, say) is shown by its status and the start of its body.
func toAPIError(resp *http.Response, data []byte) *apiError {
	e := &apiError{status: resp.StatusCode}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.code, e.message = body.Error.Code, body.Error.Message
	} else {
		e.code = strings.ReplaceAll(strings.ToLower(http.StatusText(resp.StatusCode)), " ", "_")
		e.message = oneLine(truncate(strings.TrimSpace(string(data)), 200))
		if e.message == "" {
			e.message = "(no body)"
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.retryAfter = time.Duration(s) * time.Second
	}
	return e
}

// waitOf is the long-poll wait a query asks for, so the request's timeout
// covers it.
func waitOf(q url.Values) time.Duration {
	d, _ := time.ParseDuration(q.Get("wait"))
	return max(d, 0)
}

// fail prints an error of the API or of the transport as one line and
// returns exitError.
func (c *apiCmd) fail(err error) int {
	var ae *apiError
	if !errors.As(err, &ae) {
		c.errorLine("request_failed", 0, err.Error())
		return exitError
	}
	hint := ""
	if ae.status == http.StatusBadRequest && strings.HasPrefix(ae.message, "X-Tenant-Id") {
		hint = " (give --tenant or set " + envTenant + ")"
	}
	if c.output == "json" {
		c.errorLine(ae.code, ae.status, ae.message+hint)
	} else {
		c.errorLine(ae.code, ae.status, err.Error()+hint)
	}
	return exitError
}

// do calls the API with the parsed command's client, and prints the
// answer: as it came with -o json, else with table, after decoding it into
// v. body, when not nil, is marshaled to JSON (a []byte is sent as is).
func (c *apiCmd) do(method, path string, query url.Values, body any, v any, table func(w io.Writer)) int {
	raw, code := c.send(context.Background(), method, path, query, body)
	if code != exitOK {
		return code
	}
	return c.print(raw, v, table)
}

// send calls the API; on failure it prints the error and returns its exit
// code.
func (c *apiCmd) send(ctx context.Context, method, path string, query url.Values, body any) ([]byte, int) {
	var data []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			return nil, c.fail(err)
		}
	}
	raw, err := c.cl.call(ctx, method, path, query, data)
	if err != nil {
		return nil, c.fail(err)
	}
	return raw, exitOK
}

// print shows an answer: as it came with -o json (pretty-printed) or -o
// yaml, else decoded into v and written by table.
func (c *apiCmd) print(raw []byte, v any, table func(w io.Writer)) int {
	if c.output == "json" || c.output == "yaml" {
		if len(bytes.TrimSpace(raw)) == 0 {
			return exitOK // 204: nothing to show
		}
		write := printJSON
		if c.output == "yaml" {
			write = printYAML
		}
		if err := write(c.e.stdout, raw); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			return c.fail(fmt.Errorf("unexpected answer from %s: %v", c.cl.base, err))
		}
	}
	table(c.e.stdout)
	return exitOK
}

// pathEscape escapes one path segment (ids come from the command line).
func pathEscape(s string) string { return url.PathEscape(s) }
