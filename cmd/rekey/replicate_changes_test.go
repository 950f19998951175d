package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// changeLog is the JSON change events of a topic as produced, each with its offset, and what
// each makes of its key's row ("" deletes it: a tombstone).
type changeLog struct {
	partitions int
	msgs       []kafkago.Message
	rows       []string // by message: "status|amount|ts" of the row it writes, "" for a delete
	keys       []string // by message: the row's key, pk1/orderid
	ends       []int64
}

func newChangeLog(partitions int) *changeLog {
	return &changeLog{partitions: partitions, ends: make([]int64, partitions)}
}

// add appends n events over keys 0..keys-1 of users named prefix (a key's partition is its id
// modulo the partitions), a fifth of them tombstones, and returns them.
func (l *changeLog) add(rng *rand.Rand, prefix string, n, keys int) []kafkago.Message {
	from := len(l.msgs)
	for range n {
		id := rng.IntN(keys)
		r := &e2eRow{user: fmt.Sprintf("%s%03d", prefix, id%50), id: id, status: fmt.Sprintf("s%d", len(l.msgs)), cents: rng.IntN(100000)}
		l.put(r, rng.IntN(5) == 0)
	}
	return l.msgs[from:]
}

// put appends the event of r: its row, or its delete (a tombstone).
func (l *changeLog) put(r *e2eRow, del bool) kafkago.Message {
	p := r.id % l.partitions
	m := kafkago.Message{Partition: p, Key: r.kafkaKey(), Offset: l.ends[p]}
	row := ""
	if !del {
		m.Value = []byte(r.image("json"))
		row = fmt.Sprintf("%s|%d.%02d|%s", r.status, r.cents/100, r.cents%100, e2eTSTable)
	}
	l.ends[p]++
	l.msgs, l.rows, l.keys = append(l.msgs, m), append(l.rows, row), append(l.keys, r.key())
	return m
}

// table is the rows the events from..to (indexes) give, applied in order, but for those skip
// says were never read.
func (l *changeLog) table(from, to int, skip func(kafkago.Message) bool) map[string]string {
	want := map[string]string{}
	for i := from; i < to; i++ {
		if skip != nil && skip(l.msgs[i]) {
			continue
		}
		if l.rows[i] == "" {
			delete(want, l.keys[i])
		} else {
			want[l.keys[i]] = l.rows[i]
		}
	}
	return want
}

// compareTable checks that the table holds exactly want.
func compareTable(t *testing.T, srv *mysqltest.Server, table string, want map[string]string) {
	t.Helper()
	got := e2eTableState(t, srv.DB(t), table)
	bad := 0
	for k, v := range want {
		if got[k] != v {
			if bad++; bad <= 10 {
				t.Errorf("key %s: %q, want %q", k, got[k], v)
			}
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 10 {
				t.Errorf("key %s is in the table (%q), want it absent", k, v)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d differences: %d rows in the table, %d expected", bad, len(got), len(want))
	}
	t.Logf("the table holds the %d rows the topic gives", len(got))
}

// replicateProc returns a replicate process of the topic into table (created here) of srv.
func replicateProc(t *testing.T, c *kafkatest.Cluster, srv *mysqltest.Server, topic, group, table string, extra ...string) *rekeyProc {
	t.Helper()
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	srv.Exec(t, strings.Replace(mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()), "`orders`", "`"+table+"`", 1))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &rekeyProc{name: table, exe: exe, logPath: filepath.Join(dir, "rekey.log"), args: append([]string{"replicate", "-m", mapping,
		"--source", "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=" + group + "&format=json",
		"--out", srv.URI("table=" + table), "--sql-conns", "2", "--state", filepath.Join(dir, "state"),
		"--progress", "never", "--session-timeout", "2s", "--rebalance-timeout", "4s", "--log-level", "info"}, extra...)}
	t.Cleanup(p.stop)
	return p
}

// waitCaughtUp waits until the group committed every partition's end offset (ends).
func waitCaughtUp(t *testing.T, c *kafkatest.Cluster, p *rekeyProc, group, topic string, ends []int64) {
	t.Helper()
	wait.For(t, func() bool {
		p.checkAlive(t)
		committed := c.Committed(t, group, topic, len(ends))
		for i, e := range ends {
			if committed[i] != e {
				return false
			}
		}
		return true
	}, fmt.Sprintf("%s to commit the end offsets %v", p.name, ends))
}

// changesRun is what a test of replicate processes into MariaDB starts with: the server, the
// cluster and a random source whose seed is logged.
func changesRun(t *testing.T) (*mysqltest.Server, *kafkatest.Cluster, *rand.Rand) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: replicate processes into MariaDB for 10 to 30 s")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return mysqltest.MariaDB(t), kafkatest.Start(t), rand.New(rand.NewPCG(seed, 3))
}

// replicate --mark-start into MariaDB: the changes before the mark are never applied; replicate
// is SIGKILLed between a batch's apply and its offset's commit and right after a commit (crash
// points), while changes arrive, and started again each time; the records a retention deleted
// before they were read stop it (exit 3, naming the gap) until --accept-gaps; the table ends
// equal to the changes after the mark, less those deleted.
func TestReplicateMarkStartKillsAndGapIntoMariaDB(t *testing.T) {
	srv, c, rng := changesRun(t)
	topic := c.CreateTopic(t, "mark-gap", 2)
	group := c.Topic("g-mark-gap")
	l := newChangeLog(2)
	c.Produce(t, topic, l.add(rng, "old", 300, 80)...)
	marked := len(l.msgs)
	uri := "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=" + group
	if code, out, errs := runCLI(t, "replicate", "--source", uri, "--mark-start"); code != 0 {
		t.Fatalf("--mark-start: exit %d\n%s%s", code, out, errs)
	}
	if got := c.Committed(t, group, topic, 2); got[0] != l.ends[0] || got[1] != l.ends[1] {
		t.Fatalf("--mark-start committed %v, want the end offsets %v", got, l.ends)
	}

	rep := replicateProc(t, c, srv, topic, group, "orders_mark")
	// crash points while changes arrive: each start applies batches and dies at its point
	for _, at := range []string{"applied:1", "offset:2", "applied:3", "offset:1"} {
		w := c.Writer(topic)
		rep.start(t, killAtEnv+"="+at)
		// a few changes at a time, the next ones once these are applied (or the process died)
		for rep.alive() {
			if err := w.WriteMessages(t.Context(), l.add(rng, "new", 20, 80)...); err != nil {
				t.Fatal(err)
			}
			wait.For(t, func() bool {
				committed := c.Committed(t, group, topic, 2)
				return !rep.alive() || committed[0] == l.ends[0] && committed[1] == l.ends[1]
			}, "the changes applied, or the kill point")
		}
		w.Close()
		rep.waitKilled(t)
	}
	rep.start(t)
	waitCaughtUp(t, c, rep, group, topic, l.ends)
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate: exit %d after SIGTERM\n%s", code, rep.logTail())
	}
	compareTable(t, srv, "orders_mark", l.table(marked, len(l.msgs), nil))

	// a retention gap: messages of partition 0 deleted before they were read
	read := l.ends[0]
	c.Produce(t, topic, l.add(rng, "new", 400, 80)...)
	cut := read + (l.ends[0]-read)/2
	c.DeleteRecords(t, topic, 0, cut)
	rep.start(t)
	if code := rep.wait(t); code != exitFailed || !strings.Contains(rep.logTail(), fmt.Sprintf("committed next offset %d", read)) ||
		!strings.Contains(rep.logTail(), fmt.Sprintf("earliest available offset %d", cut)) {
		t.Fatalf("replicate across a gap: exit %d, want %d naming offsets %d and %d\n%s", code, exitFailed, read, cut, rep.logTail())
	}
	if got := c.Committed(t, group, topic, 2)[0]; got != read {
		t.Fatalf("committed offset %d of partition 0 after the gap error, want %d", got, read)
	}
	rep.args = append(rep.args, "--accept-gaps")
	rep.start(t)
	waitCaughtUp(t, c, rep, group, topic, l.ends)
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate --accept-gaps: exit %d after SIGTERM\n%s", code, rep.logTail())
	}
	deleted := func(m kafkago.Message) bool { return m.Partition == 0 && m.Offset >= read && m.Offset < cut }
	compareTable(t, srv, "orders_mark", l.table(marked, len(l.msgs), deleted))
	t.Logf("%d changes before the mark, %d after; %d starts, %d killed at crash points; %d messages of partition 0 deleted unread",
		marked, len(l.msgs)-marked, rep.starts, rep.kills, cut-read)
}

// A compacted topic (cleanup.policy=compact) into MariaDB: replicate applies the first changes
// and stops; more changes arrive, keys end deleted by tombstones, and the log cleaner removes the
// older values of every key (the offsets get holes, the group's committed offset may be one of
// them); replicate started again reads on from there. The table equals the latest value of every
// key, the keys whose latest record is a tombstone absent. (kfake does not compact: there the
// topic keeps every record.)
func TestReplicateCompactedTopicIntoMariaDB(t *testing.T) {
	srv, c, rng := changesRun(t)
	// segments roll every 100 ms (at the next record) and are compacted at once; tombstones stay
	// delete.retention.ms (a day) past their compaction: a consumer that stops longer than that
	// misses the deletes (Kafka's contract, docs/replicate.md)
	topic := c.CreateTopicWith(t, "compacted", 2, map[string]string{"cleanup.policy": "compact", "segment.ms": "100",
		"min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"})
	group := c.Topic("g-compacted")
	l := newChangeLog(2)
	c.Produce(t, topic, l.add(rng, "k", 500, 40)...)
	rep := replicateProc(t, c, srv, topic, group, "orders_compacted")
	rep.start(t)
	waitCaughtUp(t, c, rep, group, topic, l.ends)
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate: exit %d after SIGTERM\n%s", code, rep.logTail())
	}

	// more changes, then a tombstone for keys 0 to 9: their rows must go
	c.Produce(t, topic, l.add(rng, "k", 1000, 40)...)
	for id := range 10 {
		c.Produce(t, topic, l.put(&e2eRow{user: fmt.Sprintf("k%03d", id), id: id}, true))
	}
	if kafkatest.Real() {
		// the cleaner compacts the segments behind the active one: a record more (a row of its
		// own key, in the expected table too) rolls the segment; then wait for the holes
		last := time.Time{}
		wait.For(t, func() bool {
			if time.Since(last) > 300*time.Millisecond {
				for p := range 2 {
					c.Produce(t, topic, l.put(&e2eRow{user: "roll", id: 1000 + p, status: fmt.Sprintf("roll%d", len(l.msgs))}, false))
				}
				last = time.Now()
			}
			for p := range 2 {
				if len(c.Offsets(t, topic, p)) > int(l.ends[p])/4 {
					return false
				}
			}
			return true
		}, "the log cleaner to remove the older values of the keys")
	}
	kept := len(c.Offsets(t, topic, 0)) + len(c.Offsets(t, topic, 1))
	rep.start(t)
	waitCaughtUp(t, c, rep, group, topic, l.ends)
	if code := rep.terminate(t); code != 0 {
		t.Fatalf("replicate: exit %d after SIGTERM\n%s", code, rep.logTail())
	}
	compareTable(t, srv, "orders_compacted", l.table(0, len(l.msgs), nil))
	t.Logf("%d records produced, %d kept by the topic", len(l.msgs), kept)
}

// The replication summary names the messages that needed nothing applied (Debezium's tombstones
// after their delete events, events the connector published again), so that its figures account
// for every message in; before, they were in "messages in" and in no other line.
func TestReplicationSummaryNamesMessagesSkipped(t *testing.T) {
	m := &replicate.Metrics{}
	m.MessagesIn.Store(10)
	m.RowsWritten.Store(4)
	m.Deletes.Store(1)
	m.TombstonesDropped.Store(2)
	m.RepeatsSkipped.Store(3)
	var b strings.Builder
	printReplicationSummary(&b, summaryTitle(nil, true), m, pipeline.RegionPlan{}, "mysql://db/t", true, time.Second)
	for _, want := range []string{"tombstones      2 (", "repeats         3 ("} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in the summary:\n%s", want, b.String())
		}
	}
}

// Messages the topic deleted before they were read, skipped with --accept-gaps, are lost to the
// target: the summary names them, as the only account of the loss a replication into a table
// keeps (it has no manifest.json to record them in, and /metrics ends with the process).
func TestReplicationSummaryNamesMessagesLostToGaps(t *testing.T) {
	m := &replicate.Metrics{}
	m.MessagesIn.Store(10)
	m.RowsWritten.Store(10)
	m.Gaps.Store(2)
	m.GapMessages.Store(40)
	for _, toSQL := range []bool{true, false} {
		var b strings.Builder
		printReplicationSummary(&b, summaryTitle(nil, true), m, pipeline.RegionPlan{}, "mysql://db/t", toSQL, time.Second)
		if !strings.Contains(b.String(), "messages lost   40 (") || !strings.Contains(b.String(), "2 gaps") {
			t.Errorf("into a table %v: the messages lost to gaps are not in the summary:\n%s", toSQL, b.String())
		}
	}
	var b strings.Builder
	printReplicationSummary(&b, summaryTitle(nil, true), &replicate.Metrics{}, pipeline.RegionPlan{}, "mysql://db/t", true, time.Second)
	if strings.Contains(b.String(), "lost") {
		t.Errorf("a summary naming messages lost when none were:\n%s", b.String())
	}
}
