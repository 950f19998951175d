package replicate

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

// Cells written with Cassandra's USING TTL carry their expiry, which replicate does not apply: a
// table holds them after Cassandra expires them. Replicating the captured events into a table
// counts them (three events, four such cells: rekey_ttl_cells_total and the summary) and warns
// once. Before, nothing told of them.
func TestCellsWrittenWithATTLAreCountedAndWarnedOf(t *testing.T) {
	m, err := transform.Decode([]byte("version: 1\nsource: {columns: {a: int, b: int, c: int, x: text, y: int}}\ntarget: {table: t, primary_key: '[a][b][c]'}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../source/kafka/testdata/debezium-cassandra5-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []kafkago.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Key, Value json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, kafkago.Message{Offset: int64(len(msgs)), Key: ev.Key, Value: ev.Value})
	}
	core, logs := observer.New(zap.WarnLevel)
	r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium, Topic: "t"}}, target: prog.Target(),
		log: zap.New(core), metrics: newMetrics("t", "test", nil)}
	w := &sqlWorker{partWorker: r.newSQLPartWorker(0, nil)}
	for range 2 { // two batches: one warning
		w.collect(w.dec.DecodeBatch(nil, kafka.FetchBatch{Messages: msgs}))
		w.countTTLCells(w.ttlCells)
		w.dec.SkipRepeats = false // the same events again, as new ones
	}
	if n := r.metrics.TTLCells.Load(); n != 8 {
		t.Errorf("%d cells with a TTL counted; want 8 (4 in each batch)", n)
	}
	warned := 0
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "USING TTL") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings of cells with a TTL; want 1", warned)
	}
}
