// Command playground runs a Kafka-protocol cluster or a Cassandra-protocol (CQL) server on
// loopback, seeded with demo orders, so that `rekey replicate` and the Cassandra source can be
// tried without Docker or a cluster:
//
//	go run ./cmd/playground kafka       # topic "orders", then a trickle of new orders
//	go run ./cmd/playground cassandra   # table shop.orders
//	go run ./cmd/playground cutover     # a changing Cassandra table, its CDC topic, a SQL table
//
// It prints the --source URI to paste into rekey and serves until Ctrl-C. Both servers are the
// in-process ones rekey's own tests run against (franz-go's kfake; rekey's CQL test server):
// real wire protocols, data in memory, nothing kept after it stops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/kafka/kafkademo"
)

const usage = `usage: go run ./cmd/playground kafka|cassandra|cutover [flags]

  kafka      a Kafka-protocol cluster (franz-go's kfake) on 127.0.0.1 with topic "orders"
             (6 partitions) holding -messages JSON orders, then -rate new orders per second
  cassandra  a Cassandra-protocol (CQL v4) server on 127.0.0.1 with table shop.orders
             (PRIMARY KEY ((userid), orderid)) holding -rows orders, data centre dc1
  cutover    the cut-over rehearsal of docs/cutover.md: the CQL server with table ks.ev (-rows mutations),
             an application changing it (-rate mutations per second) whose every mutation
             Debezium's Cassandra connector, played, publishes to Kafka topic cdc.ks.ev, and a
             MySQL-protocol server (go-mysql-server) with an empty table cutover.ev; writes stop
             when -stop-file appears (by default a file of this playground's own: several
             playgrounds on one machine each watch theirs)

It prints the --source URI to give rekey and serves until Ctrl-C. Data lives in memory only.

flags:
`

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "kafka" && os.Args[1] != "cassandra" && os.Args[1] != "cutover") {
		fmt.Fprint(os.Stderr, usage)
		flags("kafka").PrintDefaults()
		os.Exit(2)
	}
	kind := os.Args[1]
	fs := flags(kind)
	fs.Parse(os.Args[2:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch kind {
	case "kafka":
		err = runKafka(ctx, os.Stdout)
	case "cassandra":
		err = runCassandra(ctx, os.Stdout)
	default:
		err = runCutover(ctx, os.Stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}

var opts struct {
	port     int
	messages int64
	rate     int
	rows     int
	stopFile string
}

func flags(kind string) *flag.FlagSet {
	fs := flag.NewFlagSet("playground "+kind, flag.ExitOnError)
	if kind == "cutover" {
		fs.IntVar(&opts.rows, "rows", 2000, "mutations of ks.ev made before the connector starts")
		fs.IntVar(&opts.rate, "rate", 200, "mutations (and events) per second after the start (0: none)")
		fs.StringVar(&opts.stopFile, "stop-file", "", "writes stop when this file appears (removed at the start; default: stop-writes in a temporary folder of this playground's own, printed)")
		return fs
	}
	fs.IntVar(&opts.port, "port", 0, "port to listen on (default: 9092 for kafka, 9042 for cassandra, or a free one if taken)")
	fs.Int64Var(&opts.messages, "messages", 10000, "kafka: order messages in the topic at the start")
	fs.IntVar(&opts.rate, "rate", 100, "kafka: new order messages per second after the start (0: none)")
	fs.IntVar(&opts.rows, "rows", 100000, "cassandra: rows in shop.orders")
	return fs
}

// port is -port, else def when it is free, else 0 (any free port). busy is set when def was
// taken, so the playground says why it listens elsewhere: a client configured for the usual
// port would otherwise reach whatever holds it.
func port(def int) (p int, busy bool) {
	if opts.port > 0 {
		return opts.port, false
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(def)))
	if err != nil {
		return 0, true
	}
	l.Close()
	return def, false
}

// movedNote is the line printed when the default port was taken.
func movedNote(out io.Writer, def int, addr string) {
	fmt.Fprintf(out, "Port %d is in use on 127.0.0.1 (another server?), so the playground listens on %s instead: use the URIs below as printed (-port N picks one).\n\n", def, addr)
}

// Default ports; variables so tests can point them at a port they hold.
var (
	kafkaPort     = 9092
	cassandraPort = 9042
)

func runKafka(ctx context.Context, out io.Writer) error {
	const topic = "orders"
	p, busy := port(kafkaPort)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(p), kfake.SeedTopics(6, topic))
	if err != nil {
		return fmt.Errorf("start the Kafka-protocol cluster: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	w := kafkademo.Writer(brokers, topic)
	defer w.Close()
	orders := kafkademo.NewOrders(1)
	if err := orders.Produce(ctx, w, opts.messages); err != nil {
		return err
	}
	b := brokers[0]
	if busy {
		movedNote(out, kafkaPort, b)
	}
	fmt.Fprintf(out, `Kafka-protocol playground on %s: topic %q, 6 partitions, %d JSON orders, then %d new ones per second.

Try (in another terminal, from the repository):
  go run ./cmd/rekey report    -m mappings/orders.yaml --source 'kafka://%s/%s?max=%d'
  go run ./cmd/rekey migrate   -m mappings/orders.yaml --source 'kafka://%s/%s?max=%d' --out out/kafka-orders --overwrite
  go run ./cmd/rekey replicate -m mappings/orders.yaml --source 'kafka://%s/%s?group=playground' --out out/live

Ctrl-C stops the playground (the data is in memory only).
`, b, topic, opts.messages, opts.rate, b, topic, opts.messages, b, topic, opts.messages, b, topic)
	if opts.rate <= 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	// a trickle of new orders, so that replicate has something to follow
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	per := max(int64(opts.rate)/10, 1)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := orders.Produce(ctx, w, per); err != nil {
				return err
			}
		}
	}
}

func runCassandra(ctx context.Context, out io.Writer) error {
	p, busy := port(cassandraPort)
	srv, err := cqltest.New(cqltest.WithPort(p), cqltest.WithDataCenter("dc1", "rack1"))
	if err != nil {
		return fmt.Errorf("start the CQL server: %w", err)
	}
	defer srv.Close()
	if err := cassandratest.SeedOrders(srv, opts.rows); err != nil {
		return fmt.Errorf("seed shop.orders: %w", err)
	}
	uri := fmt.Sprintf("cassandra://%s/shop/orders?dc=dc1", srv.Addr())
	if busy {
		movedNote(out, cassandraPort, srv.Addr())
	}
	fmt.Fprintf(out, `Cassandra-protocol playground on %s: table shop.orders, %d rows (4 orders per user,
monotonic order ids and timestamps), data centre dc1. No credentials needed.

Try (in another terminal, from the repository):
  go run ./cmd/rekey check   -m mappings/orders.yaml --source '%s'
  go run ./cmd/rekey report  -m mappings/orders.yaml --source '%s'
  go run ./cmd/rekey migrate -m mappings/orders.yaml --source '%s' --out out/cassandra-orders --overwrite

Ctrl-C stops the playground (the data is in memory only).
`, srv.Addr(), opts.rows, uri, uri, uri)
	<-ctx.Done()
	return ctx.Err()
}
