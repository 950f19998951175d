package parquet

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// A buffer's first chunk has no last chunk to size its columns by: told the chunk the sink cuts
// (ExpectChunk), it sizes them from its first rows (and once more when the dictionaries not worth
// keeping are given up), and none is copied into a larger slice otherwise before the cut, neither
// a column that starts its definition levels at its first null nor one that gives its dictionary
// up (its plain values).
func TestFirstChunkSizedOnce(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "p", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1}, // distinct: its dictionary is given up
		{Name: "s", Type: pipeline.TypeVarchar, KeyPos: -1},    // distinct text, the same
		{Name: "f", Type: pipeline.TypeDouble, KeyPos: -1},     // null from row 1500 on, then every third
		{Name: "code", Type: pipeline.TypeVarchar, KeyPos: -1}, // 3 values: keeps its dictionary
		{Name: "amt", Type: pipeline.TypeDecimal, Precision: 18, Scale: 2, KeyPos: -1},
	}}
	const used = 4 << 20
	for _, expect := range []bool{false, true} {
		fb, err := New().NewBuffer(schema)
		if err != nil {
			t.Fatal(err)
		}
		b := fb.(*buffer)
		if expect {
			b.ExpectChunk(0, used)
		}
		// each column slice's array, to see it replaced
		arrays := func() []uintptr {
			var a []uintptr
			for i := range b.cols {
				c := &b.cols[i]
				a = append(a, uintptr(unsafe.Pointer(unsafe.SliceData(c.def))), uintptr(unsafe.Pointer(unsafe.SliceData(c.i64))),
					uintptr(unsafe.Pointer(unsafe.SliceData(c.f64))), uintptr(unsafe.Pointer(unsafe.SliceData(c.data))),
					uintptr(unsafe.Pointer(unsafe.SliceData(c.ends))), uintptr(unsafe.Pointer(unsafe.SliceData(c.idx))))
			}
			return a
		}
		regrown := 0
		var prev []uintptr
		for r := 0; b.Used() < used; r++ {
			f := pipeline.Float(float64(r) / 3)
			if r >= 1500 && r%3 == 0 {
				f = pipeline.Null
			}
			err := b.Append([]pipeline.Value{pipeline.Int(int64(r)), pipeline.Int(1_700_000_000_000 + int64(r)*7),
				pipeline.Text(fmt.Sprintf("s%09d", r*7919)), f, pipeline.Text([]string{"tb", "ap", "wx"}[r%3]),
				pipeline.DecimalUnscaled(fmt.Sprintf("%d.25", r), int64(r)*100+25, 2)})
			if err != nil {
				t.Fatal(err)
			}
			now := arrays()
			if r > firstProbeRows && r != secondProbeRows {
				for k := range now {
					if prev[k] != 0 && now[k] != 0 && now[k] != prev[k] {
						regrown++
					}
				}
			}
			prev = now
		}
		t.Logf("expecting the chunk %v: %d rows, %d column slices regrown after row %d (but at row %d)", expect, b.Rows(), regrown, firstProbeRows, secondProbeRows)
		if expect && regrown > 0 {
			t.Errorf("%d column slices of the first chunk regrown after row %d, want none", regrown, firstProbeRows)
		}
		if !expect && regrown == 0 {
			t.Errorf("without ExpectChunk no slice was regrown: the test no longer tells the two apart")
		}
	}
}
