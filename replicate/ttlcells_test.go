package replicate

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/source/kafka"
)

// Cells written with Cassandra's USING TTL carry their expiry, which replicate does not apply: a
// table holds them after Cassandra expires them. Replicating the captured events into a table
// counts them (three events, four such cells: rekey_ttl_cells_total and the summary) and warns
// once. Before, nothing told of them.
func TestCellsWrittenWithATTLAreCountedAndWarnedOf(t *testing.T) {
	prog := capturedProgram(t, "[a][b][c]")
	msgs := capturedMessages(capturedEvents(t))
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
