package kafka_test

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// silentBroker accepts connections until the test ends and never answers on them (a hung broker,
// one still starting, another service on the port).
func silentBroker(t *testing.T) string {
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
			go func() { defer wg.Done(); io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String()
}

// A broker that accepts the connection and never answers is no broker that answers: CheckBrokers
// (replicate's check before it joins its group) fails within the dial timeout as it does for a
// port that refuses, naming the broker, rather than passing it on to a group join that waited
// minutes and then blamed a member holding the group's rebalance.
func TestCheckBrokersFailsForASilentBroker(t *testing.T) {
	addr := silentBroker(t)
	cfg, err := kafka.ParseURI("kafka://"+addr+"/orders?group=g", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialTimeout = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- cfg.CheckBrokers(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a broker that never answers passed the check")
		}
		if !pipeline.Unreachable(err) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "does not answer") {
			t.Fatalf("a silent broker: %v; want a broker that could not be reached, named, that does not answer", err)
		}
		t.Log(err)
	case <-time.After(time.Minute):
		t.Fatal("CheckBrokers still waits for a silent broker a minute after its 200ms dial timeout")
	}
}
