package transform

import (
	"math"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestDecimalTextCarriesItsNumber: decimal text the conversion accepted carries its number
// (unscaled and scale) when it is short, so that the sink encodes it without parsing the text
// again; the text (made canonical) stays what the value is, and longer text is carried alone.
func TestDecimalTextCarriesItsNumber(t *testing.T) {
	cases := []struct {
		in       string
		unscaled int64
		scale    int
		ok       bool
	}{
		{"12.50", 1250, 2, true}, {"-0.5", -5, 1, true}, {"7", 7, 0, true},
		{"123456789012345678", 123456789012345678, 0, true},
		{"1234567890123456789", 0, 0, false},                       // 19 digits: the text alone
		{"+7", 7, 0, true}, {".5", 5, 1, true}, {"5.", 5, 0, true}, // made canonical, then read
		{"1e3", 1000, 0, true}, {"1.5E-2", 15, 3, true}, {"", 0, 0, false}, {"-", 0, 0, false}, {"1.2.3", 0, 0, false},
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

// TestDateTimestampCasts: a DATE counts days and a TIMESTAMP milliseconds, so a cast between them
// converts the unit: a date becomes its midnight (UTC), a timestamp the date it falls on (UTC),
// before 1970 too. Keeping the number would make day 1 the instant 1 ms after the epoch.
func TestDateTimestampCasts(t *testing.T) {
	const day = 86_400_000
	cases := []castCase{
		{"dt :: TIMESTAMP", map[string]V{"dt": num(1)}, num(day)},
		{"dt :: TIMESTAMP", map[string]V{"dt": num(19724)}, num(19724 * day)}, // 2024-01-01
		{"dt :: TIMESTAMP", map[string]V{"dt": num(-1)}, num(-day)},
		{"ts :: DATE", map[string]V{"ts": num(19724*day + 3_600_000)}, num(19724)},
		{"ts :: DATE", map[string]V{"ts": num(day)}, num(1)},
		{"ts :: DATE", map[string]V{"ts": num(-1)}, num(-1)}, // 1969-12-31T23:59:59.999Z
		{"ts :: DATE", map[string]V{"ts": num(-day)}, num(-1)},
		{"ts :: DATE :: TIMESTAMP", map[string]V{"ts": num(day + 5)}, num(day)},
		{"dt :: BIGINT", map[string]V{"dt": num(3)}, num(3)}, // integers stay days and milliseconds
		{"ts :: BIGINT", map[string]V{"ts": num(3)}, num(3)},
	}
	checkCasts(t, cases)
	if _, _, rerr := evalExpr(t, "ts :: DATE", map[string]V{"ts": num(math.MaxInt64)}); rerr == nil || rerr.Code != pipeline.CodeType {
		t.Errorf("a timestamp beyond the DATE range: %v, want a type reject", rerr)
	}
}

// TestFloatCastRoundsToFloat32: a FLOAT column holds a 32-bit float, so a cast to FLOAT gives that
// float (what the sink writes and Lindorm keeps): two values that round to one FLOAT are one key
// to the report and the region plan too, and a value beyond FLOAT's range is rejected here.
func TestFloatCastRoundsToFloat32(t *testing.T) {
	f32 := func(f float32) V { return pipeline.Float(float64(f)) }
	cases := []castCase{
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(0.1)}, f32(0.1)},
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(0.30000001)}, f32(0.3)},
		{"n :: FLOAT", map[string]V{"n": num(16777217)}, f32(16777216)},
		{"s :: FLOAT", map[string]V{"s": txt("0.1")}, f32(0.1)},
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(math.Inf(-1))}, pipeline.Float(math.Inf(-1))},
		{"f :: DOUBLE", map[string]V{"f": pipeline.Float(0.1)}, pipeline.Float(0.1)},
	}
	checkCasts(t, cases)
	for _, in := range []map[string]V{{"f": pipeline.Float(1e300)}, {"f": pipeline.Float(-3.5e38)}} {
		if _, _, rerr := evalExpr(t, "f :: FLOAT", in); rerr == nil || rerr.Code != pipeline.CodeType {
			t.Errorf("f :: FLOAT %v: %v, want a type reject (beyond FLOAT's range)", in, rerr)
		}
	}
	if _, _, rerr := evalExpr(t, "s :: FLOAT", map[string]V{"s": txt("1e39")}); rerr == nil || rerr.Code != pipeline.CodeType {
		t.Errorf("'1e39' :: FLOAT: %v, want a type reject", rerr)
	}
}

// TestFloatCastRefusesUnderflow: a double too small for a FLOAT is beyond its range as one too
// large is, not a zero; a zero stays one, and a small value FLOAT still holds (subnormal) reads.
func TestFloatCastRefusesUnderflow(t *testing.T) {
	for _, in := range []map[string]V{{"f": pipeline.Float(1e-50)}, {"f": pipeline.Float(-1e-46)}} {
		if v, _, rerr := evalExpr(t, "f :: FLOAT", in); rerr == nil || rerr.Code != pipeline.CodeType {
			t.Errorf("f :: FLOAT %v = %v, %v; want a type reject (beyond FLOAT's range)", in, v, rerr)
		}
	}
	f32 := func(f float32) V { return pipeline.Float(float64(f)) }
	checkCasts(t, []castCase{
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(0)}, f32(0)},
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(math.Copysign(0, -1))}, pipeline.Float(math.Copysign(0, -1))},
		{"f :: FLOAT", map[string]V{"f": pipeline.Float(1e-45)}, f32(1e-45)},
		{"s :: FLOAT", map[string]V{"s": txt("0e-99")}, f32(0)},
	})
}

// TestDoubleCastRefusesUnderflow: text cast to DOUBLE (or FLOAT) that is too small for the type is
// beyond its range, as a double column's text is, not a 0 (strconv.ParseFloat reads it as 0
// without an error); zeros, and small values the type still holds, read.
func TestDoubleCastRefusesUnderflow(t *testing.T) {
	for _, c := range []struct{ expr, s string }{{"s :: DOUBLE", "1e-400"}, {"s :: DOUBLE", "-0.5e-330"}, {"s :: DOUBLE", "0x1p-1100"}, {"s :: FLOAT", "1e-50"}} {
		if v, _, rerr := evalExpr(t, c.expr, map[string]V{"s": txt(c.s)}); rerr == nil || rerr.Code != pipeline.CodeType || !strings.Contains(rerr.Message, "range") {
			t.Errorf("%s with s=%q = %v, %v; want a type reject (beyond the range)", c.expr, c.s, v, rerr)
		}
	}
	checkCasts(t, []castCase{
		{"s :: DOUBLE", map[string]V{"s": txt("0.000e-5")}, pipeline.Float(0)},
		{"s :: DOUBLE", map[string]V{"s": txt("-0")}, pipeline.Float(math.Copysign(0, -1))},
		{"s :: DOUBLE", map[string]V{"s": txt("5e-324")}, pipeline.Float(5e-324)},
		{"s :: DOUBLE", map[string]V{"s": txt("0x0p0")}, pipeline.Float(0)},
	})
}

// TestFloatCastRefusesUnderscores: text cast to FLOAT or DOUBLE is read as a double column's text
// is: Go's digit separators ("3_4", which strconv.ParseFloat reads as 34) are no number.
func TestFloatCastRefusesUnderscores(t *testing.T) {
	for _, expr := range []string{"s :: DOUBLE", "s :: FLOAT"} {
		for _, s := range []string{"3_4", "1_000.5", "0x1_0p0"} {
			if v, _, rerr := evalExpr(t, expr, map[string]V{"s": txt(s)}); rerr == nil || rerr.Code != pipeline.CodeType {
				t.Errorf("%s with s=%q = %v, %v; want a type reject", expr, s, v, rerr)
			}
		}
	}
}

// An integer cast to FLOAT is rounded once, to the nearest 32-bit float: through a float64
// first, 2^53+2^29+1 became 2^53+2^29, exactly between two FLOATs, and then the even one, 2^53,
// where 2^53+2^30 is nearer.
func TestIntegerCastToFloatRoundsOnce(t *testing.T) {
	const n = 1<<53 + 1<<29 + 1
	checkCasts(t, []castCase{
		{"n :: FLOAT", map[string]V{"n": num(n)}, pipeline.Float(1<<53 + 1<<30)},
		{"n :: FLOAT", map[string]V{"n": num(-n)}, pipeline.Float(-(1<<53 + 1<<30))},
		{"n :: DOUBLE", map[string]V{"n": num(n)}, pipeline.Float(1<<53 + 1<<29)}, // one rounding already
	})
}

// A DECIMAL is convertible to TIMESTAMP and DATE (the mapping compiles): a whole number is epoch
// milliseconds or days, as a BIGINT is, and any other is rejected; not every row rejected.
func TestDecimalCastToTimestampAndDate(t *testing.T) {
	checkCasts(t, []castCase{
		{"d :: TIMESTAMP", map[string]V{"d": pipeline.DecimalUnscaled("1704067200000", 1704067200000, 0)}, num(1704067200000)},
		{"d :: TIMESTAMP", map[string]V{"d": pipeline.Decimal("-1")}, num(-1)},
		{"d :: DATE", map[string]V{"d": pipeline.Decimal("19723")}, num(19723)},
	})
	for _, c := range []struct{ expr, d string }{{"d :: TIMESTAMP", "1.5"}, {"d :: DATE", "1.5"}, {"d :: DATE", "3000000000"}} {
		if _, _, rerr := evalExpr(t, c.expr, map[string]V{"d": pipeline.Decimal(c.d)}); rerr == nil || rerr.Code != pipeline.CodeType {
			t.Errorf("%s of %s: %v, want a type reject", c.expr, c.d, rerr)
		}
	}
}

// TestDecimalCastIsCanonical: a value cast to DECIMAL holds the canonical text the sources give a
// decimal (no '+', leading zeros or exponent, no sign on zero, the scale kept), so that the same
// number spelled two ways hashes, concatenates and compares the same after the cast.
func TestDecimalCastIsCanonical(t *testing.T) {
	cases := []struct {
		expr string
		in   map[string]V
		want string
	}{
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("1.5e3")}, "1500"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("1.50E1")}, "15.0"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("+.5")}, "0.5"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("007.50")}, "7.50"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("-0")}, "0"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("-0.00")}, "0.00"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("1e-2")}, "0.01"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("-5e-2")}, "-0.05"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("0e-3")}, "0.000"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("0e5")}, "0"},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("1500")}, "1500"},
		{"f :: DECIMAL(30,2)", map[string]V{"f": pipeline.Float(1e21)}, "1000000000000000000000"},
		{"f :: DECIMAL(10,8)", map[string]V{"f": pipeline.Float(1e-7)}, "0.0000001"},
		{"f :: DECIMAL(10,2)", map[string]V{"f": pipeline.Float(math.Copysign(0, -1))}, "0"},
		{"str(s :: DECIMAL(10,2))", map[string]V{"s": txt("1.5e3")}, "1500"},
	}
	for _, c := range cases {
		got, _, rerr := evalExpr(t, c.expr, c.in)
		if rerr != nil {
			t.Errorf("%s %v: unexpected reject %v", c.expr, c.in, rerr)
			continue
		}
		if got.Str != c.want {
			t.Errorf("%s %v = %q, want %q", c.expr, c.in, got.Str, c.want)
		}
	}
	a, _, _ := evalExpr(t, "md5(s :: DECIMAL(10,2))", map[string]V{"s": txt("1.5e3")})
	b, _, _ := evalExpr(t, "md5(s :: DECIMAL(10,2))", map[string]V{"s": txt("1500")})
	if a.Str != b.Str {
		t.Errorf("md5 of 1.5e3 and 1500 as DECIMAL(10,2): %s and %s, want one digest", a.Str, b.Str)
	}
	if _, _, rerr := evalExpr(t, "s :: DECIMAL(10,2)", map[string]V{"s": txt("0e-999999")}); rerr != nil {
		t.Errorf("a zero with a long exponent: %v", rerr)
	}
}

// TestDecimalCastCountsTheValuesDigits: whether text fits DECIMAL(p,s) is judged on the number it
// writes, wherever its exponent moves the point: zeros that end the integer digits become
// fraction zeros under a negative exponent, and zeros that begin the fraction become leading
// zeros under a positive one. Before, the digits were counted on each side of the written point
// and then shifted, so "10e-1" (1) was "1 fraction digit" for DECIMAL(5,0) and "0.05e2" (5) "2
// integer digits" for DECIMAL(2,1): rows that fit were rejected with a count they do not have.
func TestDecimalCastCountsTheValuesDigits(t *testing.T) {
	fits := []struct {
		in, typ, want string
	}{
		{"10e-1", "DECIMAL(5,0)", "1.0"},
		{"-1200e-2", "DECIMAL(2,0)", "-12.00"},
		{"00010.0e-2", "DECIMAL(13,1)", "0.100"},
		{"-00809990730530e-18", "DECIMAL(27,17)", "-0.000000809990730530"},
		{"0.05e2", "DECIMAL(2,1)", "5"},
		{"000.05342790504022636e11", "DECIMAL(19,9)", "5342790504.022636"},
		{"0.0012e3", "DECIMAL(2,1)", "1.2"},
	}
	for _, c := range fits {
		expr := "s :: " + c.typ
		got, _, rerr := evalExpr(t, expr, map[string]V{"s": txt(c.in)})
		if rerr != nil {
			t.Errorf("%s of %q: rejected (%v), but the value fits", expr, c.in, rerr)
			continue
		}
		if got.Str != c.want {
			t.Errorf("%s of %q = %q, want %q", expr, c.in, got.Str, c.want)
		}
	}
	tooLong := []struct{ in, typ, why string }{
		{"1e1", "DECIMAL(1,0)", "has 2 integer digits"},
		{"0.05e2", "DECIMAL(1,1)", "has 1 integer digits"},
		{"105e-2", "DECIMAL(5,1)", "has 2 fraction digits"},
		{"0.0012e2", "DECIMAL(5,1)", "has 2 fraction digits"},
	}
	for _, c := range tooLong {
		expr := "s :: " + c.typ
		_, _, rerr := evalExpr(t, expr, map[string]V{"s": txt(c.in)})
		if rerr == nil || rerr.Code != pipeline.CodeType || !strings.Contains(rerr.Message, c.why) {
			t.Errorf("%s of %q: %v, want a type reject saying it %s", expr, c.in, rerr, c.why)
		}
	}
}

// TestJSONCastRejectsText: a JSON column holds JSON, so text cast to JSON that is not one JSON
// value is rejected (type) rather than written into the column.
func TestJSONCastRejectsText(t *testing.T) {
	for _, in := range []string{`{"a": [1, 2]}`, `[]`, `"x"`, `42`, `null`} {
		got, _, rerr := evalExpr(t, "s :: JSON", map[string]V{"s": txt(in)})
		if rerr != nil || got.Str != in {
			t.Errorf("%q :: JSON = %#v, %v; want it as it is", in, got, rerr)
		}
	}
	if got, _, rerr := evalExpr(t, "l :: JSON", map[string]V{"l": txt(`[1,2]`)}); rerr != nil || got.Str != `[1,2]` {
		t.Errorf("a list :: JSON = %#v, %v", got, rerr)
	}
	for _, in := range []string{`not json`, `{"a": 1`, `{"a": 1} {"b": 2}`, ``, `tru`} {
		if _, _, rerr := evalExpr(t, "s :: JSON", map[string]V{"s": txt(in)}); rerr == nil || rerr.Code != pipeline.CodeType {
			t.Errorf("%q :: JSON: %v, want a type reject", in, rerr)
		}
	}
}

// castCase is an expression, its inputs and the value it must give.
type castCase struct {
	expr string
	in   map[string]V
	want V
}

// checkCasts evaluates each case, which must give its value and no reject.
func checkCasts(t *testing.T, cases []castCase) {
	t.Helper()
	for _, c := range cases {
		got, _, rerr := evalExpr(t, c.expr, c.in)
		if rerr != nil {
			t.Errorf("%s %v: unexpected reject %v", c.expr, c.in, rerr)
			continue
		}
		if !got.Equal(c.want) {
			t.Errorf("%s %v = %#v, want %#v", c.expr, c.in, got, c.want)
		}
	}
}
