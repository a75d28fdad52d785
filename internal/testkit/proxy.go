package testkit

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from an address of its own to a target,
// and fails them on demand: the network between the hub and a broker.
type Proxy struct {
	Addr   string // host:port to dial instead of the target
	target string

	mu    sync.Mutex
	pairs map[*pair]struct{}
	// down refuses new connections (accepted, then closed at once) until
	// Up: the target unreachable for a while.
	down atomic.Bool
}

// pair is a client's connection and the proxy's own to the target.
type pair struct {
	client, up net.Conn
	frozen     atomic.Bool
}

// NewProxy listens on 127.0.0.1 and forwards every connection to target;
// it stops, closing everything, when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, pairs: make(map[*pair]struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

func (p *Proxy) forward(c net.Conn) {
	if p.down.Load() {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	pr := &pair{client: c, up: up}
	p.mu.Lock()
	p.pairs[pr] = struct{}{}
	p.mu.Unlock()
	fromClient, fromUp := make(chan struct{}), make(chan struct{})
	go func() { // the client's bytes go up, or nowhere once frozen
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 && !pr.frozen.Load() {
				if _, werr := up.Write(buf[:n]); werr != nil && !pr.frozen.Load() {
					break
				}
			}
			if err != nil {
				break
			}
		}
		close(fromClient)
	}()
	go func() { io.Copy(c, up); close(fromUp) }()
	select {
	case <-fromClient:
	case <-fromUp:
		if pr.frozen.Load() {
			<-fromClient // frozen: open to the client, silent, until it gives up
		}
	}
	p.mu.Lock()
	delete(p.pairs, pr)
	p.mu.Unlock()
	c.Close()
	up.Close()
}

// Cut closes every connection the proxy carries now, both sides (the
// client reads an end of file), and returns how many it cut; new
// connections are forwarded as before.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.pairs)
	for pr := range p.pairs {
		pr.client.Close()
		pr.up.Close()
		delete(p.pairs, pr)
	}
	return n
}

// Down cuts every connection the proxy carries now and closes every new
// one at once until Up: an outage of the target as its clients see it (each
// dial ends in an end of file). It returns how many connections it cut.
func (p *Proxy) Down() int {
	p.down.Store(true)
	return p.Cut()
}

// Up forwards new connections again after Down.
func (p *Proxy) Up() { p.down.Store(false) }

// Freeze cuts every connection the proxy carries now without telling the
// client: the target sees its connection closed, the client's stays open
// but carries nothing either way (what a firewall or load balancer that
// lost its state does). It returns how many it froze; new connections are
// forwarded as before.
func (p *Proxy) Freeze() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pr := range p.pairs {
		if !pr.frozen.Swap(true) {
			pr.up.Close()
			n++
		}
	}
	return n
}

// Conns is how many client connections the proxy forwards now (frozen
// ones not counted).
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pr := range p.pairs {
		if !pr.frozen.Load() {
			n++
		}
	}
	return n
}
