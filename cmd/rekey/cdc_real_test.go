package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/realpeers"
	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/kafka/cdcdemo"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// The real peers' Debezium connector (deploy/dev/peers.sh env): its health URL, its log, the
// prefix of its topics (<prefix>.<keyspace>.<table>).
const (
	debeziumEnv       = "REKEY_PEERS_DEBEZIUM"
	debeziumLogEnv    = "REKEY_PEERS_DEBEZIUM_LOG"
	debeziumPrefixEnv = "REKEY_PEERS_DEBEZIUM_TOPIC_PREFIX"
)

// TestCDCFromTheRealConnector: a real Cassandra table WITH cdc = true, Debezium's Cassandra
// connector reading the node's commit log and producing to a real Kafka, and replicate applying
// its events to a SQL table while an application writes (inserts of whole rows and of some
// columns, updates of some columns, cell deletes, TTL writes, row, partition, prefix and range
// deletes); then verify of the table against Cassandra itself says EQUAL.
func TestCDCFromTheRealConnector(t *testing.T) {
	cas, kc := realConnector(t)
	ks, exec := connectorKeyspace(t, cas, "cdc")
	connectorTable(t, exec, ks, "ev", `(a int, b int, c int, x text, y int, PRIMARY KEY ((a), b, c))`)
	topic := os.Getenv(debeziumPrefixEnv) + "." + ks + ".ev"

	srv, conns := sqlServer(t)
	dir := t.TempDir()
	mapping := writeFile(t, dir, "ev.yaml", strings.Replace(cdcdemo.Mapping, "name: ks.ev", "name: "+ks+".ev", 1))
	srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))

	// The application: every mutation of one statement, so one event each (one replica). Every
	// row it writes has x, so that none is left with its key alone (Lindorm cannot hold those).
	rng := rand.New(rand.NewPCG(7, 11))
	live := map[[3]int]bool{}
	mutations := 0
	mutate := func() {
		a, b, c := rng.IntN(6), rng.IntN(5), rng.IntN(3)
		k := [3]int{a, b, c}
		x := fmt.Sprint("s", rng.IntN(1000))
		y := rng.IntN(1000)
		key := `WHERE a = ? AND b = ? AND c = ?`
		switch r := rng.IntN(20); {
		case r < 4 || !live[k] && r < 9: // else a cell, row or range delete of a key that may be absent
			switch rng.IntN(3) {
			case 0:
				exec(`INSERT INTO `+ks+`.ev (a, b, c, x, y) VALUES (?, ?, ?, ?, ?)`, a, b, c, x, y)
			case 1:
				exec(`INSERT INTO `+ks+`.ev (a, b, c, x) VALUES (?, ?, ?, ?)`, a, b, c, x)
			default: // a day's TTL: the row outlives the test
				exec(`INSERT INTO `+ks+`.ev (a, b, c, x, y) VALUES (?, ?, ?, ?, ?) USING TTL 86400`, a, b, c, x, y)
			}
			live[k] = true
		case r < 6:
			exec(`UPDATE `+ks+`.ev SET x = ? `+key, x, a, b, c)
		case r < 8:
			exec(`UPDATE `+ks+`.ev SET y = ? `+key, y, a, b, c)
		case r < 9:
			exec(`UPDATE `+ks+`.ev SET x = ?, y = ? `+key, x, y, a, b, c)
		case r < 11:
			exec(`DELETE y FROM `+ks+`.ev `+key, a, b, c)
		case r < 14:
			exec(`DELETE FROM `+ks+`.ev `+key, a, b, c)
			delete(live, k)
		case r < 15:
			exec(`DELETE FROM `+ks+`.ev WHERE a = ?`, a)
			for lk := range live {
				if lk[0] == a {
					delete(live, lk)
				}
			}
		case r < 17:
			exec(`DELETE FROM `+ks+`.ev WHERE a = ? AND b = ?`, a, b)
			for lk := range live {
				if lk[0] == a && lk[1] == b {
					delete(live, lk)
				}
			}
		default:
			lo := rng.IntN(4)
			hi := lo + 1 + rng.IntN(2)
			exec(`DELETE FROM `+ks+`.ev WHERE a = ? AND b >= ? AND b < ?`, a, lo, hi)
			for lk := range live {
				if lk[0] == a && lk[1] >= lo && lk[1] < hi {
					delete(live, lk)
				}
			}
		}
		mutations++
	}
	endOffset := func() int64 {
		conn, err := kafkago.DialLeader(t.Context(), "tcp", kc.Brokers[0], topic, 0)
		if err != nil {
			return -1
		}
		defer conn.Close()
		end, err := conn.ReadLastOffset()
		if err != nil {
			return -1
		}
		return end
	}

	// cells deleted of rows Cassandra does not hold (never written, deleted before): the
	// connector publishes each as an update setting the cell to null
	exec(`DELETE y FROM ` + ks + `.ev WHERE a = 6 AND b = 0 AND c = 0`)
	exec(`UPDATE ` + ks + `.ev SET x = null WHERE a = 6 AND b = 0 AND c = 1`)
	exec(`INSERT INTO ` + ks + `.ev (a, b, c, x, y) VALUES (6, 1, 0, 'gone', 1)`)
	exec(`DELETE FROM ` + ks + `.ev WHERE a = 6 AND b = 1 AND c = 0`)
	exec(`DELETE x, y FROM ` + ks + `.ev WHERE a = 6 AND b = 1 AND c = 0`)
	// a row UPDATEs wrote (no row marker) losing its every cell: Cassandra holds no row
	exec(`UPDATE ` + ks + `.ev SET x = 'u', y = 2 WHERE a = 6 AND b = 2 AND c = 0`)
	exec(`DELETE x FROM ` + ks + `.ev WHERE a = 6 AND b = 2 AND c = 0`)
	exec(`UPDATE ` + ks + `.ev SET y = null WHERE a = 6 AND b = 2 AND c = 0`)
	// a row an INSERT wrote losing its every cell: Cassandra keeps its key alone, which Lindorm
	// cannot hold (verify leaves it out, as migrate rejects it)
	exec(`INSERT INTO ` + ks + `.ev (a, b, c, x) VALUES (6, 3, 0, 'i')`)
	exec(`DELETE x FROM ` + ks + `.ev WHERE a = 6 AND b = 3 AND c = 0`)
	// one mutation of two rows of a partition: two events at one commit log position
	exec(`BEGIN BATCH INSERT INTO ` + ks + `.ev (a, b, c, x) VALUES (7, 0, 0, 'b0'); INSERT INTO ` + ks + `.ev (a, b, c, x) VALUES (7, 0, 1, 'b1'); APPLY BATCH`)
	live[[3]int{7, 0, 0}], live[[3]int{7, 0, 1}] = true, true
	// one mutation of two range deletes of a partition: two events at one commit log position
	// with one message key (the partition's), told apart by their bounds alone
	for b := range 6 {
		exec(`INSERT INTO `+ks+`.ev (a, b, c, x) VALUES (8, ?, 0, 'r')`, b)
		if b == 0 || b == 2 || b == 5 { // the rows the ranges below leave
			live[[3]int{8, b, 0}] = true
		}
	}
	exec(`BEGIN BATCH DELETE FROM ` + ks + `.ev WHERE a = 8 AND b >= 1 AND b < 2; DELETE FROM ` + ks + `.ev WHERE a = 8 AND b >= 3 AND b < 5; APPLY BATCH`)
	mutations += 11 + 7

	// the first changes: the connector creates the topic with its first event
	for range 50 {
		mutate()
	}
	first := time.Now()
	wait.For(t, func() bool { return endOffset() > 0 }, "the connector's first event in "+topic)
	t.Logf("first event %.1fs after the 50th mutation", time.Since(first).Seconds())

	group := kc.Group("cdc-real")
	startReplicate := func() (stop func(until int64)) {
		return startReplication(t, kc, topic, group, "replicate", "-m", mapping,
			"--source", "kafka://"+strings.Join(kc.Brokers, ",")+"/"+topic+"?group="+group+"&format=debezium",
			"--out", srv.URI(""), "--sql-conns", conns, "--state", filepath.Join(dir, "state"), "--progress", "never")
	}
	stop := startReplicate()
	// more changes while replicate applies
	for range 550 {
		mutate()
	}
	last := time.Now()
	// The connector publishes some events twice (after its start it repeats the last ones it
	// sent): a mutation is in the topic once an event names its commit log position.
	end := waitForMutations(t, kc, topic, mutations)
	t.Logf("%d mutations, %d events; the last %.1fs after the last mutation", mutations, end, time.Since(last).Seconds())
	// The connector publishes a run of events again when it reads a commit log segment a
	// second time (after a restart; once the node marks the segment complete, from the offset it
	// last flushed): here, 100 of its own events, published again after newer ones of the same
	// keys, while replicate runs; applied, they would undo those. Then replicate stops, and 150
	// more are published again: the replicate started next must know them too.
	stop(resend(t, kc.Brokers[0], topic, 100, 200))
	end = resend(t, kc.Brokers[0], topic, 200, 350)
	startReplicate()(end)
	if len(live) == 0 {
		t.Fatal("no row left alive: the writes prove nothing")
	}

	code, out, errs := runCLI(t, "verify", "-m", mapping, "--source", cas.URI(ks, "ev", ""), "--target", srv.URI(""), "--progress", "never")
	// the one row Cassandra holds with its key alone is counted, not compared
	if code != 0 || !strings.Contains(out+errs, "EQUAL") || !regexp.MustCompile(`rows rejected +1 `).MatchString(out+errs) {
		t.Fatalf("verify against Cassandra: exit %d\n%s%s", code, out, errs)
	}
	if got := dumpTable(t, srv.DB(t), "SELECT a, b, c, x, y FROM ev"); len(got) != len(live) {
		t.Errorf("the table holds %d rows, Cassandra %d:\n%s", len(got), len(live), strings.Join(got, "\n"))
	}
	t.Logf("%s", firstLine(out+errs, "EQUAL"))
}

// connectorKeyspace creates a keyspace of its own (prefix and a random number) on the
// connector's node and waits until the connector has taken it. The connector learns of tables
// from its driver's schema events, and a table created within a second of its keyspace reaches
// it as the keyspace's creation alone, whose tables it does not add
// (Cassandra5SchemaChangeListener.onKeyspaceCreated): its changes would never be read. So the
// keyspace first, then each table (connectorTable), each once the connector has taken the one
// before. exec runs a statement on the node.
func connectorKeyspace(t *testing.T, cas *cassandratest.Cluster, prefix string) (ks string, exec func(stmt string, args ...any)) {
	t.Helper()
	cl := gocql.NewCluster(cas.Hosts()...)
	cl.Timeout = 30 * time.Second
	cl.Consistency = gocql.One
	sess, err := cl.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	exec = func(stmt string, args ...any) {
		t.Helper()
		if err := sess.Query(stmt, args...).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	ks = fmt.Sprintf("%s%d", prefix, rand.Uint32()%1e9)
	exec(`CREATE KEYSPACE ` + ks + ` WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`)
	wait.For(t, connectorLogged("Added keyspace [CREATE KEYSPACE "+ks+" "), "the connector to add keyspace "+ks)
	return ks, exec
}

// connectorTable creates table ks.name (def: its columns and key, then any options) with CDC on
// and waits until the connector has taken it.
func connectorTable(t *testing.T, exec func(string, ...any), ks, name, def string) {
	t.Helper()
	create := `CREATE TABLE ` + ks + `.` + name + ` ` + def
	if strings.Contains(def, " WITH ") {
		create += ` AND cdc = true`
	} else {
		create += ` WITH cdc = true`
	}
	exec(create)
	wait.For(t, connectorLogged("Added table [CREATE TABLE "+ks+"."+name+" "), "the connector to add table "+ks+"."+name)
}

// realConnector skips the test without Debezium's Cassandra connector (fails, when the tier
// requires the real peers) and returns the real node it reads and the Kafka it publishes to.
func realConnector(t *testing.T) (*cassandratest.Cluster, *kafkatest.Cluster) {
	t.Helper()
	if realpeers.Missing(t, debeziumEnv) {
		t.Skipf("needs Debezium's Cassandra connector next to a real node (%s; bash deploy/dev/peers.sh start)", debeziumEnv)
	}
	cas := cassandratest.Open(t)
	if !cas.Real() {
		t.Fatalf("%s is set but %s is not: the connector reads a real node", debeziumEnv, cassandratest.HostsEnv)
	}
	return cas, kafkatest.Start(t)
}

// connectorLogged tells whether the connector's log holds what.
func connectorLogged(what string) func() bool {
	return func() bool {
		data, err := os.ReadFile(os.Getenv(debeziumLogEnv))
		return err == nil && strings.Contains(string(data), what)
	}
}

// waitForMutations waits until partition 0 of topic holds the events of n mutations (distinct
// commit log positions) and returns its end offset.
func waitForMutations(t *testing.T, kc *kafkatest.Cluster, topic string, n int) int64 {
	t.Helper()
	var end int64
	wait.For(t, func() bool {
		var got int
		end, got = distinctEvents(t, kc.Brokers[0], topic)
		return got >= n
	}, fmt.Sprintf("the connector's events of all %d mutations", n))
	return end
}

// distinctEvents reads partition 0 of topic to its end: the end offset, and how many distinct
// commit log positions (source.file, source.pos) its events name.
func distinctEvents(t *testing.T, broker, topic string) (int64, int) {
	conn, err := kafkago.DialLeader(t.Context(), "tcp", broker, topic, 0)
	if err != nil {
		return 0, 0
	}
	defer conn.Close()
	end, err := conn.ReadLastOffset()
	if err != nil || end == 0 {
		return 0, 0
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	pos := regexp.MustCompile(`"file":"([^"]*)","pos":(\d+)`)
	seen := map[string]bool{}
	for off := int64(0); off < end; off++ {
		m, err := r.ReadMessage(t.Context())
		if err != nil {
			return 0, 0
		}
		if p := pos.FindSubmatch(m.Value); p != nil {
			seen[string(p[1])+":"+string(p[2])] = true
		}
		off = m.Offset
	}
	return end, len(seen)
}

// resend produces the messages [from, to) of partition 0 of topic again, at its end, as the
// connector does when it reads a segment again; it returns the new end offset.
func resend(t *testing.T, broker, topic string, from, to int64) int64 {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		t.Fatal(err)
	}
	var msgs []kafkago.Message
	for off := from; off < to; off++ {
		m, err := r.ReadMessage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, kafkago.Message{Partition: 0, Key: m.Key, Value: m.Value})
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(broker), Topic: topic, Balancer: kafkatest.ByPartition, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	// a writer's first metadata of a topic the connector created may not list it yet
	var err error
	if !wait.Until(func() bool {
		err = w.WriteMessages(t.Context(), msgs...)
		return !errors.Is(err, kafkago.UnknownTopicOrPartition)
	}, wait.Timeout) || err != nil {
		t.Fatalf("producing the connector's events again: %v", err)
	}
	end, _ := distinctEvents(t, broker, topic)
	return end
}

// startReplication runs rekey with args (a replicate of topic's one partition in group) in the
// background; stop waits until it committed every event up to the offset until, then stops it
// (SIGTERM) and waits for its exit 0.
func startReplication(t *testing.T, kc *kafkatest.Cluster, topic, group string, args ...string) (stop func(until int64)) {
	sigs := make(chan os.Signal)
	done := make(chan int, 1)
	var output string
	go func() {
		code, o, e := cliRun{signals: sigs}.run(t, args...)
		output = o + e
		done <- code
	}()
	return func(until int64) {
		wait.For(t, func() bool {
			select {
			case code := <-done:
				t.Fatalf("replicate exited early: %d\n%s", code, output)
			default:
			}
			return kc.Committed(t, group, topic, 1)[0] >= until
		}, "replicate to commit every event")
		interrupt(t, sigs, syscall.SIGTERM)
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("replicate: exit %d\n%s", code, output)
			}
		case <-time.After(wait.Timeout):
			t.Fatal("replicate did not stop on SIGTERM")
		}
	}
}
