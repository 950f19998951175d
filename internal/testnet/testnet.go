// Package testnet serves loopback ports for tests: a peer that takes connections and does what
// the test says with them, nothing at all for a hung one.
package testnet

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Serve accepts connections on a loopback port until the test ends and hands each to handle in
// a goroutine of its own; at the end the listener and the connections are closed and the
// goroutines waited for.
func Serve(t testing.TB, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); handle(c) }()
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}

// Silent serves a peer that accepts connections and never answers (a hung server, one still
// starting, another service on the port) and returns its host:port. asked, when not nil, hears
// of each connection a request came on.
func Silent(t testing.TB, asked chan<- struct{}) string {
	t.Helper()
	return Serve(t, func(c net.Conn) {
		if asked != nil {
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil {
				return
			}
			asked <- struct{}{}
		}
		io.Copy(io.Discard, c)
	}).String()
}
