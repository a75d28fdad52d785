package concurrency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

func TestOutcomeOf_Statuses(t *testing.T) {
	for status, want := range map[int]Outcome{
		200: Success, 204: Success, 400: Success, 404: Success, 500: Success, 502: Success, 504: Success,
		429: Backpressure, 503: Backpressure,
	} {
		if got := OutcomeOf(status, fmt.Errorf("destination answered %d", status)); got != want {
			t.Errorf("status %d: %s, want %s", status, got, want)
		}
	}
	if got := OutcomeOf(0, nil); got != Success {
		t.Errorf("no status and no error (a broker's confirmation): %s, want success", got)
	}
}

// send makes one request to url as a driver would and classifies it.
func send(ctx context.Context, client *http.Client, url string) Outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		panic(err)
	}
	resp, err := client.Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	return OutcomeOf(status, err)
}

func TestOutcomeOf_RealNetworkErrors(t *testing.T) {
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hang)
	client := &http.Client{}

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if got := send(ctx, client, hanging.URL); got != Backpressure {
			t.Fatalf("a request past its deadline: %s, want backpressure", got)
		}
	})
	t.Run("client timeout", func(t *testing.T) {
		c := &http.Client{Timeout: 50 * time.Millisecond}
		if got := send(context.Background(), c, hanging.URL); got != Backpressure {
			t.Fatalf("a request past the client's timeout: %s, want backpressure", got)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		if got := send(ctx, client, hanging.URL); got != Ignore {
			t.Fatalf("a request canceled by the hub: %s, want ignore", got)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if got := send(context.Background(), client, "http://"+addr); got != Backpressure {
			t.Fatalf("a refused connection: %s, want backpressure", got)
		}
	})
	t.Run("connection closed before the answer", func(t *testing.T) {
		closing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer closing.Close()
		if got := send(context.Background(), &http.Client{}, closing.URL); got != Backpressure {
			t.Fatalf("a connection closed without an answer: %s, want backpressure", got)
		}
	})
	t.Run("connection reset", func(t *testing.T) {
		resetting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0) // close sends RST
				conn.Close()
			}
		}))
		defer resetting.Close()
		if got := send(context.Background(), &http.Client{}, resetting.URL); got != Backpressure {
			t.Fatalf("a reset connection: %s, want backpressure", got)
		}
	})
	t.Run("tls failure", func(t *testing.T) {
		tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
		tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error is the point
		tlsSrv.StartTLS()
		defer tlsSrv.Close()
		if got := send(context.Background(), &http.Client{}, tlsSrv.URL); got != Ignore {
			t.Fatalf("a certificate not trusted: %s, want ignore", got)
		}
	})
}

func TestOutcomeOf_NamesThatDoNotResolveAreIgnored(t *testing.T) {
	for _, dns := range []*net.DNSError{
		{Err: "no such host", Name: "receiver.invalid", IsNotFound: true},
		{Err: "i/o timeout", Name: "receiver.example", IsTimeout: true},
	} {
		err := &url.Error{Op: "Post", URL: "https://receiver.example/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}
		if got := OutcomeOf(0, fmt.Errorf("send: %w", err)); got != Ignore {
			t.Errorf("%v: %s, want ignore", err, got)
		}
	}
	if got := OutcomeOf(0, errors.New("the hub cannot deliver there")); got != Ignore {
		t.Errorf("an error of the hub's own: %s, want ignore", got)
	}
}
