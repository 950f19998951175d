package transform

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestDecimalTextCarriesItsNumber: decimal text the conversion accepted carries its number
// (unscaled and scale) when it is plain and short, so that the sink encodes it without parsing the
// text again; the text stays what the value is.
func TestDecimalTextCarriesItsNumber(t *testing.T) {
	cases := []struct {
		in       string
		unscaled int64
		scale    int
		ok       bool
	}{
		{"12.50", 1250, 2, true}, {"-0.5", -5, 1, true}, {"+7", 7, 0, true}, {".5", 5, 1, true}, {"5.", 5, 0, true},
		{"123456789012345678", 123456789012345678, 0, true},
		{"1234567890123456789", 0, 0, false}, // 19 digits: the text alone
		{"1e3", 0, 0, false}, {"1.5E-2", 0, 0, false}, {"", 0, 0, false}, {"-", 0, 0, false}, {"1.2.3", 0, 0, false},
	}
	for _, c := range cases {
		u, sc, ok := plainUnscaled(c.in)
		if ok != c.ok || (ok && (u != c.unscaled || sc != c.scale)) {
			t.Errorf("plainUnscaled(%q) = %d, %d, %v; want %d, %d, %v", c.in, u, sc, ok, c.unscaled, c.scale, c.ok)
		}
	}
	e := &Evaluator{}
	v, rerr := e.convert(pipeline.Text(" 12.5 "), colType{T: pipeline.TypeDecimal, P: 18, S: 2})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if u, sc, ok := v.Unscaled(); !ok || u != 125 || sc != 1 || v.Str != "12.5" || v.Kind != pipeline.KindDecimal {
		t.Fatalf("12.5 as DECIMAL(18,2) = %#v", v)
	}
}
