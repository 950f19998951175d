package transform

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestDecimalTextCarriesItsNumber: decimal text the conversion accepted carries its number
// (unscaled and scale) when it is canonical and short, so that the sink encodes it without parsing
// the text again; the text stays what the value is, and other text is carried alone.
func TestDecimalTextCarriesItsNumber(t *testing.T) {
	cases := []struct {
		in       string
		unscaled int64
		scale    int
		ok       bool
	}{
		{"12.50", 1250, 2, true}, {"-0.5", -5, 1, true}, {"7", 7, 0, true},
		{"123456789012345678", 123456789012345678, 0, true},
		{"1234567890123456789", 0, 0, false},                          // 19 digits: the text alone
		{"+7", 0, 0, false}, {".5", 0, 0, false}, {"5.", 0, 0, false}, // not canonical: the text alone
		{"1e3", 0, 0, false}, {"1.5E-2", 0, 0, false}, {"", 0, 0, false}, {"-", 0, 0, false}, {"1.2.3", 0, 0, false},
	}
	e := &Evaluator{}
	for _, c := range cases {
		v, rerr := e.convert(pipeline.Text(c.in), colType{T: pipeline.TypeDecimal, P: 38, S: 18})
		if rerr != nil {
			if c.ok {
				t.Errorf("%q as DECIMAL(38,18): %v", c.in, rerr)
			}
			continue
		}
		u, sc, ok := v.Unscaled()
		if ok != c.ok || (ok && (u != c.unscaled || sc != c.scale)) || v.Kind != pipeline.KindDecimal {
			t.Errorf("%q as DECIMAL(38,18) = %#v; want the number %d, %d: %v", c.in, v, c.unscaled, c.scale, c.ok)
		}
	}
	v, rerr := e.convert(pipeline.Text(" 12.5 "), colType{T: pipeline.TypeDecimal, P: 18, S: 2})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if u, sc, ok := v.Unscaled(); !ok || u != 125 || sc != 1 || v.Str != "12.5" || v.Kind != pipeline.KindDecimal {
		t.Fatalf("12.5 as DECIMAL(18,2) = %#v", v)
	}
}
