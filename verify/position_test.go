package verify

import (
	"fmt"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Rows are named by their batch's stream and Seq, also when Seqs skip (a CSV record spanning
// lines, offsets with gaps), and the index stays one entry per batch.
func TestPositions(t *testing.T) {
	var p positions
	var ord uint64
	for _, b := range []pipeline.Batch{
		{Stream: "a.csv", Records: []pipeline.Record{{Seq: 2}, {Seq: 3}, {Seq: 4}}},
		{Stream: "a.csv", Records: []pipeline.Record{{Seq: 5}, {Seq: 7}, {Seq: 10}}},
		{Stream: "a.csv", Done: true},
		{Stream: "t/3", Records: []pipeline.Record{{Seq: 42}}},
	} {
		p.add(&b, ord)
		ord += uint64(len(b.Records))
	}
	want := []string{"a.csv:2", "a.csv:3", "a.csv:4", "a.csv:5", "a.csv:7", "a.csv:10", "t/3:42", ""}
	for i, w := range want {
		if got := p.where(uint64(i)); got != w {
			t.Errorf("where(%d) = %q, want %q", i, got, w)
		}
	}
	if len(p.batches) != 3 || p.batches[0].deltas != nil || p.batches[1].deltas == nil {
		t.Errorf("index %+v", p.batches)
	}
}

// BenchmarkPositionsAdd is the per-row cost of indexing source positions in the value by value
// comparison (one batch of 4096 rows per op).
func BenchmarkPositionsAdd(b *testing.B) {
	for _, step := range []int64{1, 2} {
		b.Run(fmt.Sprintf("seq step %d", step), func(b *testing.B) {
			recs := make([]pipeline.Record, 4096)
			for i := range recs {
				recs[i].Seq = 2 + int64(i)*step
			}
			batch := pipeline.Batch{Stream: "orders.csv", Records: recs}
			var p positions
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.add(&batch, uint64(i*len(recs)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/row")
		})
	}
}
