package cqlvalue

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// parseInt reads eight digits at a time: every digit position, every byte just outside '0'..'9'
// at every position, and every length must read as strconv reads it.
func TestParseIntMatchesStrconv(t *testing.T) {
	check := func(s string) {
		t.Helper()
		n, ok, overflow := parseInt(s)
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil
		wantOverflow := err != nil && err.(*strconv.NumError).Err == strconv.ErrRange
		if ok != wantOK || overflow != wantOverflow || (ok && n != want) {
			t.Fatalf("parseInt(%q) = %d, %v, %v; strconv %d, %v", s, n, ok, overflow, want, err)
		}
	}
	for _, s := range []string{"", "-", "+", "0", "-0", "+7", "12345678", "-12345678", "123456789",
		"99999999", "100000000", "1704067200003", "999999999999999999", "-999999999999999999",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"00000000000000000001", "1234567 ", " 12345678"} {
		check(s)
	}
	// a byte just below '0', just above '9', and far off, at every position of every length
	for n := 1; n <= 20; n++ {
		digits := []byte("98765432109876543210")[:n]
		check(string(digits))
		for pos := range n {
			for _, c := range []byte{'/', ':', 0, 0x30 + 0x10, 0xb0, 'a', '0' + 0x80} {
				b := append([]byte(nil), digits...)
				b[pos] = c
				check(string(b))
				check("-" + string(b))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		b := make([]byte, 1+r.IntN(19))
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
			if r.IntN(40) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}

// plainDouble reads the doubles it takes as strconv.ParseFloat does, to the bit (-0 included),
// and leaves every other text to it: random digits at every length and dot position, the
// bytes next to '0'..'9' and '.', and the edges.
func TestPlainDoubleMatchesStrconv(t *testing.T) {
	check := func(s string) {
		t.Helper()
		f, ok := plainDouble(s)
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(f) != math.Float64bits(want) {
			t.Fatalf("plainDouble(%q) = %v (%#x); strconv %v (%#x), %v", s, f, math.Float64bits(f), want, math.Float64bits(want), err)
		}
	}
	taken := 0
	for _, s := range []string{"0", "-0", "+0", "-0.0", "0.0", "1", "1.5", "-1.5", "79725.634", "0.1", "0.3",
		"123456789012345", "12345678901234.5", "0.000000000000001", "999999999999999", "9007199254740993",
		"1.", ".5", "-", "+", "", ".", "1..2", "1.2.3", "1e5", "1E5", "1_000", " 1", "1 ", "inf", "NaN", "0x10", "--1"} {
		check(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := 1 + r.IntN(17)
		b := make([]byte, 0, n+2)
		if r.IntN(3) == 0 {
			b = append(b, "-+"[r.IntN(2)])
		}
		dot := r.IntN(n + 1)
		for k := range n {
			if k == dot && k > 0 {
				b = append(b, '.')
			}
			b = append(b, byte('0'+r.IntN(10)))
		}
		if r.IntN(20) == 0 {
			b[r.IntN(len(b))] = []byte{'/', ':', '.', 'e', 0xb0}[r.IntN(5)]
		}
		if _, ok := plainDouble(string(b)); ok {
			taken++
		}
		check(string(b))
	}
	if taken < 100000 {
		t.Fatalf("plainDouble took %d of 200000 texts: the test no longer exercises it", taken)
	}
}

// strconv.ParseFloat takes Go's digit separators ("1_000" is 1000), which no CSV or JSON writer
// means: "3_4" read as 34 would be a silent change of the value. A float or double with an
// underscore is refused, as every other type refuses it.
func TestFloatsRefuseUnderscores(t *testing.T) {
	for _, typ := range []string{"double", "float"} {
		ty, err := ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []string{"1_000", "3_4", "-1_0.5", "1.0_1", "1e1_0", "0x1_0p0", " 1_000 "} {
			if v, err := ty.ParseText(in); err == nil {
				t.Errorf("%s ParseText(%q) = %v: accepted", typ, in, v)
			} else if !strings.Contains(err.Error(), "expected a number") {
				t.Errorf("%s ParseText(%q): %v", typ, in, err)
			}
			if v, err := ty.FromJSON(strconv.Quote(in)); err == nil {
				t.Errorf("%s FromJSON(%q) = %v: accepted", typ, strconv.Quote(in), v)
			}
		}
		// the forms Cassandra's own text takes still read
		for in, want := range map[string]float64{"1000": 1000, "1e3": 1000, "0x1p3": 8, "-2.5": -2.5} {
			if v, err := ty.ParseText(in); err != nil || v.Float() != want {
				t.Errorf("%s ParseText(%q) = %v, %v; want %v", typ, in, v, err, want)
			}
		}
	}
}

// A number too small for the type is out of its range, as one too large is: strconv.ParseFloat
// reads "1e-400" as 0 for a double (and "1e-50" for a float) without an error, and a zero is not
// the value the text holds. Zeros, and small numbers that still have a float, read as before.
func TestFloatsRefuseUnderflowToZero(t *testing.T) {
	for _, c := range []struct {
		typ, in string
	}{
		{"double", "1e-400"}, {"double", "-1e-400"}, {"double", "0.5e-324"}, {"double", "0x1p-1080"},
		{"double", "0x0.ap-1080"}, {"float", "1e-50"}, {"float", "-7e-46"}, {"float", "0x1p-160"},
	} {
		ty, _ := ParseType(c.typ)
		if v, err := ty.ParseText(c.in); err == nil || !strings.Contains(err.Error(), "out of range for "+c.typ) {
			t.Errorf("%s ParseText(%q) = %v, %v; want out of range", c.typ, c.in, v, err)
		}
		if strings.HasPrefix(c.in, "0x") {
			continue
		}
		if v, err := ty.FromJSON(c.in); err == nil || !strings.Contains(err.Error(), "out of range for "+c.typ) {
			t.Errorf("%s FromJSON(%s) = %v, %v; want out of range", c.typ, c.in, v, err)
		}
	}
	for _, c := range []struct {
		typ, in string
		want    float64
	}{
		{"double", "0", 0}, {"double", "0.000e-500", 0}, {"double", "-0e10", math.Copysign(0, -1)},
		{"double", "0x0p-2000", 0}, {"double", "5e-324", 5e-324}, {"double", "1e-310", 1e-310},
		{"float", "0", 0}, {"float", "0.0", 0}, {"float", "-0.0", math.Copysign(0, -1)}, {"float", "00e-99", 0},
		{"float", "1e-45", float64(float32(1e-45))}, {"float", "0x1.8p-149", float64(math.Float32frombits(2))},
	} {
		ty, _ := ParseType(c.typ)
		v, err := ty.ParseText(c.in)
		if err != nil || math.Float64bits(v.Float()) != math.Float64bits(c.want) {
			t.Errorf("%s ParseText(%q) = %v, %v; want %v", c.typ, c.in, v, err, c.want)
		}
	}
}
