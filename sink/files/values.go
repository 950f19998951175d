package files

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

// The converters below are shared by every Format so that a value is accepted or rejected the
// same way whatever the output. They never round or truncate: a value that does not fit its
// column exactly is a *pipeline.RowError with code "type" (or "null_key" for a null key column,
// "encoding" for text that is not UTF-8), naming the column. Accepted kinds per column type:
//
//	VARCHAR, JSON        text, decimal (its text), bytes (raw); int/float/bool as their canonical
//	                     text. Text and bytes must be valid UTF-8: readers refuse a whole Parquet
//	                     file for one invalid STRING value, whatever produced it.
//	VARBINARY            bytes, text (raw bytes)
//	BIGINT, INTEGER,     int, in the type's range; bool as 0/1
//	SMALLINT, TINYINT
//	TIMESTAMP            int (epoch milliseconds, MinTimestamp to MaxTimestamp: what Spark reads)
//	DATE                 int (days since 1970-01-01, in int32 range)
//	BOOLEAN              bool, int 0/1
//	FLOAT, DOUBLE        float, int (FLOAT also rejects finite values beyond float32 range)
//	DECIMAL(p,s)         decimal or text ("-12.340", "1.5e3"), int, float (its shortest text);
//	                     more than s fractional digits are accepted only when the extra digits
//	                     are zeros, and the value must have at most p-s integer digits.

// TypeError is the reject for a value that does not fit its column.
func TypeError(col pipeline.Column, format string, args ...any) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeType, Field: col.Name, Message: fmt.Sprintf(format, args...)}
}

// EncodingError is the reject for a VARCHAR or JSON value s that is not valid UTF-8.
func EncodingError(col pipeline.Column, s string) *pipeline.RowError {
	msg := "invalid UTF-8"
	if i := pipeline.InvalidUTF8At(s); i >= 0 {
		msg = fmt.Sprintf("invalid UTF-8 byte 0x%x at byte %d", s[i], i)
	}
	return &pipeline.RowError{Code: pipeline.CodeEncoding, Field: col.Name,
		Message: msg + ": a " + col.Type.String() + " value must be UTF-8 (binary data belongs in a VARBINARY column)"}
}

// NullKeyError is the reject for a null primary-key column.
func NullKeyError(col pipeline.Column) *pipeline.RowError {
	return &pipeline.RowError{Code: pipeline.CodeNullKey, Field: col.Name, Message: "primary-key column is null"}
}

// CheckRow validates a row against the schema exactly as the formats' Append does, without
// writing it: the transform can call it to turn a misfit into a reject before Write.
func CheckRow(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError {
	if len(values) != len(schema.Columns) {
		return &pipeline.RowError{Code: pipeline.CodeType, Message: fmt.Sprintf("row has %d values, table %s has %d columns", len(values), schema.Table, len(schema.Columns))}
	}
	for i := range schema.Columns {
		if err := CheckValue(schema.Columns[i], values[i]); err != nil {
			return err
		}
	}
	return nil
}

// CheckValue validates one value for its column.
func CheckValue(col pipeline.Column, v pipeline.Value) *pipeline.RowError {
	if v.Kind == pipeline.KindNull {
		if col.IsKey() {
			return NullKeyError(col)
		}
		return nil
	}
	var err *pipeline.RowError
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON, pipeline.TypeVarbinary:
		_, err = TextValue(col, v)
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint,
		pipeline.TypeTimestamp, pipeline.TypeDate:
		_, err = IntValue(col, v)
	case pipeline.TypeBoolean:
		_, err = BoolValue(col, v)
	case pipeline.TypeFloat, pipeline.TypeDouble:
		_, err = FloatValue(col, v)
	case pipeline.TypeDecimal:
		_, err = DecimalValue(col, v)
	default:
		err = TypeError(col, "unsupported column type %s", col.Type)
	}
	return err
}

// TextValue returns the bytes of a VARCHAR, JSON or VARBINARY value. Text, bytes and decimal
// values are returned without copying; VARCHAR and JSON text must be valid UTF-8.
func TextValue(col pipeline.Column, v pipeline.Value) (string, *pipeline.RowError) {
	switch v.Kind {
	case pipeline.KindText, pipeline.KindBytes:
		if col.Type != pipeline.TypeVarbinary && !utf8.ValidString(v.Str) {
			return "", EncodingError(col, v.Str)
		}
		return v.Str, nil
	case pipeline.KindDecimal, pipeline.KindInt, pipeline.KindFloat, pipeline.KindBool:
		if col.Type == pipeline.TypeVarbinary {
			break
		}
		return v.String(), nil
	}
	return "", TypeError(col, "%s value for a %s column", v.Kind, col.Type)
}

// MinTimestamp and MaxTimestamp bound a TIMESTAMP (epoch milliseconds): Spark, which Lindorm's
// bulkload runs, holds a timestamp as microseconds in an int64 and converts a Parquet
// TIMESTAMP(MILLIS) with an exact multiplication, so one value beyond them fails the read of its
// whole file ("ArithmeticException: long overflow"; measured with Spark 4.0.1, deploy/dev/spark).
const (
	MinTimestamp = math.MinInt64 / 1000 // -290308-12-21T19:59:05.225Z
	MaxTimestamp = math.MaxInt64 / 1000 // +294247-01-10T04:00:54.775Z
)

// IntValue returns an integer value checked against the column type's range (TIMESTAMP: what
// Spark reads, MinTimestamp to MaxTimestamp).
func IntValue(col pipeline.Column, v pipeline.Value) (int64, *pipeline.RowError) {
	var i int64
	switch v.Kind {
	case pipeline.KindInt, pipeline.KindBool:
		i = v.Num
	default:
		return 0, TypeError(col, "%s value for a %s column", v.Kind, col.Type)
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch col.Type {
	case pipeline.TypeInteger, pipeline.TypeDate:
		lo, hi = math.MinInt32, math.MaxInt32
	case pipeline.TypeSmallint:
		lo, hi = math.MinInt16, math.MaxInt16
	case pipeline.TypeTinyint:
		lo, hi = math.MinInt8, math.MaxInt8
	case pipeline.TypeTimestamp:
		if i < MinTimestamp || i > MaxTimestamp {
			return 0, TypeError(col, "%d ms is beyond the TIMESTAMP range Spark reads (epoch microseconds in an int64: %d to %d ms, "+
				"years -290308 to 294247): Lindorm's bulkload (a Spark job) would fail the whole file", i, MinTimestamp, MaxTimestamp)
		}
	}
	if i < lo || i > hi {
		return 0, TypeError(col, "%d is out of %s range", i, col.Type)
	}
	return i, nil
}

// BoolValue returns a BOOLEAN value.
func BoolValue(col pipeline.Column, v pipeline.Value) (bool, *pipeline.RowError) {
	switch {
	case v.Kind == pipeline.KindBool, v.Kind == pipeline.KindInt && (v.Num == 0 || v.Num == 1):
		return v.Num != 0, nil
	}
	return false, TypeError(col, "%s value %s for a BOOLEAN column", v.Kind, v.String())
}

// FloatValue returns a FLOAT or DOUBLE value.
func FloatValue(col pipeline.Column, v pipeline.Value) (float64, *pipeline.RowError) {
	var f float64
	switch v.Kind {
	case pipeline.KindFloat:
		f = v.Float()
	case pipeline.KindInt:
		f = float64(v.Num)
	default:
		return 0, TypeError(col, "%s value for a %s column", v.Kind, col.Type)
	}
	if col.Type == pipeline.TypeFloat && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
		return 0, TypeError(col, "%g is out of FLOAT range", f)
	}
	return f, nil
}

// Dec128 is a DECIMAL's unscaled value (value * 10^scale) as a 128-bit two's-complement integer.
type Dec128 struct {
	Hi int64
	Lo uint64
}

var pow10u64 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// DecimalValue returns the unscaled value of a DECIMAL(p,s) column, exactly, or a reject.
func DecimalValue(col pipeline.Column, v pipeline.Value) (Dec128, *pipeline.RowError) {
	switch v.Kind {
	case pipeline.KindDecimal, pipeline.KindText:
		if u, sc, ok := v.Unscaled(); ok {
			if d, ok := scaleInt64(u, sc, col.Precision, col.Scale); ok {
				return d, nil
			}
		}
		if d, ok := parseDecimalFast(v.Str, col.Precision, col.Scale); ok {
			return d, nil
		}
		return parseDecimalBig(col, v.Str)
	case pipeline.KindInt:
		if d, ok := scaleInt64(v.Num, 0, col.Precision, col.Scale); ok {
			return d, nil
		}
		return parseDecimalBig(col, strconv.FormatInt(v.Num, 10))
	case pipeline.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Dec128{}, TypeError(col, "%g is not a DECIMAL", f)
		}
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if d, ok := parseDecimalFast(s, col.Precision, col.Scale); ok {
			return d, nil
		}
		return parseDecimalBig(col, s)
	}
	return Dec128{}, TypeError(col, "%s value for a %s column", v.Kind, col.SQLType())
}

// parseDecimalFast handles the common case (plain notation, at most 18 significant digits) with
// integer arithmetic. ok is false when the slow path must decide (including every error).
// Own code rather than arrow's decimal128.FromString, which is 40x slower and rounds digits past
// the scale where rekey rejects (bench/libs BenchmarkDecimal).
func parseDecimalFast(s string, precision, scale int) (Dec128, bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var m uint64
	digits, frac, sig := 0, -1, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if frac >= 0 {
				return Dec128{}, false
			}
			frac = 0
			continue
		}
		if c < '0' || c > '9' {
			return Dec128{}, false
		}
		digits++
		if frac >= 0 {
			frac++
		}
		if m == 0 && c == '0' {
			continue
		}
		sig++
		if sig > 18 {
			return Dec128{}, false
		}
		m = m*10 + uint64(c-'0')
	}
	if digits == 0 {
		return Dec128{}, false
	}
	if frac < 0 {
		frac = 0
	}
	return scaleFast(m, neg, frac, precision, scale)
}

// scaleInt64 is scaleFast for a signed unscaled value u with frac fraction digits.
func scaleInt64(u int64, frac, precision, scale int) (Dec128, bool) {
	m := uint64(u)
	if u < 0 {
		m = -m
	}
	return scaleFast(m, u < 0, frac, precision, scale)
}

// scaleFast turns m * 10^-frac into the unscaled 128-bit value at scale, when it needs no
// rounding and fits the precision. Scaling up uses 128-bit multiplication, so the common case
// (a few significant digits at DECIMAL(38,18)) never reaches math/big.
func scaleFast(m uint64, neg bool, frac, precision, scale int) (Dec128, bool) {
	var hi, lo uint64 = 0, m
	if frac > scale {
		k := frac - scale
		if k >= len(pow10u64) || m%pow10u64[k] != 0 {
			return Dec128{}, false
		}
		lo = m / pow10u64[k]
	} else if frac < scale {
		for k := scale - frac; k > 0; {
			step := min(k, 19)
			var ok bool
			if hi, lo, ok = mul128(hi, lo, pow10u64[step]); !ok {
				return Dec128{}, false
			}
			k -= step
		}
	}
	if precision > 38 || !less128(hi, lo, pow10u128[precision]) {
		return Dec128{}, false
	}
	if neg { // two's complement
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	return Dec128{Hi: int64(hi), Lo: lo}, true
}

// mul128 multiplies the unsigned 128-bit (hi, lo) by b; ok is false on overflow.
func mul128(hi, lo, b uint64) (uint64, uint64, bool) {
	carry, lo2 := bits.Mul64(lo, b)
	over, hi2 := bits.Mul64(hi, b)
	hi3, c := bits.Add64(hi2, carry, 0)
	return hi3, lo2, over == 0 && c == 0
}

func less128(hi, lo uint64, b [2]uint64) bool { return hi < b[0] || (hi == b[0] && lo < b[1]) }

// pow10u128[i] is 10^i as (hi, lo), for i in 0..38.
var pow10u128 = func() (p [39][2]uint64) {
	hi, lo := uint64(0), uint64(1)
	for i := range p {
		p[i] = [2]uint64{hi, lo}
		hi, lo, _ = mul128(hi, lo, 10)
	}
	return
}()

var maxDecimal = func() (p [39]*big.Int) {
	for i := range p {
		p[i] = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)), nil)
	}
	return
}()

// parseDecimalBig is the exact slow path: any notation, up to 38 digits.
func parseDecimalBig(col pipeline.Column, s string) (Dec128, *pipeline.RowError) {
	t := strings.TrimSpace(s)
	mant, exp := t, 0
	if k := strings.IndexAny(t, "eE"); k >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(t[k+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return Dec128{}, TypeError(col, "%q is not a decimal", s)
		}
		mant, exp = t[:k], e
	}
	neg := false
	if mant != "" && (mant[0] == '-' || mant[0] == '+') {
		neg = mant[0] == '-'
		mant = mant[1:]
	}
	intPart, fracPart := mant, ""
	if k := strings.IndexByte(mant, '.'); k >= 0 {
		intPart, fracPart = mant[:k], mant[k+1:]
	}
	if intPart == "" && fracPart == "" {
		return Dec128{}, TypeError(col, "%q is not a decimal", s)
	}
	for _, part := range []string{intPart, fracPart} {
		for j := 0; j < len(part); j++ {
			if part[j] < '0' || part[j] > '9' {
				return Dec128{}, TypeError(col, "%q is not a decimal", s)
			}
		}
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	shift := exp - len(fracPart) + col.Scale // unscaled = digits * 10^shift
	if shift < 0 {
		k := -shift
		if k > len(digits) {
			k = len(digits)
		}
		if strings.Trim(digits[len(digits)-k:], "0") != "" {
			return Dec128{}, TypeError(col, "%s has more than %d fractional digits", s, col.Scale)
		}
		digits = digits[:len(digits)-k]
		shift = 0
	}
	if len(digits)+shift > col.Precision {
		return Dec128{}, TypeError(col, "%s does not fit %s", s, col.SQLType())
	}
	u := new(big.Int)
	if digits != "" {
		u.SetString(digits, 10)
	}
	if shift > 0 {
		u.Mul(u, maxDecimal[shift])
	}
	if u.Cmp(maxDecimal[col.Precision]) >= 0 {
		return Dec128{}, TypeError(col, "%s does not fit %s", s, col.SQLType())
	}
	if neg {
		u.Neg(u)
	}
	return decFromBig(u), nil
}

func decFromBig(u *big.Int) Dec128 {
	// two's complement over 128 bits
	x := new(big.Int).Set(u)
	if x.Sign() < 0 {
		x.Add(x, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	lo := new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(x, 64).Uint64()
	return Dec128{Hi: int64(hi), Lo: lo}
}

// Big returns the unscaled value as a big.Int.
func (d Dec128) Big() *big.Int {
	x := new(big.Int).SetUint64(d.Lo)
	h := new(big.Int).Lsh(big.NewInt(d.Hi), 64)
	return x.Add(x, h)
}

// AppendText appends the decimal's text with exactly scale fractional digits ("-12.340").
func (d Dec128) AppendText(dst []byte, scale int) []byte {
	var digits []byte
	var buf [40]byte
	neg := d.Hi < 0
	// The int64 fast path only when the 128-bit value fits one: a non-negative value with the
	// top bit of Lo set (>= 2^63, e.g. 18.31 at scale 18) does not.
	if (d.Hi == 0 && d.Lo < 1<<63) || (d.Hi == -1 && d.Lo >= 1<<63) {
		v := int64(d.Lo)
		m := uint64(v)
		if v < 0 {
			m = -m
		}
		digits = strconv.AppendUint(buf[:0], m, 10)
	} else {
		b := d.Big()
		digits = b.Abs(b).Append(buf[:0], 10)
	}
	if neg {
		dst = append(dst, '-')
	}
	if scale == 0 {
		return append(dst, digits...)
	}
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}
