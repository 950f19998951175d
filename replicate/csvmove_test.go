package replicate

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// An update that moves its row to another key is applied whole or not at all, into CSV files
// too: when its new row holds a value CSV refuses (an empty string: Spark's CSV reader, which
// Lindorm's bulkload runs, reads it as NULL), the change is rejected (csv_value) and the old key
// is not deleted, so the row stays under its old key as the reject says nothing was applied.
// Before, the old key's DELETE was written and the new row rejected: the row left the table.
func TestCSVRefusedMoveDeletesNothing(t *testing.T) {
	dir := t.TempDir()
	m, err := transform.Decode([]byte("version: 1\nsource: {columns: {id: bigint, g: text, v: text}}\ntarget: {table: t, primary_key: '[g][id]'}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kafka.ParseURI("kafka://127.0.0.1:9/t?group=g&format=debezium", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Kafka: kc, Program: p, Format: csv.New(), Store: sinktest.Folder(t, dir), Out: dir,
		RollSize: 64 << 20, RollInterval: time.Hour, Memory: 64 << 20, Logger: zap.NewNop()}
	if cfg.Plan, err = p.PlanRegions(transform.RegionRequest{}); err != nil {
		t.Fatal(err)
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.man.close()
	w := r.detachedWorker(0, 1)
	const src = `"source":{"connector":"postgresql"}`
	msgs := []kafkago.Message{
		{Offset: 0, Key: []byte(`{"id":1}`), Value: []byte(`{"op":"u",` + src + `,"before":{"id":1,"g":"a","v":"x"},"after":{"id":1,"g":"b","v":""}}`)},
		{Offset: 1, Key: []byte(`{"id":2}`), Value: []byte(`{"op":"u",` + src + `,"before":{"id":2,"g":"a","v":"x"},"after":{"id":2,"g":"b","v":"y"}}`)},
	}
	if err := w.processMessages(msgs); err != nil {
		t.Fatal(err)
	}
	if got := r.metrics.Deletes.Load(); got != 1 {
		t.Errorf("%d DELETEs written; want 1: the old key of the move CSV can write, none of the one it refuses", got)
	}
	if got := r.metrics.RowsWritten.Load(); got != 1 {
		t.Errorf("%d rows written, want 1", got)
	}
	if got := r.metrics.RejectCodes(); got["csv_value"] != 1 {
		t.Errorf("rejects %v; want one csv_value", got)
	}
	if err := w.closeRoll("stop"); err != nil {
		t.Fatal(err)
	}
}
