package replicate_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A transaction the producer aborted changes nothing in the table: its upserts of keys a
// committed transaction wrote before, and of keys of its own, are left out, and so are its
// messages from the counts; the committed transactions around it and a plain producer's messages
// written while it was open are applied in offset order.
func TestAbortedTransactionsAreNotReplicated(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-txn", 1)
	want, applied, _ := produceTransactions(t, c, topic)
	dir := t.TempDir()
	group := c.Group("g-txn")
	rn := start(t, config(t, c, topic, group, "json", dir))
	waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 30*time.Second)
	wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() >= applied }, "the messages counted")
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	if n := rn.r.Metrics().MessagesIn.Load(); n != applied {
		t.Errorf("%d messages in, want the %d committed ones", n, applied)
	}
	m := readManifest(t, dir)
	if m.RowsIn != applied || m.RowsWritten != applied || m.RowsRejected != 0 {
		t.Errorf("manifest rows in %d, written %d, rejected %d; want %d, %d, 0", m.RowsIn, m.RowsWritten, m.RowsRejected, applied, applied)
	}
}

// produceTransactions writes three transactions to topic's partition 0, committed, aborted and
// committed, each with a plain producer's message inside it: the partition ends with a commit
// marker. It returns the table the committed messages make, their number and the last one's offset.
func produceTransactions(t *testing.T, c *kafkatest.Cluster, topic string) (want model, applied, last int64) {
	t.Helper()
	ctx := context.Background()
	txn, plain := c.Producers(t, topic)
	want = model{}
	upsert := func(cl *kgo.Client, userid string, amount int64, keep bool) {
		t.Helper()
		r := row{userid: userid, amount: amount, note: fmt.Sprintf("n%d", amount)}
		rec := &kgo.Record{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, userid),
			Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"amount":%d,"note":%q}`, userid, amount, r.note)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if keep {
			want.upsert(r, 1)
			applied++
			last = rec.Offset
		}
	}
	for i, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		upsert(txn, "u-shared", int64(100*i), commit) // a key every transaction writes
		upsert(txn, fmt.Sprintf("u-txn%d", i), int64(100*i+1), commit)
		upsert(plain, fmt.Sprintf("u-plain%d", i), int64(100*i+2), true)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	return want, applied, last
}

// A partition whose last offset is a transaction's marker is replicated up to its end offset, as
// Kafka's consumer commits its position: the group's committed offset, manifest.json's next
// offset and rekey_consumer_lag reach the end, into files and into a table. Committing the offset
// after the last message instead left every such partition at a lag of 1 for ever (every
// partition of a transactional producer, or of a Kafka Connect source with exactly-once
// support), and the cut-over's drain, which waits for lag 0, never ended.
func TestDrainReachesTheEndPastATransactionMarker(t *testing.T) {
	for _, target := range []string{"files", "sql"} {
		t.Run(target, func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-txn-"+target, 1)
			_, applied, last := produceTransactions(t, c, topic)
			ends := endOffsets(t, c, topic)
			if ends[0] != last+2 {
				t.Fatalf("end offset %d, want %d: the last message %d and a commit marker", ends[0], last+2, last)
			}
			dir := t.TempDir()
			group := c.Group("g-drain-" + target)
			cfg := config(t, c, topic, group, "json", dir)
			if target == "sql" {
				db := mysqltest.GMS(t)
				db.Exec(t, mysqlsql.DDL(cfg.Program.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
				tgt, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				cfg.SQL = sqlsink.Config{Target: tgt, Conns: 1}
			}
			rn := start(t, cfg)
			waitCommitted(t, c, group, topic, ends, 30*time.Second)
			wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() >= applied }, "the messages counted")
			srv := httptest.NewServer(rn.r.Handler())
			defer srv.Close()
			// the metric follows the group's commit, which waitCommitted has already seen
			labels := map[string]string{"topic": topic, "partition": "0"}
			var fams map[string]*dto.MetricFamily
			wait.For(t, func() bool {
				fams = scrape(t, srv.URL+"/metrics")
				return fams["rekey_committed_offset"] != nil && metricValue(t, fams, "rekey_committed_offset", labels) == float64(ends[0])
			}, "rekey_committed_offset at the end offset")
			if got := metricValue(t, fams, "rekey_consumer_lag", map[string]string{"topic": topic, "partition": "0"}); got != 0 {
				t.Errorf("rekey_consumer_lag = %v once the end offset is committed, want 0", got)
			}
			if got := metricValue(t, fams, "rekey_committed_offset", map[string]string{"topic": topic, "partition": "0"}); got != float64(ends[0]) {
				t.Errorf("rekey_committed_offset = %v, want the end offset %d", got, ends[0])
			}
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
			if n := rn.r.Metrics().MessagesIn.Load(); n != applied {
				t.Errorf("%d messages in, want the %d committed ones", n, applied)
			}
			if target == "files" {
				m := readManifest(t, dir)
				if len(m.Replication.Partitions) != 1 || m.Replication.Partitions[0].NextOffset != ends[0] {
					t.Errorf("manifest.json's partitions %+v, want partition 0 at next offset %d", m.Replication.Partitions, ends[0])
				}
				if m.RowsIn != applied {
					t.Errorf("manifest rows in %d, want %d", m.RowsIn, applied)
				}
			}
		})
	}
}
