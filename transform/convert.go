package transform

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// convert turns a non-null value into the representation of a target type, or rejects it with
// code "type". Values already of the right kind pass through (after range checks for the narrow
// integer types and precision checks for DECIMAL).
func (e *Evaluator) convert(v pipeline.Value, t colType) (pipeline.Value, *pipeline.RowError) {
	switch t.T {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		s := v.Str
		if v.Kind != pipeline.KindText {
			s = e.canonString(v)
			if rerr := blobText("a blob stored as "+t.String(), v.Kind == pipeline.KindBytes, s); rerr != nil {
				return v, rerr
			}
			v = pipeline.Text(s)
		}
		if t.T == pipeline.TypeJSON && !json.Valid(unsafe.Slice(unsafe.StringData(s), len(s))) {
			// a JSON column holds one JSON value: other text would fail the load, not this row
			return v, typeErr(strconv.Quote(truncate(s, 64)) + " is not a JSON value (a JSON column holds one; keep the text as VARCHAR)")
		}
		return v, nil
	case pipeline.TypeVarbinary:
		if v.Kind == pipeline.KindBytes {
			return v, nil
		}
		return pipeline.Bytes(e.canonString(v)), nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint:
		i := v.Num
		switch v.Kind {
		case pipeline.KindInt:
		case pipeline.KindText, pipeline.KindDecimal:
			var err error
			if i, err = strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64); err != nil {
				if errors.Is(err, strconv.ErrRange) {
					return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is out of the " + t.String() + " range: " + wideInteger(v.Str))
				}
				return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a " + t.String() + " value")
			}
		default:
			return v, typeErr("a " + v.Kind.String() + " value cannot be stored as " + t.String())
		}
		lo, hi := intRange(t.T)
		if i < lo || i > hi {
			return v, typeErr(strconv.FormatInt(i, 10) + " is out of the " + t.String() + " range")
		}
		return pipeline.Int(i), nil
	case pipeline.TypeTimestamp:
		switch v.Kind {
		case pipeline.KindInt:
			return v, nil
		case pipeline.KindText:
			if n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64); err == nil && e.p != nil {
				return e.p.textEpoch(v.Str, n)
			}
			ms, ok, subMillis := parseTimestamp(v.Str)
			if ok {
				return pipeline.Int(ms), nil
			}
			if subMillis {
				return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " has sub-millisecond digits, which a TIMESTAMP (milliseconds) cannot hold; rekey does not round (keep it as VARCHAR)")
			}
			return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a TIMESTAMP (epoch milliseconds or RFC 3339)")
		case pipeline.KindDecimal:
			// a whole number is epoch milliseconds, as a BIGINT is (the cast compiles)
			if ms, err := strconv.ParseInt(v.Str, 10, 64); err == nil {
				return pipeline.Int(ms), nil
			}
			return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a TIMESTAMP (a whole number of epoch milliseconds)")
		}
		return v, typeErr("a " + v.Kind.String() + " value cannot be stored as TIMESTAMP")
	case pipeline.TypeDate:
		switch v.Kind {
		case pipeline.KindInt:
			if v.Num < math.MinInt32 || v.Num > math.MaxInt32 {
				return v, typeErr(strconv.FormatInt(v.Num, 10) + " days is out of the DATE range")
			}
			return v, nil
		case pipeline.KindText:
			if d, ok := parseDate(v.Str); ok {
				return pipeline.Int(d), nil
			}
			return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a DATE (YYYY-MM-DD or days since 1970-01-01)")
		case pipeline.KindDecimal:
			// a whole number is days, as a BIGINT is (the cast compiles)
			if d, err := strconv.ParseInt(v.Str, 10, 32); err == nil {
				return pipeline.Int(d), nil
			}
			return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a DATE (a whole number of days since 1970-01-01 within the DATE range)")
		}
		return v, typeErr("a " + v.Kind.String() + " value cannot be stored as DATE")
	case pipeline.TypeBoolean:
		switch v.Kind {
		case pipeline.KindBool:
			return v, nil
		case pipeline.KindText:
			switch strings.ToLower(strings.TrimSpace(v.Str)) {
			case "true":
				return pipeline.Bool(true), nil
			case "false":
				return pipeline.Bool(false), nil
			}
			return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a BOOLEAN (true or false)")
		}
		return v, typeErr("a " + v.Kind.String() + " value cannot be stored as BOOLEAN")
	case pipeline.TypeFloat, pipeline.TypeDouble:
		var f float64
		switch v.Kind {
		case pipeline.KindFloat:
			if t.T == pipeline.TypeDouble {
				return v, nil
			}
			f = v.Float()
		case pipeline.KindInt:
			f = float64(v.Num)
			if t.T == pipeline.TypeFloat && (v.Num > 1<<53 || v.Num < -(1<<53)) {
				// beyond 2^53 the float64 is rounded already, and rounding it again to 32 bits
				// can miss the nearest FLOAT: rounded once, from the digits
				f, _ = strconv.ParseFloat(strconv.FormatInt(v.Num, 10), 32)
			}
		case pipeline.KindText, pipeline.KindDecimal:
			bits := 64
			if t.T == pipeline.TypeFloat {
				bits = 32 // rounded once, from the text (not twice, through a float64)
			}
			var err error
			// ParseFloat takes Go's digit separators ("3_4" is 34): no number, as in a double column
			if f, err = strconv.ParseFloat(strings.TrimSpace(v.Str), bits); err != nil || strings.IndexByte(v.Str, '_') >= 0 {
				return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is not a " + t.String() + " value")
			}
			if f == 0 && pipeline.UnderflowsToZero(strings.TrimSpace(v.Str)) {
				// too small for the type: ParseFloat reads it as 0 without the ErrRange of too large
				return v, typeErr(strconv.Quote(truncate(v.Str, 64)) + " is out of the " + t.String() + " range (too small to be other than 0)")
			}
		default:
			return v, typeErr("a " + v.Kind.String() + " value cannot be stored as " + t.String())
		}
		if t.T == pipeline.TypeFloat {
			// a FLOAT holds 32 bits: the value the table keeps, so that keys, splits and the
			// report's collisions see it too
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) || f32 == 0 && f != 0 { // too large, or too small to be other than 0
				return v, typeErr(strconv.FormatFloat(f, 'g', -1, 64) + " is out of the FLOAT range")
			}
			f = float64(f32)
		}
		return pipeline.Float(f), nil
	case pipeline.TypeDecimal:
		if u, sc, ok := v.Unscaled(); ok && decimalFits(u, sc, t.P, t.S) {
			return v, nil // a number the source decoded: no text to parse
		}
		var s string
		switch v.Kind {
		case pipeline.KindDecimal, pipeline.KindText:
			s = strings.TrimSpace(v.Str)
		case pipeline.KindInt, pipeline.KindFloat:
			if v.Kind == pipeline.KindFloat && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
				return v, typeErr("NaN and infinities cannot be stored as DECIMAL")
			}
			s = e.canonString(v)
		default:
			return v, typeErr("a " + v.Kind.String() + " value cannot be stored as " + t.String())
		}
		if msg := checkDecimal(s, t.P, t.S); msg != "" {
			return v, typeErr(strconv.Quote(truncate(s, 64)) + ": " + msg)
		}
		canonical, u, sc, num := pipeline.PlainDecimal(s)
		if !canonical {
			s = plainDecimal(s)
			_, u, sc, num = pipeline.PlainDecimal(s)
		}
		if num {
			// the sink then encodes the number without parsing the text a second time
			return pipeline.DecimalUnscaled(s, u, sc), nil
		}
		return pipeline.Decimal(s), nil
	}
	return v, typeErr("cannot store a value as " + t.String())
}

// wideInteger says where an integer beyond 64 bits (a Cassandra varint) can go: a DECIMAL(38,0)
// holds up to 38 digits, and no Lindorm number type more.
func wideInteger(s string) string {
	s = strings.TrimLeft(strings.TrimSpace(s), "+-")
	if len(strings.TrimLeft(s, "0")) <= 38 {
		return "cast the column to DECIMAL(38,0) to keep it (`x :: DECIMAL(38,0)` in target.columns)"
	}
	return "it has more than 38 digits, more than any Lindorm number type holds: cast the column to VARCHAR to keep it as text"
}

func intRange(t pipeline.Type) (int64, int64) {
	switch t {
	case pipeline.TypeInteger:
		return math.MinInt32, math.MaxInt32
	case pipeline.TypeSmallint:
		return math.MinInt16, math.MaxInt16
	case pipeline.TypeTinyint:
		return math.MinInt8, math.MaxInt8
	}
	return math.MinInt64, math.MaxInt64
}

// decimalFits tells whether unscaled × 10^-scale fits DECIMAL(p,s), by checkDecimal's rule.
func decimalFits(unscaled int64, scale, p, s int) bool {
	m := uint64(unscaled)
	if unscaled < 0 {
		m = -m
	}
	for scale > 0 && m%10 == 0 && m != 0 { // trailing fraction zeros do not count
		m /= 10
		scale--
	}
	if m == 0 {
		return true
	}
	if scale > s || p < s {
		return false
	}
	// at most p-s integer digits: at most p-s+scale digits in all, m < 10^(p-s+scale), without
	// counting them one division at a time
	k := p - s + scale
	return k >= len(pow10) || m < pow10[k]
}

// pow10 are the powers of ten a uint64 holds.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19}

// digitAt is the i-th digit of intDigits followed by frac.
func digitAt(intDigits, frac string, i int) byte {
	if i < len(intDigits) {
		return intDigits[i]
	}
	return frac[i-len(intDigits)]
}

// checkDecimal validates decimal text (sign, digits, optional fraction and exponent) and that it
// fits DECIMAL(p,s): at most p-s significant integer digits and s fraction digits (trailing zeros
// of the fraction do not count: 1.50 fits a scale of 1).
func checkDecimal(s string, p, sc int) string {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intDigits := s[intStart:i]
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
	}
	if intDigits == "" && frac == "" {
		return "not a decimal number"
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ds := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if ds == i || i-ds > 6 {
			return "not a decimal number"
		}
		exp, _ = strconv.Atoi(s[es:i])
	}
	if i != len(s) {
		return "not a decimal number"
	}
	// value = 0.digits * 10^point: the digits counted once the exponent has moved the point, so
	// that the zeros ending "10e-1" are fraction zeros and those beginning "0.05e2" leading ones
	// (counted over intDigits then frac in place: joined, they cost a string per value)
	total := len(intDigits) + len(frac)
	lead := 0 // leading zeros of the digits
	for lead < total && digitAt(intDigits, frac, lead) == '0' {
		lead++
	}
	if lead == total {
		return "" // zero
	}
	trail := 0 // trailing zeros
	for digitAt(intDigits, frac, total-1-trail) == '0' {
		trail++
	}
	point := len(intDigits) + exp - lead
	ni, nf := max(point, 0), max(total-lead-trail-point, 0)
	if ni > p-sc {
		return "has " + strconv.Itoa(ni) + " integer digits, DECIMAL(" + strconv.Itoa(p) + "," + strconv.Itoa(sc) + ") allows " + strconv.Itoa(p-sc) + " (override the column type with `:: DECIMAL(p,s)`)"
	}
	if nf > sc {
		return "has " + strconv.Itoa(nf) + " fraction digits, DECIMAL(" + strconv.Itoa(p) + "," + strconv.Itoa(sc) + ") allows " + strconv.Itoa(sc) + " (override the column type with `:: DECIMAL(p,s)`)"
	}
	return ""
}

// plainDecimal rewrites decimal text that checkDecimal accepted in the canonical form a source
// gives a decimal (pipeline.KindDecimal): no '+', leading zeros or exponent, no sign on zero, the
// scale kept ("1.5e3" -> "1500", "1.50E1" -> "15.0", "+.5" -> "0.5", "-0" -> "0"), so that a
// number spelled two ways hashes and concatenates the same once cast. A zero's scale is bounded
// as the sources bound exponents (the column bounds every other value's).
func plainDecimal(s string) string {
	neg := s[0] == '-'
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		exp, _ = strconv.Atoi(s[i+1:])
	}
	intDigits, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intDigits+frac, "0")
	scale := len(frac) - exp
	if digits == "" {
		neg, scale = false, max(min(scale, len(frac)+maxDecimalExponent), 0)
	}
	var intPart, fracPart string
	switch {
	case scale <= 0:
		intPart = digits + strings.Repeat("0", -scale)
	case scale >= len(digits):
		fracPart = strings.Repeat("0", scale-len(digits)) + digits
	default:
		intPart, fracPart = digits[:len(digits)-scale], digits[len(digits)-scale:]
	}
	if intPart = strings.TrimLeft(intPart, "0"); intPart == "" {
		intPart = "0"
	}
	out := intPart
	if neg {
		out = "-" + out
	}
	if fracPart != "" {
		out += "." + fracPart
	}
	return out
}

// maxDecimalExponent is the largest exponent the sources read in decimal text (source/cqlvalue).
const maxDecimalExponent = 1000

// textEpoch is an integer text cast to TIMESTAMP, read as a timestamp column reads an integer
// epoch (source/cqlvalue): in source.timestamp_unit, else milliseconds, where a value that looks
// like another unit is a reject saying which unit to set (epoch seconds taken for milliseconds
// would land in January 1970).
func (p *Program) textEpoch(text string, n int64) (pipeline.Value, *pipeline.RowError) {
	q := strconv.Quote(truncate(text, 64))
	var per int64 // units per millisecond (us, ns) or milliseconds per unit (s)
	switch p.timestampUnit {
	case "", "ms":
		if abs := max(n, -n); p.timestampUnit == "" && (abs > 0 && abs < 1e11 || abs >= 1e14 || n == math.MinInt64) {
			return pipeline.Null, typeErr(q + " as epoch milliseconds would be " + time.UnixMilli(n).UTC().Format(time.RFC3339Nano) +
				": it looks like epoch seconds (10 digits or fewer) or micro/nanoseconds (15 digits or more); set source.timestamp_unit (s, ms, us or ns) in the mapping")
		}
		return pipeline.Int(n), nil
	case "s":
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return pipeline.Null, typeErr(q + " epoch seconds is out of the TIMESTAMP range")
		}
		return pipeline.Int(n * 1000), nil
	case "us":
		per = 1000
	case "ns":
		per = 1000000
	}
	if n%per != 0 {
		return pipeline.Null, typeErr(q + " has sub-millisecond digits, which a TIMESTAMP (milliseconds) cannot hold; rekey does not round (keep it as VARCHAR)")
	}
	return pipeline.Int(n / per), nil
}

// parseTimestamp reads epoch milliseconds or RFC 3339 text exactly: subMillis reports text whose
// digits below the millisecond are not zeros (never rounded).
func parseTimestamp(s string) (ms int64, ok, subMillis bool) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Nanosecond()%int(time.Millisecond) != 0 {
				return 0, false, true
			}
			return t.UnixMilli(), true, false
		}
	}
	return 0, false, false
}

func parseDate(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 32); err == nil {
		return i, true
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, false
	}
	return t.Unix() / 86400, true
}

// parseLiteral reads a value written in the mapping (a split key) as a value of type t.
func parseLiteral(s string, t colType) (pipeline.Value, error) {
	var e Evaluator
	v, rerr := e.convert(pipeline.Text(s), t)
	if rerr != nil {
		return v, errors.New(rerr.Message)
	}
	if v.Kind == pipeline.KindText || v.Kind == pipeline.KindBytes || v.Kind == pipeline.KindDecimal {
		v.Str = strings.Clone(v.Str)
	}
	return v, nil
}
