package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// apiServer runs the payments API on a fixed local address and can be
// stopped and started again there, so the notifier's base URL stays valid
// across the outage, as it would for a restarted service.
type apiServer struct {
	addr    string
	handler http.Handler
	srv     *http.Server
	done    chan error
}

// start listens on addr ("127.0.0.1:0" the first time picks a free port).
func (s *apiServer) start() error {
	if s.srv != nil {
		return errors.New("API already running")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.addr, err)
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second}
	s.done = make(chan error, 1)
	go func(srv *http.Server) { s.done <- srv.Serve(ln) }(s.srv)
	return nil
}

func (s *apiServer) stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	s.srv = nil
	if err != nil {
		return fmt.Errorf("stop API on %s: %w", s.addr, err)
	}
	return nil
}

func (s *apiServer) url() string { return "http://" + s.addr }
