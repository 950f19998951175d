package replicate

import (
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// The changes verify reads of a replication (ReadChanges: a replicator without an output, nor
// metrics) turn the events of another table than the mapping's source.table into no op, and
// count them (OtherTable), so that verify accounts for every message: read = ops' messages +
// rejected + skipped + other table. Before, such an event reached the metrics the replicator of
// verify does not have: verify failed with a nil pointer dereference, as it did on an event
// Debezium's Cassandra connector published twice.
func TestChangeBatchCountsOtherTables(t *testing.T) {
	m, err := transform.Decode([]byte("version: 1\nsource: {table: shop.t, columns: {id: bigint, v: text}}\ntarget: {table: t, primary_key: '[id]'}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := changesReplicator(ChangesConfig{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium}}, zap.NewNop())
	w := &sqlWorker{partWorker: r.newSQLPartWorker(0, nil)}
	var changes []kafka.Change
	for _, table := range []string{"t", "other", "t"} {
		changes = w.dec.Decode(changes, []byte(`{"id":1}`), []byte(`{"op":"c","source":{"connector":"mysql","db":"shop","table":"`+table+`"},"after":{"id":1,"v":"a"}}`))
	}
	// an event Debezium's Cassandra connector publishes twice (the same commit log position)
	cass := `{"op":"i","source":{"connector":"cassandra","keyspace":"shop","table":"t","file":"CommitLog-7-1.log","pos":10,"ts_us":1700000000000000},` +
		`"after":{"id":{"value":2,"deletion_ts":null,"set":true},"v":{"value":"b","deletion_ts":null,"set":true}}}`
	for range 2 {
		changes = w.dec.Decode(changes, []byte(`{"id":2}`), []byte(cass))
	}
	b := w.changeBatch(changes, PartitionWindow{})
	if len(b.Ops) != 3 || b.OtherTable != 1 || b.Messages != 5 {
		t.Fatalf("%d ops, %d of other tables, of %d messages; want 3 and 1 of 5", len(b.Ops), b.OtherTable, b.Messages)
	}
}
