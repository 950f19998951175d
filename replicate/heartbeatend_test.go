package replicate

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
)

// A generation's own heartbeats end with its work: the heartbeat in flight when the workers are
// done (a coordinator slow to answer) is cancelled and waited for. It went on, for up to a session
// timeout, past the generation and past Run: its answer was logged (a warning that heartbeats do
// not get through, at a normal stop) after Run had returned.
func TestGenerationHeartbeatEndsWithItsWork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// a broker that takes requests and never answers them
	var mu sync.Mutex
	var conns []net.Conn
	asked := make(chan struct{})
	var once sync.Once
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				var b [1]byte
				if _, err := c.Read(b[:]); err == nil {
					once.Do(func() { close(asked) })
				}
				io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	r := &Replicator{cfg: Config{Kafka: kafka.Config{Topic: "t", Brokers: []string{ln.Addr().String()}},
		Group: GroupOptions{SessionTimeout: time.Minute, HeartbeatInterval: time.Millisecond, RebalanceTimeout: time.Minute}},
		log: zap.NewNop(), metrics: newMetrics("t", "test", nil)}
	gen := &kafkago.Generation{ID: 1, GroupID: "g", MemberID: "m"} // no partition of the topic
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.runWorkers(context.Background(), context.Background(), stop, gen, nil, nil) }()
	select {
	case <-asked: // a heartbeat is in flight
	case <-time.After(wait.Timeout):
		t.Fatalf("no heartbeat reached the broker in %s", wait.Timeout)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "replicate.(*Replicator).heartbeat") {
		t.Fatal("the generation's work ended with its heartbeat still waiting for the broker's answer")
	}
}
