package replicate

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/source/kafka"
)

// verify reads a replication's changes through the SQL worker's translation (ReadChanges), with
// no metrics of a running replicate. An event Debezium's Cassandra connector published again (the
// captured INSERT, at its commit log position, a second time) is skipped there as replicate skips
// it, and the batch's changes are the first event's alone. Before, the skip counted it in the
// missing metrics, and verify stopped with a nil pointer dereference.
func TestChangesSkipARepeatedEventWithoutMetrics(t *testing.T) {
	prog := capturedProgram(t, "[a][b][c]")
	ev := capturedEvents(t)[0]
	// as ReadChanges makes it: a replicator without an output or metrics
	r := &Replicator{cfg: Config{Kafka: kafka.Config{Format: kafka.FormatDebezium, Topic: "t"}, Program: prog}, log: zap.NewNop(), target: prog.Target()}
	w := &sqlWorker{partWorker: r.newSQLPartWorker(0, nil)}
	msgs := []kafkago.Message{{Offset: 0, Key: ev.Key, Value: ev.Value}, {Offset: 1, Key: ev.Key, Value: ev.Value}}
	changes := w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs})
	if !changes[1].Repeat {
		t.Fatal("the second publication of the event is not marked as a repeat")
	}
	b := w.changeBatch(changes, PartitionWindow{End: 2})
	if len(b.Ops) != 1 || b.Offsets[0] != 0 || b.Messages != 2 {
		t.Errorf("changes %d (offsets %v) of %d messages; want the first event's upsert alone of 2", len(b.Ops), b.Offsets, b.Messages)
	}
}
