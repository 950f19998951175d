package parquet_test

import (
	"testing"

	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// BenchmarkAppend is the per-row cost of copying orders rows into a region buffer (validation,
// conversion, dictionary lookups), cutting a chunk every 64K rows.
func BenchmarkAppend(b *testing.B) {
	plan := sinktest.HexPlan(16)
	g := newOrderGen(plan)
	buf, err := parquet.New().NewBuffer(sinktest.Orders())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		rows := g.batch(i % (1 << 20))
		for k := range rows {
			if err := buf.Append(rows[k].Values); err != nil {
				b.Fatal(err)
			}
		}
		if buf.Rows() >= 64<<10 {
			buf.Cut().Release()
		}
	}
}
