package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine writing and the test reading.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitFor runs a playground until its printed text matches re, and returns the match.
func waitFor(t *testing.T, run func(context.Context, *syncBuffer) error, re string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, out) }()
	t.Cleanup(func() { cancel(); <-done })
	var m []string
	var ended error
	found := wait.Until(func() bool {
		if m = regexp.MustCompile(re).FindStringSubmatch(out.String()); m != nil {
			return true
		}
		select {
		case ended = <-done:
			return true
		default:
			return false
		}
	}, wait.Timeout)
	if m == nil {
		t.Fatalf("no %s in (found %v, playground ended: %v):\n%s", re, found, ended, out.String())
	}
	return m[1]
}

// The URI the Cassandra playground prints reaches a server holding the seeded table.
func TestCassandraPlaygroundServesWhatItPrints(t *testing.T) {
	opts.rows, opts.port = 500, 0
	addr := waitFor(t, func(ctx context.Context, w *syncBuffer) error { return runCassandra(ctx, w) }, `'cassandra://([0-9.:]+)/shop/orders\?dc=dc1'`)
	host, port, _ := strings.Cut(addr, ":")
	cl := gocql.NewCluster(host)
	cl.Port, _ = strconv.Atoi(port)
	cl.ProtoVersion = 4
	sess, err := cl.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n int
	iter := sess.Query(`SELECT orderid FROM shop.orders`).Iter()
	var id int64
	for iter.Scan(&id) {
		n++
	}
	if err := iter.Close(); err != nil || n != 500 {
		t.Fatalf("read %d rows of shop.orders, want 500: %v", n, err)
	}
}

// The Kafka playground's topic holds the seeded messages at the printed broker address.
func TestKafkaPlaygroundServesWhatItPrints(t *testing.T) {
	opts.messages, opts.rate, opts.port = 300, 0, 0
	broker := waitFor(t, func(ctx context.Context, w *syncBuffer) error { return runKafka(ctx, w) }, `'kafka://([0-9.:]+)/orders\?group=playground'`)
	conn, err := kafkago.Dial("tcp", broker)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions("orders")
	if err != nil || len(parts) != 6 {
		t.Fatalf("partitions %v: %v", parts, err)
	}
	var total int64
	for _, p := range parts {
		pc, err := kafkago.DialLeader(context.Background(), "tcp", broker, "orders", p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := pc.ReadLastOffset()
		pc.Close()
		if err != nil {
			t.Fatal(err)
		}
		total += last
	}
	if total != 300 {
		t.Fatalf("the topic holds %d messages, want 300", total)
	}
}

// When the usual port is taken, the playground says so and prints the port it took instead.
func TestPlaygroundSaysWhenItsPortIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	saved := cassandraPort
	cassandraPort = heldPort
	defer func() { cassandraPort = saved }()
	opts.rows, opts.port = 10, 0
	out := &syncBuffer{}
	addr := waitFor(t, func(ctx context.Context, w *syncBuffer) error { return runCassandra(ctx, io.MultiWriter(w, out)) }, `'cassandra://([0-9.:]+)/shop/orders\?dc=dc1'`)
	if strings.HasSuffix(addr, ":"+strconv.Itoa(heldPort)) {
		t.Fatalf("listening on the taken port: %s", addr)
	}
	want := fmt.Sprintf("Port %d is in use on 127.0.0.1 (another server?), so the playground listens on %s instead", heldPort, addr)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("no note that the port moved (%q) in:\n%s", want, out.String())
	}
}
