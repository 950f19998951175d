package kafka

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A lookup keeps its connections between look-ups: replicate's /metrics reads the end offsets
// at every scrape, and a client made anew each time dialled the broker each time (with TLS and
// SASL, a handshake and an authentication a scrape). A connection the broker closed since is
// dropped and the look-up tried again on a new one, so a scrape after a broker restart still
// gets the offsets.
func TestOffsetLookupKeepsItsConnections(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "lookup", 3)
	cfg := &Config{Brokers: c.Brokers, Topic: topic}
	l, err := cfg.NewOffsetLookup()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	l.tr.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
		return conn, err
	}
	dials := func() int { mu.Lock(); defer mu.Unlock(); return len(conns) }
	lookup := func() {
		t.Helper()
		offs, err := l.Offsets(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(offs) != 3 {
			t.Fatalf("%d partitions looked up, want 3", len(offs))
		}
	}
	for i := 0; i < 3; i++ {
		lookup() // kafka-go's transport may dial one connection per request in flight at first
	}
	first := dials()
	if first == 0 {
		t.Fatal("the dial hook was not used")
	}
	for i := 0; i < 20; i++ {
		lookup()
	}
	// a client made anew for each look-up dials at least one connection each time
	if n := dials() - first; n > 2 {
		t.Errorf("20 more look-ups dialled %d more connections, want them to use the kept ones", n)
	}
	first = dials()
	// the broker's side of every kept connection goes away, as in a restart
	mu.Lock()
	for _, conn := range conns {
		conn.Close()
	}
	mu.Unlock()
	lookup()
	if n := dials(); n == first {
		t.Errorf("the look-up after its connections closed dialled none")
	}
}
