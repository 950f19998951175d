package verify

import (
	"context"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// BenchmarkLookupCompare verifies 100,000 rows against a table where every other key is
// missing: the per-key comparison (index, lookup, judge) dominates; with repair, the source is
// read once more for the rows of the 50,000 keys missing.
func BenchmarkLookupCompare(b *testing.B) {
	p := testProgram(b)
	recs := testRecords(100_000)
	tbl := migrated(b, p, recs)
	tbl.max = 2000
	i := 0
	for k := range tbl.rows {
		if i++; i%2 == 0 {
			delete(tbl.rows, k)
		}
	}
	for _, repair := range []bool{false, true} {
		name := "compare"
		if repair {
			name = "repair"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Program: p, Source: &sliceSource{recs}, Lookup: tbl, Workers: 2}
			if repair {
				cfg.Repair = func(*pipeline.Batch, *pipeline.Record) error { return nil }
			}
			b.ReportAllocs()
			for range b.N {
				cfg.TmpDir = b.TempDir()
				res, err := Run(context.Background(), cfg)
				if err != nil || res.Missing != 50_000 || repair && res.RepairRows != 50_000 {
					b.Fatalf("%v %+v", err, res)
				}
			}
			b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
