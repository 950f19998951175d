package replicate

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// A message counts once in a table's rejects, also when the table refuses the row of an update
// whose old key could not be computed (its first reject) after a later message of the batch was
// rejected: before, the refused row gave the update a second reject line.
func TestSQLMessageRejectedOnceWhenTheTableRefusesItsRow(t *testing.T) {
	pw := opsWorker(t, "[g][id]", outputCaps{})
	w := &sqlWorker{partWorker: pw.r.newSQLPartWorker(0, nil)}
	b := kafka.FetchBatch{Messages: []kafkago.Message{
		{Offset: 10, Value: []byte(`{"op":"u","before":{"id":1},"after":{"id":1,"g":"a","v":"x"}}`)},
		{Offset: 11, Value: []byte(`{"op":`)},
	}}
	changes := w.dec.DecodeBatch(nil, b)
	w.collect(changes)
	if len(w.ops) != 1 || len(w.rejects) != 2 {
		t.Fatalf("%d ops, %d rejects; want the update's upsert, and a reject of each message", len(w.ops), len(w.rejects))
	}
	w.sinkRejects(changes, []pipeline.RowReject{{Index: 0, Err: &pipeline.RowError{Code: pipeline.CodeType, Field: "v", Message: "too long"}}})
	seen := map[int64]int{}
	for _, rj := range w.rejects {
		seen[rj.Seq]++
	}
	if len(w.rejects) != 2 || seen[10] != 1 || seen[11] != 1 {
		for _, rj := range w.rejects {
			t.Logf("offset %d: %s %s: %s", rj.Seq, rj.Stage, rj.Code, rj.Message)
		}
		t.Fatalf("reject lines by offset %v; want one for each message", seen)
	}
	if w.upserts != 0 {
		t.Errorf("%d upserts counted; want 0 (the table refused the only one)", w.upserts)
	}
}
