package cqlvalue

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
)

// parseCollection reads a list, set, map or tuple written as JSON or as a CQL literal (cqlsh
// output: ['a', 'b'], {1, 2}, {'k': 1}, (1, 'a')) and returns canonical compact JSON: lists keep
// their order, sets are sorted and deduplicated, maps are JSON objects sorted by key (later
// duplicates win), tuples are arrays of their elements (null where an element is null), as the
// Cassandra source writes them. A tuple also reads as Debezium's Cassandra connector writes it,
// an object of its elements named field1, field2, ... in order.
func parseCollection(t Type, s string) (string, error) {
	p := collParser{s: s}
	out, _, err := p.value(t, nil, 0)
	if err == nil {
		if p.ws(); p.i != len(p.s) {
			err = fmt.Errorf("unexpected %s after the value", quoteShort(p.s[p.i:]))
		}
	}
	if err != nil {
		return "", fmt.Errorf("invalid %s: %w", t, err)
	}
	return string(out), nil
}

type collParser struct {
	s string
	i int
}

func (p *collParser) ws() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

type entry struct {
	key pipeline.Value // sort key
	kjs []byte         // JSON of the key (maps) or of the element (sets)
	vjs []byte         // JSON of the value (maps)
}

// value parses one value of type t at the current position, appends its JSON to dst, and
// returns the Value it stands for (collections: their JSON text) for ordering sets and maps.
func (p *collParser) value(t Type, dst []byte, depth int) ([]byte, pipeline.Value, error) {
	if depth > 64 {
		return dst, pipeline.Null, errors.New("nested too deeply")
	}
	p.ws()
	if p.i >= len(p.s) {
		return dst, pipeline.Null, fmt.Errorf("expected %s, got the end of input", t)
	}
	if !t.Kind.IsJSON() {
		tok, quoted, err := p.scalar()
		if err != nil {
			return dst, pipeline.Null, err
		}
		if !quoted && tok == "null" {
			return dst, pipeline.Null, errors.New("collections cannot hold null")
		}
		v, err := t.ParseText(tok)
		if err != nil {
			return dst, pipeline.Null, err
		}
		if v.IsNull() {
			return dst, pipeline.Null, fmt.Errorf("empty %s element", t)
		}
		return appendScalarJSON(dst, t.Kind, v), v, nil
	}
	c := p.s[p.i]
	if c == '"' || c == '\'' {
		// A nested collection written as a string: parse its content.
		tok, _, err := p.scalar()
		if err != nil {
			return dst, pipeline.Null, err
		}
		js, err := parseCollection(t, tok)
		if err != nil {
			return dst, pipeline.Null, err
		}
		return append(dst, js...), pipeline.Text(js), nil
	}
	start := len(dst)
	var err error
	switch {
	case t.Kind == List && c == '[':
		dst, err = p.list(t.Elem(), dst, depth)
	case t.Kind == Set && (c == '[' || c == '{'):
		dst, err = p.setOrMap(t, dst, depth)
	case t.Kind == Map && c == '{':
		dst, err = p.setOrMap(t, dst, depth)
	case t.Kind == Tuple && (c == '[' || c == '(' || c == '{'):
		dst, err = p.tuple(t, dst, depth)
	default:
		want := "'['"
		if t.Kind == Tuple {
			want = "'[', '(' or '{'"
		} else if t.Kind == Map {
			want = "'{'"
		} else if t.Kind == Set {
			want = "'[' or '{'"
		}
		return dst, pipeline.Null, fmt.Errorf("expected %s for %s at offset %d", want, t, p.i)
	}
	if err != nil {
		return dst, pipeline.Null, err
	}
	return dst, pipeline.Text(string(dst[start:])), nil
}

// tuple reads a tuple: a JSON array or CQL literal of its elements in order, or an object naming
// them field1, field2, ... (Debezium's Cassandra connector); each element may be null.
func (p *collParser) tuple(t Type, dst []byte, depth int) ([]byte, error) {
	open := p.s[p.i]
	closer := map[byte]byte{'[': ']', '(': ')', '{': '}'}[open]
	p.i++
	dst = append(dst, '[')
	fields := t.Fields()
	for n := range fields {
		p.ws()
		if n > 0 {
			if p.i >= len(p.s) || p.s[p.i] != ',' {
				return dst, fmt.Errorf("expected ',' at offset %d: %s has %d elements", p.i, t, len(fields))
			}
			p.i++
			p.ws()
			dst = append(dst, ',')
		}
		if open == '{' {
			name, quoted, err := p.scalar()
			if err != nil {
				return dst, err
			}
			if want := "field" + strconv.Itoa(n+1); !quoted || name != want {
				return dst, fmt.Errorf("element %s of %s at offset %d, want %q", quoteShort(name), t, p.i, want)
			}
			if p.ws(); p.i >= len(p.s) || p.s[p.i] != ':' {
				return dst, fmt.Errorf("expected ':' at offset %d", p.i)
			}
			p.i++
			p.ws()
		}
		if strings.HasPrefix(p.s[p.i:], "null") {
			p.i += len("null")
			dst = append(dst, "null"...)
			continue
		}
		var err error
		if dst, _, err = p.value(fields[n], dst, depth+1); err != nil {
			return dst, err
		}
	}
	if p.ws(); p.i >= len(p.s) || p.s[p.i] != closer {
		return dst, fmt.Errorf("expected %q at offset %d: %s has %d elements", closer, p.i, t, len(fields))
	}
	p.i++
	return append(dst, ']'), nil
}

func (p *collParser) list(elem Type, dst []byte, depth int) ([]byte, error) {
	p.i++ // '['
	dst = append(dst, '[')
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return append(dst, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, _, err = p.value(elem, dst, depth+1); err != nil {
			return dst, err
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return append(dst, ']'), nil
		}
		return dst, fmt.Errorf("expected ',' or ']' at offset %d", p.i)
	}
}

func (p *collParser) setOrMap(t Type, dst []byte, depth int) ([]byte, error) {
	closer := byte(']')
	if p.s[p.i] == '{' {
		closer = '}'
	}
	p.i++
	isMap := t.Kind == Map
	keyType, valType := t.Elem(), t.Value()
	var entries []entry
	p.ws()
	if !(p.i < len(p.s) && p.s[p.i] == closer) {
		for {
			kjs, kv, err := p.value(keyType, nil, depth+1)
			if err != nil {
				return dst, err
			}
			e := entry{key: kv, kjs: kjs}
			if isMap {
				p.ws()
				if p.i >= len(p.s) || p.s[p.i] != ':' {
					return dst, fmt.Errorf("expected ':' at offset %d", p.i)
				}
				p.i++
				if e.vjs, _, err = p.value(valType, nil, depth+1); err != nil {
					return dst, err
				}
			}
			entries = append(entries, e)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == closer {
				break
			}
			return dst, fmt.Errorf("expected ',' or '%c' at offset %d", closer, p.i)
		}
	}
	p.i++
	sort.SliceStable(entries, func(a, b int) bool {
		return compareKeys(entries[a].key, entries[b].key) < 0
	})
	open, close := byte('['), byte(']')
	if isMap {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	n := 0
	for i, e := range entries {
		// Equal keys are adjacent after the stable sort: keep the last one.
		if i+1 < len(entries) && compareKeys(e.key, entries[i+1].key) == 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if !isMap {
			dst = append(dst, e.kjs...)
			continue
		}
		if len(e.kjs) > 0 && e.kjs[0] == '"' {
			dst = append(dst, e.kjs...)
		} else {
			dst = AppendJSONString(dst, string(e.kjs))
		}
		dst = append(dst, ':')
		dst = append(dst, e.vjs...)
	}
	return append(dst, close), nil
}

func compareKeys(a, b pipeline.Value) int {
	if a.Kind == pipeline.KindText || a.Kind == pipeline.KindBytes {
		return strings.Compare(a.Str, b.Str)
	}
	if a.Kind == pipeline.KindFloat && b.Kind == pipeline.KindFloat {
		return compareFloats(a.Float(), b.Float())
	}
	return pipeline.Compare(pipeline.TypeInvalid, a, b)
}

// compareFloats orders as Cassandra orders float and double elements (Java's Double.compare):
// -0 before 0, NaN after every number and equal only to NaN. A NaN compared as equal to
// everything would make its neighbours look like duplicates, and drop them.
func compareFloats(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an || bn:
		return boolCmp(an, bn)
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return boolCmp(!math.Signbit(a), !math.Signbit(b))
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// scalar reads a quoted string ('CQL' with ” escapes, or "JSON") or a bare word ending at
// whitespace or one of , : ] }.
func (p *collParser) scalar() (string, bool, error) {
	s := p.s
	switch s[p.i] {
	case '\'':
		var b []byte
		start := p.i + 1
		for j := start; j < len(s); j++ {
			if s[j] != '\'' {
				continue
			}
			if j+1 < len(s) && s[j+1] == '\'' {
				b = append(b, s[start:j+1]...)
				start = j + 2
				j++
				continue
			}
			p.i = j + 1
			if b == nil {
				return s[start:j], true, nil
			}
			return string(append(b, s[start:j]...)), true, nil
		}
		return "", false, errors.New("unterminated quoted string")
	case '"':
		end, err := skipString(s, p.i)
		if err != nil {
			return "", false, err
		}
		str, err := unquoteJSON(s[p.i:end])
		p.i = end
		return str, true, err
	}
	start := p.i
	for p.i < len(s) {
		c := s[p.i]
		if c == ',' || c == ':' || c == ']' || c == '}' || c == '[' || c == '{' || isSpace(c) {
			break
		}
		p.i++
	}
	if p.i == start {
		return "", false, fmt.Errorf("unexpected %q at offset %d", s[p.i], p.i)
	}
	return s[start:p.i], false, nil
}

// appendScalarJSON writes a scalar value of kind k as JSON: numbers as numbers, timestamps as
// ISO-8601 UTC strings, dates as yyyy-mm-dd, blobs as "0x..." strings.
func appendScalarJSON(dst []byte, k Kind, v pipeline.Value) []byte {
	switch v.Kind {
	case pipeline.KindInt:
		switch k {
		case Timestamp:
			dst = append(dst, '"')
			dst = time.UnixMilli(v.Num).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
			return append(dst, '"')
		case Date:
			dst = append(dst, '"')
			dst = time.Unix(v.Num*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
			return append(dst, '"')
		}
		return strconv.AppendInt(dst, v.Num, 10)
	case pipeline.KindFloat:
		return AppendJSONFloat(dst, v.Float())
	case pipeline.KindBool:
		return strconv.AppendBool(dst, v.Num != 0)
	case pipeline.KindDecimal:
		return append(dst, v.Str...)
	case pipeline.KindBytes:
		dst = append(dst, '"', '0', 'x')
		for i := 0; i < len(v.Str); i++ {
			dst = append(dst, hexDigits[v.Str[i]>>4], hexDigits[v.Str[i]&0xf])
		}
		return append(dst, '"')
	}
	return AppendJSONString(dst, v.Str)
}
