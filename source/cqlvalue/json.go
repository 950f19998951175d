package cqlvalue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
)

// FromJSON converts the raw text of one JSON value (a member of a JSON Lines object, a Kafka
// message field; convert a json.RawMessage with string(raw)) to a Value of type t.
//
// null is null. A JSON string is read as ParseText reads text, so "2024-01-02T03:04:05Z" is a
// timestamp and "0x0102" a blob; its content aliases raw unless it has escapes. Numbers are read
// exactly from their text (decimal 0.1 stays 0.1). true/false fit boolean. Arrays and objects fit
// collections. A text column takes any JSON value: a non-string as its compact JSON text.
func (t Type) FromJSON(raw string) (pipeline.Value, error) {
	raw = trimSpace(raw)
	if raw == "" {
		return pipeline.Null, errors.New("empty JSON value")
	}
	switch c := raw[0]; c {
	case '"':
		s, ascii, err := unquote(raw)
		if err != nil {
			return pipeline.Null, err
		}
		if ascii && t.Kind == Text { // UTF-8 already: unquote saw every byte
			return pipeline.Value{Str: s, Kind: pipeline.KindText}, nil
		}
		return t.ParseText(s)
	case 'n':
		if raw == "null" {
			return pipeline.Null, nil
		}
	case 't', 'f':
		if raw == "true" || raw == "false" {
			switch t.Kind {
			case Boolean:
				return pipeline.Bool(c == 't'), nil
			case Text, Ascii:
				return pipeline.Value{Str: raw, Kind: pipeline.KindText}, nil
			}
			return pipeline.Null, fmt.Errorf("invalid %s: expected %s, got JSON %s", t.Kind, t, raw)
		}
	case '[', '{':
		switch {
		case t.Kind.IsJSON():
			js, err := parseCollection(t, raw)
			if err != nil {
				return pipeline.Null, err
			}
			return pipeline.Value{Str: js, Kind: pipeline.KindText}, nil
		case t.Kind == Text || t.Kind == Ascii:
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(raw)); err != nil {
				return pipeline.Null, fmt.Errorf("invalid JSON: %v", err)
			}
			return t.ParseText(b.String())
		}
		what := "an object"
		if c == '[' {
			what = "an array"
		}
		return pipeline.Null, fmt.Errorf("invalid %s: expected %s, got JSON %s", t.Kind, t, what)
	default:
		if c == '-' || c >= '0' && c <= '9' {
			if end, err := skipNumber(raw, 0); err != nil || end != len(raw) {
				return pipeline.Null, fmt.Errorf("invalid JSON number %s", quoteShort(raw))
			}
			return t.fromNumber(raw)
		}
	}
	return pipeline.Null, fmt.Errorf("invalid JSON value %s", quoteShort(raw))
}

// FromScanned is FromJSON of a value ObjectMembers gave with sc: what the scan learned is not
// checked again.
func (t Type) FromScanned(raw string, sc Scanned) (pipeline.Value, error) {
	switch sc {
	case ScannedASCII:
		s := raw[1 : len(raw)-1]
		if t.Kind == Text { // UTF-8 already: the scan saw every byte
			return pipeline.Value{Str: s, Kind: pipeline.KindText}, nil
		}
		return t.ParseText(s)
	case ScannedNumber:
		return t.fromNumber(raw)
	}
	return t.FromJSON(raw)
}

// fromNumber reads a well-formed JSON number.
func (t Type) fromNumber(raw string) (pipeline.Value, error) {
	if t.Kind == Blob || t.Kind == UUID || t.Kind == TimeUUID || t.Kind == Inet || t.Kind.IsJSON() {
		return pipeline.Null, fmt.Errorf("invalid %s: expected %s, got JSON number %s", t.Kind, t, cut(raw))
	}
	return t.ParseText(raw)
}

// unquoteJSON returns the content of a JSON string literal; without escapes it aliases raw.
func unquoteJSON(raw string) (string, error) {
	s, _, err := unquote(raw)
	return s, err
}

// unquote is unquoteJSON that also tells whether the literal was plain ASCII without escapes.
func unquote(raw string) (s string, ascii bool, err error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false, fmt.Errorf("invalid JSON string %s", quoteShort(raw))
	}
	inner := raw[1 : len(raw)-1]
	k, nonASCII := plainRun(inner, 0)
	if k < len(inner) {
		s, err = unescapeJSON(raw, inner)
		return s, false, err
	}
	return inner, !nonASCII, nil
}

// plainRun returns the offset of the first byte at or after i that ends or escapes a JSON
// string's plain run ('"', '\\' or a control character), or len(s), and whether a byte it skipped
// is not ASCII. It tests eight bytes at a time: the strings of a message are read two or three
// times (skipped, then unquoted), and byte by byte that was a third of a Kafka JSON message's
// decoding.
func plainRun(s string, i int) (int, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var acc uint64
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		q, b := x^(ones*'"'), x^(ones*'\\')
		// a byte's high bit is set where it is '"', '\\' or below 0x20; a borrow can set it in
		// a later byte too, never in an earlier one: the lowest set bit is the first such byte
		m := ((q-ones)&^q | (b-ones)&^b | (x-ones*0x20)&^x) & highs
		if m != 0 {
			n := bits.TrailingZeros64(m) / 8
			acc |= x & (1<<(8*n) - 1)
			return i + n, acc&highs != 0
		}
		acc |= x
	}
	nonASCII := acc&highs != 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		nonASCII = nonASCII || c >= utf8.RuneSelf
	}
	return i, nonASCII
}

// unescapeJSON decodes the escapes of a JSON string's content. Unlike encoding/json, which
// silently turns a lone UTF-16 surrogate ("\udc80") into U+FFFD, it rejects one: the text it
// stands for cannot be written as UTF-8, and replacing it would change the data. Bytes that are
// not valid UTF-8 are kept as they are, for the caller's type to judge (text rejects them).
func unescapeJSON(raw, inner string) (string, error) {
	b := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '"' || c < 0x20 {
			return "", fmt.Errorf("invalid JSON string %s", quoteShort(raw))
		}
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i++; i >= len(inner) {
			return "", fmt.Errorf("invalid JSON string %s", quoteShort(raw))
		}
		switch inner[i] {
		case '"', '\\', '/':
			b = append(b, inner[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(inner, i+1)
			if !ok {
				return "", fmt.Errorf("invalid JSON string %s", quoteShort(raw))
			}
			at := i - 1
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(inner) && inner[i+1] == '\\' && inner[i+2] == 'u' {
					r2, ok = hex4(inner, i+3)
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					return "", &EncodingError{Offset: at, Detail: fmt.Sprintf("lone UTF-16 surrogate \\u%04x at byte %d of the JSON string, not a character", r, at)}
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", fmt.Errorf("invalid JSON string %s", quoteShort(raw))
		}
	}
	return string(b), nil
}

// hex4 reads the 4 hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// ObjectFields walks the JSON object doc and calls fn with each member's key and the raw text of
// its value (a substring of doc). Keys without escapes alias doc. It returns an error when doc is
// not exactly one well-formed JSON object (surrounding whitespace allowed).
// Own scanner rather than encoding/json: over 15x faster and no allocation per message
// (bench/libs BenchmarkJSONObject).
func ObjectFields(doc string, fn func(key, raw string)) error {
	return ObjectMembers(doc, func(key, raw string, _ Scanned) { fn(key, raw) })
}

// Scanned is what ObjectMembers learned of a member's value while it skipped it, so that
// FromScanned need not scan the value again: a message's strings were otherwise read twice, once
// to find their end and once to unquote them (and its numbers validated twice).
type Scanned uint8

const (
	ScannedOther  Scanned = iota // nothing known: FromScanned reads it as FromJSON does
	ScannedASCII                 // a JSON string of ASCII without escapes
	ScannedNumber                // a well-formed JSON number, nothing around it
)

// ObjectMembers is ObjectFields that also tells fn what the scan learned of each value, for
// FromScanned.
func ObjectMembers(doc string, fn func(key, raw string, sc Scanned)) error {
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return errors.New("expected a JSON object")
	}
	i = skipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		i++
	} else {
		for {
			if i >= len(doc) || doc[i] != '"' {
				return fmt.Errorf("expected a member name at offset %d", i)
			}
			var key string
			end, _ := plainRun(doc, i+1)
			var err error
			if end < len(doc) && doc[end] == '"' { // no escapes: one pass
				key, end = doc[i+1:end], end+1
			} else {
				if end, err = skipString(doc, i); err != nil {
					return err
				}
				if key, err = unquoteJSON(doc[i:end]); err != nil {
					return err
				}
			}
			i = skipWS(doc, end)
			if i >= len(doc) || doc[i] != ':' {
				return fmt.Errorf("expected ':' at offset %d", i)
			}
			i = skipWS(doc, i+1)
			var sc Scanned
			if end, sc, err = scanValue(doc, i); err != nil {
				return err
			}
			fn(key, doc[i:end], sc)
			i = skipWS(doc, end)
			if i < len(doc) && doc[i] == ',' {
				i = skipWS(doc, i+1)
				continue
			}
			if i < len(doc) && doc[i] == '}' {
				i++
				break
			}
			return fmt.Errorf("expected ',' or '}' at offset %d", i)
		}
	}
	if i = skipWS(doc, i); i != len(doc) {
		return fmt.Errorf("unexpected data after the object at offset %d", i)
	}
	return nil
}

func skipWS(s string, i int) int {
	if i < len(s) && s[i] > ' ' { // compact JSON: one test
		return i
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanValue is skipValue that also says what it learned of the value: a string without escapes
// is scanned once, and whether it is ASCII comes from that scan.
func scanValue(s string, i int) (int, Scanned, error) {
	if i < len(s) {
		switch c := s[i]; {
		case c == '"':
			j, nonASCII := plainRun(s, i+1)
			if j < len(s) && s[j] == '"' {
				if nonASCII {
					return j + 1, ScannedOther, nil
				}
				return j + 1, ScannedASCII, nil
			}
			end, err := skipStringFrom(s, j)
			return end, ScannedOther, err
		case c == '-' || c >= '0' && c <= '9':
			end, err := skipNumber(s, i)
			return end, ScannedNumber, err
		}
	}
	end, err := skipValue(s, i, 0)
	return end, ScannedOther, err
}

// skipValue validates the JSON value starting at s[i] and returns the offset just after it.
func skipValue(s string, i, depth int) (int, error) {
	if i >= len(s) {
		return i, errors.New("unexpected end of JSON")
	}
	switch c := s[i]; {
	case c == '"':
		return skipString(s, i)
	case c == '{' || c == '[':
		if depth > 500 {
			return i, errors.New("JSON nested too deeply")
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipWS(s, i+1)
		if i < len(s) && s[i] == closer {
			return i + 1, nil
		}
		for {
			if c == '{' {
				if i >= len(s) || s[i] != '"' {
					return i, fmt.Errorf("expected a member name at offset %d", i)
				}
				end, err := skipString(s, i)
				if err != nil {
					return i, err
				}
				i = skipWS(s, end)
				if i >= len(s) || s[i] != ':' {
					return i, fmt.Errorf("expected ':' at offset %d", i)
				}
				i = skipWS(s, i+1)
			}
			end, err := skipValue(s, i, depth+1)
			if err != nil {
				return i, err
			}
			i = skipWS(s, end)
			if i < len(s) && s[i] == ',' {
				i = skipWS(s, i+1)
				continue
			}
			if i < len(s) && s[i] == closer {
				return i + 1, nil
			}
			return i, fmt.Errorf("expected ',' or '%c' at offset %d", closer, i)
		}
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(s, i)
	case c == 't' && len(s)-i >= 4 && s[i:i+4] == "true":
		return i + 4, nil
	case c == 'f' && len(s)-i >= 5 && s[i:i+5] == "false":
		return i + 5, nil
	case c == 'n' && len(s)-i >= 4 && s[i:i+4] == "null":
		return i + 4, nil
	}
	return i, fmt.Errorf("invalid character %q at offset %d", s[i], i)
}

// skipString returns the offset just after the JSON string starting at s[i] ('"').
func skipString(s string, i int) (int, error) {
	j, _ := plainRun(s, i+1)
	return skipStringFrom(s, j)
}

// skipStringFrom is skipString from s[j], inside the string past its plain run.
func skipStringFrom(s string, j int) (int, error) {
	for ; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			j++
			if j >= len(s) {
				break
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) || !isHex(s[j+1]) || !isHex(s[j+2]) || !isHex(s[j+3]) || !isHex(s[j+4]) {
					return j, fmt.Errorf("invalid \\u escape at offset %d", j)
				}
				j += 4
			default:
				return j, fmt.Errorf("invalid escape at offset %d", j)
			}
		case c < 0x20:
			return j, fmt.Errorf("control character in string at offset %d", j)
		}
	}
	return len(s), errors.New("unterminated JSON string")
}

func skipNumber(s string, i int) (int, error) {
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
	default:
		return i, fmt.Errorf("invalid number at offset %d", start)
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
		if i == d {
			return i, fmt.Errorf("invalid number at offset %d", start)
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
		if i == d {
			return i, fmt.Errorf("invalid number at offset %d", start)
		}
	}
	return i, nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string literal (no HTML escaping); invalid UTF-8 becomes U+FFFD. Every source uses
// it, so collections render byte-identically whichever source read them.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...) // invalid UTF-8 becomes U+FFFD, written as UTF-8
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONFloat writes a float as a JSON number, or as a string for NaN and infinities.
// AppendJSONFloat appends f as a JSON number, or as a string for NaN and infinities.
func AppendJSONFloat(dst []byte, f float64) []byte {
	switch {
	case f != f:
		return append(dst, `"NaN"`...)
	case f > 1.7976931348623157e308:
		return append(dst, `"Infinity"`...)
	case f < -1.7976931348623157e308:
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// AppendJSON appends v as the JSON value FromJSON reads back as v: null as null (an empty text
// stays ""), collections as their JSON, blobs as "0x..." strings, timestamps as ISO-8601 UTC
// strings with milliseconds (read the same whatever the column's time unit), dates as
// yyyy-mm-dd, integers and decimals as numbers written as they are held (the scale kept).
func (t Type) AppendJSON(dst []byte, v pipeline.Value) []byte {
	switch {
	case v.Kind == pipeline.KindNull:
		return append(dst, "null"...)
	case t.Kind.IsJSON() && v.Kind == pipeline.KindText:
		return append(dst, v.Str...) // held as canonical JSON already
	}
	return appendScalarJSON(dst, t.Kind, v)
}
