package kafka_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/testnet"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// A broker that accepts the connection and never answers is no broker that answers: CheckBrokers
// (replicate's check before it joins its group) fails within the dial timeout as it does for a
// port that refuses, naming the broker, rather than passing it on to a group join that waited
// minutes and then blamed a member holding the group's rebalance.
func TestCheckBrokersFailsForASilentBroker(t *testing.T) {
	addr := testnet.Silent(t, nil)
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

// CheckBrokers ends when its context does (Ctrl-C or SIGTERM at replicate's start) while a
// broker that accepted the connection has not answered, rather than after the dial timeout.
func TestCheckBrokersEndsWithItsContext(t *testing.T) {
	asked := make(chan struct{}, 16)
	addr := testnet.Silent(t, asked)
	cfg, err := kafka.ParseURI("kafka://"+addr+"/orders?group=g", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialTimeout = 10 * time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cfg.CheckBrokers(ctx) }()
	<-asked
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the check ended with %v, want the context's cancellation", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("CheckBrokers still waits for a silent broker a minute after its context ended")
	}
}
