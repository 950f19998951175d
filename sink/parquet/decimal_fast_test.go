package parquet

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A decimal with its unscaled value cached (pipeline.DecimalUnscaled, as the sources and the
// cast give it) is appended without files.DecimalValue when it is at the column's scale: the
// bytes must be those of the same decimal given as text alone (files.DecimalValue's parse), and a
// value the column cannot hold must still be refused, at every width and sign, in plain and
// dictionary chunks.
func TestCachedDecimalsAppendAsTheirText(t *testing.T) {
	cols := []pipeline.Column{{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}}
	for _, ps := range [][2]int{{1, 0}, {2, 1}, {4, 2}, {9, 2}, {10, 0}, {17, 5}, {18, 2}, {18, 18}, {19, 2}, {38, 18}} {
		cols = append(cols, pipeline.Column{Name: fmt.Sprintf("d%d_%d", ps[0], ps[1]), Type: pipeline.TypeDecimal,
			Precision: ps[0], Scale: ps[1], KeyPos: -1})
	}
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: cols}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dict := range []bool{false, true} {
		f := New(WithDictionary(dict))
		cached, text := newTestBuffer(t, f, schema), newTestBuffer(t, f, schema)
		for row := range 3000 {
			a, b := make([]pipeline.Value, len(cols)), make([]pipeline.Value, len(cols))
			a[0], b[0] = pipeline.Int(int64(row)), pipeline.Int(int64(row))
			for i, c := range cols[1:] {
				u := int64(rng.Uint64() >> (1 + rng.IntN(63)))
				switch row % 7 {
				case 0:
					u = int64(math.Pow10(min(c.Precision, 18))) - 1 // the largest that fits
				case 1:
					u = int64(math.Pow10(min(c.Precision, 18))) // one more digit
				case 2:
					u = math.MaxInt64
				}
				if row%2 == 1 {
					u = -u
				}
				scale := c.Scale
				if row%5 == 4 {
					scale = max(0, scale-1) // another scale: files.DecimalValue scales it
				}
				s := decimalText(u, scale)
				a[1+i], b[1+i] = pipeline.DecimalUnscaled(s, u, scale), pipeline.Decimal(s)
			}
			errA, errB := cached.Append(a), text.Append(b)
			if fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Fatalf("dictionary %v, row %d %v: cached %v, text %v", dict, row, b, errA, errB)
			}
		}
		for i := range cols {
			ca, cb := &cached.cols[i], &text.cols[i]
			if !bytes.Equal(ca.data, cb.data) || !bytes.Equal(ca.dvals, cb.dvals) || fmt.Sprint(ca.idx) != fmt.Sprint(cb.idx) {
				t.Fatalf("dictionary %v, column %s: the cached decimals' bytes differ from the text's", dict, cols[i].Name)
			}
		}
	}
}

func newTestBuffer(t *testing.T, f *Format, schema pipeline.TargetSchema) *buffer {
	t.Helper()
	b, err := f.NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	return b.(*buffer)
}

// decimalText is unscaled × 10^-scale in plain notation.
func decimalText(u int64, scale int) string {
	s := strconv.FormatUint(absU64(u), 10)
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if u < 0 {
		s = "-" + s
	}
	return s
}
