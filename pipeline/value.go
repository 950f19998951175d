// Package pipeline holds rekey's vocabulary (values, records, batches, source positions, target
// schemas) and the orchestration that moves batches from a Source through the transform into a
// Sink. It imports no database or broker driver: sources and sinks depend on it, never the reverse.
package pipeline

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the runtime representation of a Value. The column's declared type (CQL on the source
// side, Lindorm on the target side) says what the value means; Kind says where it is stored.
type Kind uint8

const (
	KindNull    Kind = iota
	KindInt          // Num: bigint, int, smallint, tinyint, varint in range, timestamp (epoch ms), date (days since epoch)
	KindFloat        // Num holds math.Float64bits: float, double
	KindBool         // Num is 0 or 1
	KindText         // Str: text, varchar, ascii, uuid/timeuuid (lowercase, 36 chars), inet, collections as JSON
	KindBytes        // Str holds the raw bytes: blob
	KindDecimal      // Str holds the canonical decimal text ("-12.340"): decimal, varint out of int64 range
)

var kindNames = [...]string{"null", "int", "float", "bool", "text", "bytes", "decimal"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one field of a record. It is a small struct rather than an interface so that batches
// of values live in one slab and reading a field never allocates.
type Value struct {
	Str  string
	Num  int64
	Kind Kind
	// DecScale caches the number of a KindDecimal: when DecScale > 0, the value is exactly
	// Num × 10^-(DecScale-1) (Num the unscaled value, DecScale-1 the scale). Sources that decode
	// decimals from binary set it so that casts and sinks need not parse Str again; Str is always
	// set and authoritative.
	DecScale uint8
}

// Null is the absent value.
var Null = Value{}

func Int(i int64) Value      { return Value{Num: i, Kind: KindInt} }
func Float(f float64) Value  { return Value{Num: int64(math.Float64bits(f)), Kind: KindFloat} }
func Text(s string) Value    { return Value{Str: s, Kind: KindText} }
func Bytes(b string) Value   { return Value{Str: b, Kind: KindBytes} }
func Decimal(s string) Value { return Value{Str: s, Kind: KindDecimal} }

// DecimalUnscaled is the decimal s whose number is also known as unscaled × 10^-scale. A scale
// outside 0..254 is not cached.
func DecimalUnscaled(s string, unscaled int64, scale int) Value {
	if scale < 0 || scale > 254 {
		return Decimal(s)
	}
	return Value{Str: s, Num: unscaled, Kind: KindDecimal, DecScale: uint8(scale + 1)}
}

// Unscaled returns a decimal's cached unscaled value and scale, ok false when it has none.
func (v Value) Unscaled() (unscaled int64, scale int, ok bool) {
	if v.Kind != KindDecimal || v.DecScale == 0 {
		return 0, 0, false
	}
	return v.Num, int(v.DecScale) - 1, true
}
func Bool(b bool) Value {
	if b {
		return Value{Num: 1, Kind: KindBool}
	}
	return Value{Kind: KindBool}
}

func (v Value) IsNull() bool { return v.Kind == KindNull }

// valueJSON is a Value's JSON form (a checkpoint's and replicate.json's split values): its fields
// by name, Str as a JSON string when it is UTF-8, else its bytes in Bytes (a VARBINARY value,
// which a JSON string would hold with U+FFFD in place of the bytes that are not UTF-8: a resumed
// run would route by other split values).
type valueJSON struct {
	Str      string
	Bytes    []byte `json:",omitempty"`
	Num      int64
	Kind     Kind
	DecScale uint8
}

// MarshalJSON writes v's fields, keeping every byte of Str.
func (v Value) MarshalJSON() ([]byte, error) {
	j := valueJSON{Str: v.Str, Num: v.Num, Kind: v.Kind, DecScale: v.DecScale}
	if !utf8.ValidString(v.Str) {
		j.Str, j.Bytes = "", []byte(v.Str)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Value) UnmarshalJSON(data []byte) error {
	var j valueJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*v = Value{Str: j.Str, Num: j.Num, Kind: j.Kind, DecScale: j.DecScale}
	if j.Bytes != nil {
		v.Str = string(j.Bytes)
	}
	return nil
}

// AllNull tells whether every value is null: the non-key values of a row that holds nothing but
// its key, which a wide table does not keep (Lindorm stores no row without a cell).
func AllNull(vals []Value) bool {
	for _, v := range vals {
		if v.Kind != KindNull {
			return false
		}
	}
	return true
}
func (v Value) Float() float64  { return math.Float64frombits(uint64(v.Num)) }
func (v Value) BoolValue() bool { return v.Num != 0 }

// Equal tells whether two values are the same value of the same kind.
func (v Value) Equal(o Value) bool {
	if v.Kind == KindDecimal && o.Kind == KindDecimal {
		return v.Str == o.Str // the cached number (I, D) may be present on one side only
	}
	return v == o
}

// AppendCanonical appends the canonical string form that hashes, concatenation and str() use:
// text as is, integers in decimal (timestamps are epoch milliseconds), floats in Go's shortest
// round-trip form, booleans true/false, decimals as their text, bytes raw. Null appends nothing.
func (v Value) AppendCanonical(dst []byte) []byte {
	switch v.Kind {
	case KindInt:
		return strconv.AppendInt(dst, v.Num, 10)
	case KindFloat:
		return strconv.AppendFloat(dst, v.Float(), 'g', -1, 64)
	case KindBool:
		return strconv.AppendBool(dst, v.Num != 0)
	case KindText, KindBytes, KindDecimal:
		return append(dst, v.Str...)
	}
	return dst
}

// String is the canonical form as a string; use AppendCanonical on hot paths.
func (v Value) String() string {
	if v.Kind == KindText || v.Kind == KindBytes || v.Kind == KindDecimal {
		return v.Str
	}
	return string(v.AppendCanonical(nil))
}

// zeroDigits tells whether every digit of decimal text s is 0.
func zeroDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' && s[i] != '.' {
			return false
		}
	}
	return true
}

// PlainDecimal reports whether decimal text s is already canonical: -?(0|[1-9][0-9]*)(\.[0-9]+)? and not a
// negative zero. It is the common case, checked in one pass, which also reads the number as
// unscaled × 10^-scale when it has at most 18 digits (num false otherwise).
func PlainDecimal(s string) (ok bool, unscaled int64, scale int, num bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	start := i
	var u uint64
	for i < len(s) && s[i]-'0' <= 9 {
		u = u*10 + uint64(s[i]-'0')
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return false, 0, 0, false
	}
	digits := i - start
	if i < len(s) {
		if s[i] != '.' || i+1 == len(s) {
			return false, 0, 0, false
		}
		dot := i
		for i++; i < len(s); i++ {
			if s[i]-'0' > 9 {
				return false, 0, 0, false
			}
			u = u*10 + uint64(s[i]-'0')
		}
		scale = len(s) - dot - 1
		digits += scale
	}
	if start != 0 && zeroDigits(s[1:]) { // a negative zero (u may have wrapped: look at the digits)
		return false, 0, 0, false
	}
	if digits > 18 {
		return true, 0, 0, false // u overflowed: the text alone
	}
	unscaled = int64(u)
	if start == 1 {
		unscaled = -unscaled
	}
	return true, unscaled, scale, true
}

// UnderflowsToZero tells whether float text that strconv.ParseFloat read as 0 stands for a number
// that is not zero (a digit other than 0 before its exponent): one too small for the type, which
// ParseFloat reads as 0 without the ErrRange it gives one too large. The sources' double columns
// and the mapping's casts reject such text alike.
func UnderflowsToZero(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	exp, hex := "eE", false
	if len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, exp, hex = s[2:], "pP", true
	}
	for i := 0; i < len(s) && strings.IndexByte(exp, s[i]) < 0; i++ {
		if c := s[i]; c >= '1' && c <= '9' || hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return true
		}
	}
	return false
}
