package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	_ "github.com/go-sql-driver/mysql"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
)

// The cut-over playground's names.
const (
	cdcTopic      = "cdc.ks.ev" // the connector's topic name: <name>.<keyspace>.<table>
	cdcPartitions = 2           // partitioned by the Cassandra partition key (README)
	sqlDatabase   = "cutover"
)

var sqlPort = 3306

// evDDL is `rekey ddl -m mappings/ev.yaml --dialect mysql`: the target table, made in advance.
const evDDL = "CREATE TABLE IF NOT EXISTS `ev` (`a` int NOT NULL, `b` int NOT NULL, `c` int NOT NULL, " +
	"`x` longtext CHARACTER SET utf8mb4, `y` int, PRIMARY KEY (`a`, `b`, `c`))"

// runCutover serves the cut-over rehearsal: Cassandra's ks.ev, kept changing by an application
// whose every mutation the connector publishes to cdc.ks.ev, and an empty MySQL-protocol table ev
// to migrate into, until the stop file appears (writes stop) and then ctx ends.
func runCutover(ctx context.Context, out io.Writer) error {
	stopFile, cleanup, err := stopFilePath(opts.stopFile)
	if err != nil {
		return err
	}
	defer cleanup()
	srv, err := startCutover()
	if err != nil {
		return err
	}
	defer srv.close()

	// the connector is running: every mutation from now on has its event
	srv.app.Capture(srv.topic)
	stop := make(chan struct{})
	done := make(chan error, 1)
	interval := time.Second
	if opts.rate > 0 {
		interval = max(time.Duration(float64(time.Second)*5/float64(opts.rate)), time.Millisecond)
	} else {
		close(stop)
	}
	go func() { done <- srv.app.Run(ctx, interval, stop) }()

	srv.printInstructions(out, stopFile)
	if stopped, err := waitForStopFile(ctx, stopFile, stop, done); !stopped {
		return err
	}
	if err := <-done; err != nil {
		return fmt.Errorf("the application's writes: %w", err)
	}
	srv.printStopped(out)
	<-ctx.Done()
	return ctx.Err()
}

// cutoverServers are the rehearsal's servers: the CQL server holding ks.ev and the application
// changing it, the Kafka-protocol cluster with the connector's topic, and the SQL server.
type cutoverServers struct {
	cas     *cqltest.Server
	app     *cdcdemo.Writer
	cluster *kfake.Cluster
	broker  string
	topic   *kafkago.Writer
	sqlAddr string
	moved   []string // the default ports that were taken
	closers []func() // in the order the servers started
}

// startCutover starts the servers on their default ports (others where those are taken) and
// seeds ks.ev; on an error it closes what it started.
func startCutover() (_ *cutoverServers, err error) {
	srv := &cutoverServers{}
	defer func() {
		if err != nil {
			srv.close()
		}
	}()
	if srv.cas, err = cqltest.New(cqltest.WithPort(srv.port(cassandraPort)), cqltest.WithDataCenter("dc1", "rack1")); err != nil {
		return nil, fmt.Errorf("start the CQL server: %w", err)
	}
	srv.closers = append(srv.closers, func() { srv.cas.Close() })
	if err := cdcdemo.CreateTable(srv.cas); err != nil {
		return nil, fmt.Errorf("create ks.ev: %w", err)
	}
	srv.app = cdcdemo.NewWriter(srv.cas, cdcPartitions, uint64(time.Now().UnixNano()))
	if err := srv.app.Seed(opts.rows); err != nil {
		return nil, fmt.Errorf("seed ks.ev: %w", err)
	}

	if srv.cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(srv.port(kafkaPort)), kfake.SeedTopics(cdcPartitions, cdcTopic)); err != nil {
		return nil, fmt.Errorf("start the Kafka-protocol cluster: %w", err)
	}
	srv.closers = append(srv.closers, srv.cluster.Close)
	srv.broker = srv.cluster.ListenAddrs()[0]
	srv.topic = &kafkago.Writer{Addr: kafkago.TCP(srv.broker), Topic: cdcTopic, RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafkago.BalancerFunc(func(m kafkago.Message, _ ...int) int { return m.Partition })}
	srv.closers = append(srv.closers, func() { srv.topic.Close() })

	addr, closeSQL, err := serveSQL(srv.port(sqlPort))
	if err != nil {
		return nil, err
	}
	srv.sqlAddr = addr
	srv.closers = append(srv.closers, closeSQL)
	return srv, nil
}

// port is def when it is free, else a free one; a taken default is noted for the instructions.
func (s *cutoverServers) port(def int) int {
	p, busy := port(def)
	if busy {
		s.moved = append(s.moved, strconv.Itoa(def))
	}
	return p
}

// close stops the servers, the last started first.
func (s *cutoverServers) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// printInstructions says where each server listens and how to stop the writes.
func (s *cutoverServers) printInstructions(out io.Writer, stopFile string) {
	if len(s.moved) > 0 {
		fmt.Fprintf(out, "Port(s) %s in use on 127.0.0.1 (other servers?): the playground listens elsewhere; use the variables below as printed.\n\n", strings.Join(s.moved, ", "))
	}
	fmt.Fprintf(out, `Cut-over playground: Cassandra table ks.ev (%d mutations made before the connector started), an
application that keeps changing it (%d mutations per second: inserts, updates of some columns,
cell, row and range deletes), Debezium's Cassandra connector publishing each one to topic %s
(%d partitions, by partition key), and an empty MySQL-protocol table ev to copy into.

Rehearse the runbook in docs/cutover.md ("Cut-over without downtime") in another terminal, from
the repository, with:
  CASS=cassandra://%s/ks/ev
  KAFKA=kafka://%s/%s
  TABLE=mysql://root@%s/%s
  STOP_WRITES='touch %s'

Ctrl-C stops the playground (the data is in memory only).
`, opts.rows, opts.rate, cdcTopic, cdcPartitions, s.cas.Addr(), s.broker, cdcTopic, s.sqlAddr, sqlDatabase, stopFile)
}

// waitForStopFile closes stop once stopFile appears (stopped at once when there are no writes
// after the start: stop is closed already). When the application's writes end first (ctx ended,
// or they failed) stopped is false and err is what the playground ends with.
func waitForStopFile(ctx context.Context, stopFile string, stop chan struct{}, done chan error) (stopped bool, err error) {
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	for stopped = opts.rate <= 0; !stopped; {
		select {
		case <-ctx.Done():
			return false, <-done
		case err := <-done:
			return false, fmt.Errorf("the application's writes: %w", err)
		case <-poll.C:
			if _, err := os.Stat(stopFile); err == nil {
				close(stop)
				stopped = true
			}
		}
	}
	return true, nil
}

// printStopped says what the writes left: the events published, the topic's end offsets and the
// table's rows, which the rehearsal compares the target with.
func (s *cutoverServers) printStopped(out io.Writer) {
	ends := s.app.Ends()
	offs := make([]string, len(ends))
	for p, end := range ends {
		offs[p] = fmt.Sprintf("%d:%d", p, end)
	}
	fmt.Fprintf(out, "\nWrites stopped: %d events published, the topic's end offsets (partition:offset) are %s; ks.ev holds %d rows.\n",
		s.app.Published(), strings.Join(offs, " "), len(s.app.Rows()))
}

// oneAtATime runs one statement at a time over all connections: go-mysql-server's in-memory
// tables lose writes that several connections make at once, and the rehearsal must run with
// the connections rekey opens by default, as it would against Lindorm.
type oneAtATime struct {
	mysql.Handler
	mu sync.Mutex
}

func (h *oneAtATime) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Handler.ComQuery(ctx, c, query, callback)
}

func (h *oneAtATime) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Handler.ComMultiQuery(ctx, c, query, callback)
}

func (h *oneAtATime) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Handler.ComStmtExecute(ctx, c, prepare, callback)
}

// serveSQL serves go-mysql-server (in memory) on 127.0.0.1:port with database cutover holding
// an empty table ev, and returns its address.
func serveSQL(port int) (string, func(), error) {
	logrus.SetLevel(logrus.ErrorLevel) // go-mysql-server's per-connection lines would bury the instructions
	db := memory.NewDatabase(sqlDatabase)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return "", nil, fmt.Errorf("listen for the SQL server: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv, err := server.NewServerWithHandler(server.Config{Protocol: "tcp", Address: addr}, sqle.NewDefault(pro), gsql.NewContext, memory.NewSessionBuilder(pro), nil,
		func(h mysql.Handler) (mysql.Handler, error) { return &oneAtATime{Handler: h}, nil })
	if err != nil {
		return "", nil, fmt.Errorf("start the SQL server: %w", err)
	}
	go srv.Start()
	conn, err := sql.Open("mysql", "root@tcp("+addr+")/"+sqlDatabase)
	if err == nil {
		defer conn.Close()
		for range 100 { // the server starts in the background
			if err = conn.Ping(); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err == nil {
		_, err = conn.Exec(evDDL)
	}
	if err != nil {
		srv.Close()
		return "", nil, fmt.Errorf("create table %s.ev: %w", sqlDatabase, err)
	}
	return addr, func() { srv.Close() }, nil
}

// stopFilePath is the file whose appearance stops the writes: flag (-stop-file) when given, removed
// if an earlier run left it; otherwise stop-writes in a new temporary folder of this playground's
// own, so that playgrounds running at once on one machine never stop each other. cleanup removes
// that folder.
func stopFilePath(flag string) (path string, cleanup func(), err error) {
	if flag != "" {
		if err := os.Remove(flag); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("remove the stop file of an earlier run: %w", err)
		}
		return flag, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "rekey-playground-")
	if err != nil {
		return "", nil, fmt.Errorf("create the stop file's folder: %w", err)
	}
	return filepath.Join(dir, "stop-writes"), func() { os.RemoveAll(dir) }, nil
}
