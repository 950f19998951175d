package cqlvalue

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// ParseText converts the text form of a value (a CSV field, a JSON string's content, an element
// of a CQL collection literal) to a Value of type t.
//
//   - text, varchar: the string itself (aliased, never copied), which must be valid UTF-8 (else an
//     *EncodingError); ascii is checked to be 7-bit.
//   - For every other type, surrounding spaces are ignored and an empty string is null, except
//     for blob, where it is the empty blob (a CSV `""`, a JSON `""`): a null blob is an unquoted
//     empty CSV field or JSON null, as for text.
//   - bigint, int, smallint, tinyint: KindInt, range-checked for the width. varint: KindInt when
//     it fits int64, else KindDecimal with the canonical digits.
//   - boolean: true/false (any case) or 1/0. float, double: KindFloat, from decimal or hex
//     floating-point text, NaN or Infinity; not with Go's digit separators ("1_000"). A number
//     beyond the type's range, too large or too small to be other than 0, is a range error.
//   - decimal: KindDecimal with the canonical plain text ("1.50", "-0.001"; "1.5E3" -> "1500").
//   - timestamp: KindInt epoch milliseconds, from ISO-8601 / RFC 3339 text
//     ("2024-01-02T03:04:05Z", "2024-01-02 03:04:05.678000+0000", "2024-01-02 03:04:05",
//     "2024-01-02"; without a zone the time is UTC; a year beyond four digits as ISO-8601
//     writes it, "+10000-01-01T00:00:00Z", "-0001-12-31") or an integer epoch in the type's unit
//     (TimeUnit; without one, milliseconds within the plausible range). Nothing is rounded:
//     digits below the millisecond must be zeros, in text and in us/ns epochs.
//   - date: KindInt days since 1970-01-01, from yyyy-mm-dd (wider years as for timestamp) or an
//     integer (days), within int32.
//   - uuid, timeuuid (version 1 only): KindText, lowercase 36 characters.
//   - blob: KindBytes from 0x-prefixed hex, else base64 as DSBulk writes it (base64 that begins
//     with 0x and is not hex after it, "0x01Qg==", is base64; "0x01" is the one byte 01).
//   - inet: KindText, the canonical address form.
//   - list, set, map: KindText holding canonical compact JSON, from JSON or from cqlsh's CQL
//     literal form (['a', 'b'], {'k': 1}). Sets are sorted and deduplicated, maps sorted by key.
//
// ParseText for text, bigint and timestamp does not allocate.
func (t Type) ParseText(s string) (pipeline.Value, error) {
	switch t.Kind {
	case Text:
		if !utf8.ValidString(s) {
			return pipeline.Null, invalidUTF8(s)
		}
		return pipeline.Value{Str: s, Kind: pipeline.KindText}, nil
	case Ascii:
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return pipeline.Null, errors.New("non-ASCII character in ascii value")
			}
		}
		return pipeline.Value{Str: s, Kind: pipeline.KindText}, nil
	case Bigint, Int, Smallint, Tinyint:
		// numbers as files and JSON carry them (no blanks around): read before the general
		// path's trim and second switch; anything else takes that path
		if n, ok, _ := parseInt(s); ok && inRange(n, t.Kind) {
			return pipeline.Value{Num: n, Kind: pipeline.KindInt}, nil
		}
	case Timestamp:
		if n, ok, _ := parseInt(s); ok {
			if ms, st := epochMillis(n, t.unit); st == tsOK {
				return pipeline.Value{Num: ms, Kind: pipeline.KindInt}, nil
			}
		}
	case Decimal:
		if ok, u, sc, num := pipeline.PlainDecimal(s); ok && num {
			return pipeline.DecimalUnscaled(s, u, sc), nil
		}
	case Double:
		if f, ok := plainDouble(s); ok {
			return pipeline.Float(f), nil
		}
	}
	s = trimSpace(s)
	if s == "" {
		if t.Kind == Blob { // base64 of no bytes: the empty blob, not null
			return pipeline.Bytes(""), nil
		}
		return pipeline.Null, nil
	}
	switch t.Kind {
	case Bigint, Int, Smallint, Tinyint:
		n, ok, overflow := parseInt(s)
		if !ok {
			if overflow {
				return pipeline.Null, rangeError(s, t.Kind)
			}
			return pipeline.Null, expected(s, t.Kind, "an integer")
		}
		if !inRange(n, t.Kind) {
			return pipeline.Null, rangeError(s, t.Kind)
		}
		return pipeline.Value{Num: n, Kind: pipeline.KindInt}, nil
	case Varint:
		return parseVarint(s)
	case Boolean:
		switch {
		case s == "1" || strings.EqualFold(s, "true"):
			return pipeline.Value{Num: 1, Kind: pipeline.KindBool}, nil
		case s == "0" || strings.EqualFold(s, "false"):
			return pipeline.Value{Kind: pipeline.KindBool}, nil
		}
		return pipeline.Null, expected(s, t.Kind, "true or false")
	case Float, Double:
		bits := 64
		if t.Kind == Float {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err == nil && strings.IndexByte(s, '_') >= 0 {
			// ParseFloat takes Go's digit separators ("3_4" is 34), which no export means
			err = strconv.ErrSyntax
		} else if err == nil && f == 0 && pipeline.UnderflowsToZero(s) {
			// too small for the type: ParseFloat reads it as 0 without the ErrRange of too large
			err = strconv.ErrRange
		}
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return pipeline.Null, rangeError(s, t.Kind)
			}
			return pipeline.Null, expected(s, t.Kind, "a number")
		}
		return pipeline.Float(f), nil
	case Decimal:
		if ok, u, sc, num := pipeline.PlainDecimal(s); ok && num {
			// the number too, so that casts and sinks need not parse the text again
			return pipeline.DecimalUnscaled(s, u, sc), nil
		}
		d, err := canonicalDecimal(s)
		if err != nil {
			return pipeline.Null, err
		}
		if _, u, sc, num := pipeline.PlainDecimal(d); num { // the same value as its canonical text's
			return pipeline.DecimalUnscaled(d, u, sc), nil
		}
		return pipeline.Value{Str: d, Kind: pipeline.KindDecimal}, nil
	case Timestamp:
		ms, st := parseTimestamp(s, t.unit)
		if st != tsOK {
			return pipeline.Null, timestampError(s, t.unit, ms, st)
		}
		return pipeline.Value{Num: ms, Kind: pipeline.KindInt}, nil
	case Date:
		if n, ok, overflow := parseInt(s); ok || overflow {
			if !ok || n < math.MinInt32 || n > math.MaxInt32 {
				return pipeline.Null, rangeError(s, t.Kind)
			}
			return pipeline.Value{Num: n, Kind: pipeline.KindInt}, nil
		}
		y, m, d, n, ok := parseDate(s)
		if !ok || n != len(s) {
			return pipeline.Null, expected(s, t.Kind, "yyyy-mm-dd")
		}
		days := daysFromCivil(y, m, d)
		if days < math.MinInt32 || days > math.MaxInt32 { // a wide year beyond Cassandra's dates
			return pipeline.Null, rangeError(s, t.Kind)
		}
		return pipeline.Value{Num: days, Kind: pipeline.KindInt}, nil
	case UUID, TimeUUID:
		return parseUUID(s, t.Kind)
	case Blob:
		return parseBlob(s)
	case Inet:
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return pipeline.Null, expected(s, t.Kind, "an IPv4 or IPv6 address")
		}
		return pipeline.Value{Str: a.String(), Kind: pipeline.KindText}, nil
	case List, Set, Map, Tuple:
		js, err := parseCollection(t, s)
		if err != nil {
			return pipeline.Null, err
		}
		return pipeline.Value{Str: js, Kind: pipeline.KindText}, nil
	}
	return pipeline.Null, fmt.Errorf("invalid CQL type")
}

// quoteShort quotes a value for an error message, cutting long values.
func quoteShort(s string) string {
	return strconv.Quote(cut(s))
}

func expected(s string, k Kind, what string) error {
	return fmt.Errorf("invalid %s %s: expected %s", k, quoteShort(s), what)
}

func rangeError(s string, k Kind) error {
	return fmt.Errorf("value %s out of range for %s", cut(s), k)
}

// cut shortens s for a message to at most 40 bytes, cut at the start of a character (bytes that
// are not UTF-8 where they are).
func cut(s string) string {
	if len(s) <= 40 {
		return s
	}
	for k := 37; k > 37-utf8.UTFMax; k-- {
		if utf8.RuneStart(s[k]) {
			return s[:k] + "..."
		}
	}
	return s[:37] + "..."
}

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func inRange(n int64, k Kind) bool {
	switch k {
	case Int:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case Smallint:
		return n >= math.MinInt16 && n <= math.MaxInt16
	case Tinyint:
		return n >= math.MinInt8 && n <= math.MaxInt8
	}
	return true
}

// eightDigits returns the value of the eight bytes at s[i:] when they are all decimal digits. A
// digit at a time an integer took about 14 instructions a digit; eight at a time (Lemire's
// SWAR reduction: pairs, then fours, then eight) about 3.
func eightDigits(s string, i int) (uint64, bool) {
	const ones = 0x0101010101010101
	x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
	// every byte is in '0'..'9': its high nibble is 3, and adding 6 keeps it 3
	if x&(ones*0xf0) != ones*0x30 || (x+ones*0x06)&(ones*0xf0) != ones*0x30 {
		return 0, false
	}
	x &= ones * 0x0f
	x = (x * (10<<8 + 1)) >> 8
	x = ((x & 0x00ff00ff00ff00ff) * (100<<16 + 1)) >> 16
	return ((x & 0x0000ffff0000ffff) * (10000<<32 + 1)) >> 32, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// plainDouble reads the common text of a double, [+-]digits[.digits] with at most 15 digits, as
// strconv.ParseFloat reads it; ok is false for any other text, which ParseFloat then reads. The
// digits are an integer below 2^53 and the divisor a power of ten below 10^16, both exact in a
// float64, so their one division is correctly rounded: the float ParseFloat returns (its own
// fast path does the same division). ParseFloat's scan of a 9-character double took ~370
// instructions, 3% of a sparse 30-column row's.
func plainDouble(s string) (float64, bool) {
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		i = 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && !dot && digits > 0 {
			dot = true
			continue
		}
		if c-'0' > 9 {
			return 0, false
		}
		m = m*10 + uint64(c-'0')
		digits++
		if dot {
			frac++
		}
	}
	if digits == 0 || digits > 15 || (dot && frac == 0) {
		return 0, false
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f // -0 too, as ParseFloat reads "-0.0"
	}
	return f, true
}

// parseInt reads an optionally signed decimal integer. overflow reports well-formed digits that
// do not fit int64.
func parseInt(s string) (n int64, ok, overflow bool) {
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		i = 1
	}
	if i == len(s) {
		return 0, false, false
	}
	if len(s)-i <= 18 { // cannot overflow
		var v int64
		for ; i+8 <= len(s); i += 8 {
			d, ok := eightDigits(s, i)
			if !ok {
				return 0, false, false
			}
			v = v*100000000 + int64(d)
		}
		for ; i < len(s); i++ {
			c := s[i] - '0'
			if c > 9 {
				return 0, false, false
			}
			v = v*10 + int64(c)
		}
		if neg {
			v = -v
		}
		return v, true, false
	}
	var u uint64
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false, false
		}
		if u > (math.MaxUint64-9)/10 {
			overflow = true
		}
		u = u*10 + uint64(c)
	}
	if overflow {
		return 0, false, true
	}
	if neg {
		if u > 1<<63 {
			return 0, false, true
		}
		return -int64(u), true, false
	}
	if u > math.MaxInt64 {
		return 0, false, true
	}
	return int64(u), true, false
}

func parseVarint(s string) (pipeline.Value, error) {
	n, ok, overflow := parseInt(s)
	if ok {
		return pipeline.Value{Num: n, Kind: pipeline.KindInt}, nil
	}
	if !overflow {
		return pipeline.Null, expected(s, Varint, "an integer")
	}
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if neg {
		s = "-" + s
	}
	return pipeline.Value{Str: s, Kind: pipeline.KindDecimal}, nil
}

const maxDecimalExponent = 1000

// canonicalDecimal validates a decimal number and returns its canonical plain form: no '+',
// no leading zeros, no exponent, the scale kept ("1.50"), no sign on zero. Input that is
// already canonical is returned as is.
func canonicalDecimal(s string) (string, error) {
	if ok, _, _, _ := pipeline.PlainDecimal(s); ok {
		return s, nil
	}
	i, neg := 0, false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		i = 1
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intDigits := s[intStart:i]
	fracDigits, hasDot := "", false
	if i < len(s) && s[i] == '.' {
		hasDot = true
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracDigits = s[fs:i]
	}
	if intDigits == "" && fracDigits == "" {
		return "", expected(s, Decimal, "a decimal number")
	}
	exp, hasExp := 0, false
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		hasExp = true
		n, ok, _ := parseInt(s[i+1:])
		if !ok || n > maxDecimalExponent || n < -maxDecimalExponent {
			return "", expected(s, Decimal, "a decimal number with an exponent within ±1000")
		}
		exp = int(n)
		i = len(s)
	}
	if i != len(s) {
		return "", expected(s, Decimal, "a decimal number")
	}
	zero := strings.Trim(intDigits, "0") == "" && strings.Trim(fracDigits, "0") == ""
	canonical := !hasExp && (!neg || !zero) && s[0] != '+' && intDigits != "" &&
		(len(intDigits) == 1 || intDigits[0] != '0') && (!hasDot || fracDigits != "")
	if canonical {
		return s, nil
	}
	digits := intDigits + fracDigits
	scale := len(fracDigits) - exp
	var intPart, fracPart string
	switch {
	case scale <= 0:
		intPart = digits + strings.Repeat("0", -scale)
	case scale >= len(digits):
		intPart, fracPart = "0", strings.Repeat("0", scale-len(digits))+digits
	default:
		intPart, fracPart = digits[:len(digits)-scale], digits[len(digits)-scale:]
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	var b strings.Builder
	b.Grow(len(intPart) + len(fracPart) + 2)
	if neg && !zero {
		b.WriteByte('-')
	}
	b.WriteString(intPart)
	if fracPart != "" {
		b.WriteByte('.')
		b.WriteString(fracPart)
	}
	return b.String(), nil
}

// digits reads exactly n decimal digits at s[i:].
func digits(s string, i, n int) (int64, bool) {
	if i+n > len(s) {
		return 0, false
	}
	var v int64
	for j := i; j < i+n; j++ {
		c := s[j] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + int64(c)
	}
	return v, true
}

// digits12 reads one or two decimal digits at s[i:], returning the value and the count.
func digits12(s string, i int) (int64, int) {
	if i >= len(s) || s[i]-'0' > 9 {
		return 0, 0
	}
	v := int64(s[i] - '0')
	if i+1 < len(s) && s[i+1]-'0' <= 9 {
		return v*10 + int64(s[i+1]-'0'), 2
	}
	return v, 1
}

// parseDate reads yyyy-mm-dd (month and day may have one digit) at the start of s and returns
// the number of bytes read. A year beyond four digits is read as wideYear reads it.
func parseDate(s string) (y, m, d int64, n int, ok bool) {
	y, ok = digits(s, 0, 4)
	i := 5
	if !ok || len(s) < 5 || s[4] != '-' {
		if y, i, ok = wideYear(s); !ok { // the rare branch: most years have four digits
			return 0, 0, 0, 0, false
		}
	}
	m, c := digits12(s, i)
	if c == 0 || i+c >= len(s) || s[i+c] != '-' {
		return 0, 0, 0, 0, false
	}
	i += c + 1
	d, c = digits12(s, i)
	if c == 0 {
		return 0, 0, 0, 0, false
	}
	i += c
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, 0, false
	}
	return y, m, d, i, true
}

// wideYear reads an ISO-8601 year beyond four digits and the '-' after it at the start of s: a
// sign and four or more digits, or five or more digits without one, as dsbulk and Java write
// years after 9999 and before 1 ("+10000", "-0001") and Go (AppendJSON) writes them ("10000",
// "-0001"). Cassandra holds any epoch millisecond and any int32 day, whose years have up to nine
// digits. i is the offset after the '-'.
func wideYear(s string) (y int64, i int, ok bool) {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		i = 1
	}
	start := i
	for i < len(s) && s[i]-'0' <= 9 {
		y = y*10 + int64(s[i]-'0')
		i++
	}
	if n := i - start; n < 4 || n > 9 || n == 4 && start == 0 || i == len(s) || s[i] != '-' {
		return 0, 0, false
	}
	if s[0] == '-' {
		y = -y
	}
	return y, i + 1, true
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// tsStatus is the outcome of parseTimestamp; the error message is built only on failure.
type tsStatus uint8

const (
	tsOK        tsStatus = iota
	tsSyntax             // neither an integer nor an ISO-8601 date-time
	tsSubMillis          // digits below the millisecond that are not zeros
	tsRange              // an epoch that does not fit int64 milliseconds
	tsSeconds            // UnitAuto: looks like epoch seconds
	tsMicros             // UnitAuto: looks like epoch microseconds or nanoseconds
	tsHour24             // a time of day at hour 24
	tsLeap               // a time of day at second 60
)

// Bounds of the integers UnitAuto reads as epoch milliseconds (see UnitAuto).
const (
	autoMillisMin = 100_000_000_000     // 1e11 ms: 1973-03-03T09:46:40Z; 1e11 s is the year 5138
	autoMillisMax = 100_000_000_000_000 // 1e14 ms: the year 5138; 1e14 us is 1973-03-03
)

// EpochMillis converts an integer epoch in unit u to milliseconds, exactly: a us or ns value
// that is not a whole millisecond, or a seconds value beyond the int64 range, is an error.
func EpochMillis(n int64, u TimeUnit) (int64, error) {
	ms, st := epochMillis(n, u)
	if st != tsOK {
		return 0, timestampError(strconv.FormatInt(n, 10), u, ms, st)
	}
	return ms, nil
}

func epochMillis(n int64, u TimeUnit) (int64, tsStatus) {
	switch u {
	case UnitSeconds:
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, tsRange
		}
		return n * 1000, tsOK
	case UnitMillis:
		return n, tsOK
	case UnitMicros:
		if n%1000 != 0 {
			return n, tsSubMillis
		}
		return n / 1000, tsOK
	case UnitNanos:
		if n%1_000_000 != 0 {
			return n, tsSubMillis
		}
		return n / 1_000_000, tsOK
	}
	switch {
	case n == 0:
		return 0, tsOK
	case n > -autoMillisMin && n < autoMillisMin:
		return n, tsSeconds
	case n >= autoMillisMax || n <= -autoMillisMax:
		return n, tsMicros
	}
	return n, tsOK
}

// timestampError explains why s is not a timestamp, and what to change. n is the integer read,
// for the epoch statuses.
func timestampError(s string, u TimeUnit, n int64, st tsStatus) error {
	q := quoteShort(s)
	switch st {
	case tsSubMillis:
		if u == UnitMicros || u == UnitNanos {
			return fmt.Errorf("invalid timestamp %s (epoch %s): it has sub-millisecond digits, which Lindorm's TIMESTAMP (milliseconds) cannot hold, and rekey does not round; declare the source column bigint to keep the exact number", q, unitWords(u))
		}
		return fmt.Errorf("invalid timestamp %s: it has sub-millisecond digits, which Lindorm's TIMESTAMP (milliseconds) cannot hold, and rekey does not round; declare the source column text to keep the exact value", q)
	case tsRange:
		if _, ok, overflow := parseInt(s); !ok && !overflow {
			return fmt.Errorf("invalid timestamp %s: out of range, beyond the int64 epoch milliseconds a timestamp holds", q)
		}
		return fmt.Errorf("invalid timestamp %s: epoch %s out of range", q, unitWords(u))
	case tsSeconds:
		return fmt.Errorf("invalid timestamp %s: it looks like epoch seconds (%s), not milliseconds (%s); set source.timestamp_unit: s in the mapping, or ms to accept it as milliseconds", q, isoOf(n*1000), isoOf(n))
	case tsHour24:
		return fmt.Errorf("invalid timestamp %s: hour 24, which no timestamp holds (hours run from 00 to 23): 24:00 is the next day's 00:00", q)
	case tsLeap:
		return fmt.Errorf("invalid timestamp %s: second 60, a leap second, which no timestamp holds (epoch times, Cassandra's and Lindorm's, count none): "+
			"write 23:59:59.999 or the next day's 00:00:00, or declare the column text to keep the text", q)
	case tsMicros:
		return fmt.Errorf("invalid timestamp %s: it looks like epoch microseconds (%s) or nanoseconds (%s), not milliseconds; set source.timestamp_unit: us or ns in the mapping, or ms to accept it as milliseconds", q, isoOf(n/1000), isoOf(n/1_000_000))
	}
	return expected(s, Timestamp, "epoch "+unitWords(u)+" or ISO-8601 like 2024-01-02T03:04:05.678Z")
}

func unitWords(u TimeUnit) string {
	switch u {
	case UnitSeconds:
		return "seconds"
	case UnitMicros:
		return "microseconds"
	case UnitNanos:
		return "nanoseconds"
	}
	return "milliseconds"
}

func isoOf(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// parseTimestamp reads an integer epoch in unit u or an ISO-8601 date-time; see ParseText.
// Own parser rather than time.Parse: every accepted form in one pass, where time.Parse tries a
// layout per form (about 20x slower on cqlsh's layout: bench/libs BenchmarkTimestamp).
func parseTimestamp(s string, u TimeUnit) (int64, tsStatus) {
	if n, ok, overflow := parseInt(s); ok {
		return epochMillis(n, u)
	} else if overflow {
		return 0, tsRange
	}
	y, mo, d, i, ok := parseDate(s)
	if !ok {
		return 0, tsSyntax
	}
	secs := daysFromCivil(y, mo, d) * 86400
	var ms int64
	subMillis := false
	if i < len(s) && (s[i] == 'T' || s[i] == 't' || s[i] == ' ') && i+1 < len(s) && s[i+1]-'0' <= 9 {
		i++
		h, ok1 := digits(s, i, 2)
		mi, ok2 := digits(s, i+3, 2)
		if !ok1 || !ok2 || s[i+2] != ':' || h > 23 || mi > 59 {
			if ok1 && ok2 && s[i+2] == ':' && h == 24 && mi <= 59 {
				return 0, tsHour24
			}
			return 0, tsSyntax
		}
		i += 5
		var sec int64
		if i < len(s) && s[i] == ':' {
			var ok bool
			if sec, ok = digits(s, i+1, 2); !ok || sec > 59 {
				if ok && sec == 60 {
					return 0, tsLeap
				}
				return 0, tsSyntax
			}
			i += 3
			if i < len(s) && (s[i] == '.' || s[i] == ',') {
				i++
				start := i
				var scale int64 = 100
				for i < len(s) && s[i]-'0' <= 9 {
					if scale > 0 {
						ms += int64(s[i]-'0') * scale
						scale /= 10
					} else if s[i] != '0' {
						subMillis = true // never rounded away
					}
					i++
				}
				if i == start || i-start > 9 {
					return 0, tsSyntax
				}
			}
		}
		secs += h*3600 + mi*60 + sec
	}
	if i < len(s) && s[i] == ' ' && i+1 < len(s) {
		i++
	}
	if i < len(s) {
		switch c := s[i]; {
		case c == 'Z' || c == 'z':
			i++
		case c == '+' || c == '-':
			oh, ok := digits(s, i+1, 2)
			if !ok || oh > 23 {
				return 0, tsSyntax
			}
			i += 3
			var om int64
			if i < len(s) && s[i] == ':' {
				i++
			}
			if i < len(s) {
				if om, ok = digits(s, i, 2); !ok || om > 59 {
					return 0, tsSyntax
				}
				i += 2
			}
			off := oh*3600 + om*60
			if c == '-' {
				off = -off
			}
			secs -= off
		case s[i:] == "UTC" || s[i:] == "GMT":
			i += 3
		default:
			return 0, tsSyntax
		}
	}
	if i != len(s) {
		return 0, tsSyntax
	}
	if subMillis {
		return 0, tsSubMillis
	}
	if y < 0 || y > 9999 { // a wide year: the instant may not fit int64 milliseconds
		return millisOf(secs, ms)
	}
	return secs*1000 + ms, tsOK
}

// millisOf is secs*1000 + ms (0 <= ms < 1000), or tsRange when that does not fit an int64.
func millisOf(secs, ms int64) (int64, tsStatus) {
	const hi, lo = math.MaxInt64 / 1000, math.MinInt64 / 1000
	switch {
	case secs > hi || secs == hi && ms > math.MaxInt64%1000:
		return 0, tsRange
	case secs < lo-1 || secs == lo-1 && ms < 1000+math.MinInt64%1000:
		return 0, tsRange
	case secs < 0: // (secs+1)*1000 fits where secs*1000 may not: the second before the lowest
		return (secs+1)*1000 + (ms - 1000), tsOK
	}
	return secs*1000 + ms, tsOK
}

func isHex(c byte) bool { return c-'0' <= 9 || c-'a' <= 5 || c-'A' <= 5 }

func parseUUID(s string, k Kind) (pipeline.Value, error) {
	if len(s) == 32 {
		ok := true
		for i := 0; i < 32; i++ {
			ok = ok && isHex(s[i])
		}
		if ok {
			s = s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
		}
	}
	if len(s) != 36 {
		return pipeline.Null, expected(s, k, "a UUID like 123e4567-e89b-12d3-a456-426614174000")
	}
	upper := false
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return pipeline.Null, expected(s, k, "a UUID like 123e4567-e89b-12d3-a456-426614174000")
			}
			continue
		}
		if !isHex(c) {
			return pipeline.Null, expected(s, k, "a UUID like 123e4567-e89b-12d3-a456-426614174000")
		}
		upper = upper || c >= 'A' && c <= 'F'
	}
	if k == TimeUUID && s[14] != '1' {
		return pipeline.Null, fmt.Errorf("invalid timeuuid %s: version %c, expected version 1", quoteShort(s), s[14])
	}
	if upper {
		s = strings.ToLower(s)
	}
	return pipeline.Value{Str: s, Kind: pipeline.KindText}, nil
}

func parseBlob(s string) (pipeline.Value, error) {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			// base64 (DSBulk's blobs) of some bytes begins with 0x: "0x01Qg==" is d3 1d 35 42
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return pipeline.Null, expected(s, Blob, "0x followed by an even number of hex digits, or base64")
			}
		}
		return pipeline.Value{Str: string(b), Kind: pipeline.KindBytes}, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return pipeline.Null, expected(s, Blob, "0x-prefixed hex or base64")
	}
	return pipeline.Value{Str: string(b), Kind: pipeline.KindBytes}, nil
}
