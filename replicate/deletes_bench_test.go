package replicate

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// BenchmarkDeleteStmt renders the DELETE of a two-column key (a hash-prefixed text key and an
// integer), as a tombstone does: the per-delete cost of a deletes/*.sql file.
func BenchmarkDeleteStmt(b *testing.B) {
	schema := pipeline.TargetSchema{Table: "orders", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "orderid", Type: pipeline.TypeBigint, KeyPos: 1}}}
	d := newDeleteStmt(schema)
	row := []pipeline.Value{pipeline.Text("a1b2user-0001234567@example.com"), pipeline.Int(4242424242)}
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = d.append(buf[:0], row)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deletes/s")
}
