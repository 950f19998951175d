package cqltest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"
)

// cqlType is a parsed CQL column type.
type cqlType struct {
	id     gocql.Type
	frozen bool
	key    *cqlType   // map key
	elem   *cqlType   // list / set element, map value
	elems  []*cqlType // tuple elements
	info   gocql.TypeInfo
	name   string // canonical text as Cassandra 4 prints it in system_schema.columns.type
}

var nativeTypes = map[string]gocql.Type{
	"ascii":     gocql.TypeAscii,
	"bigint":    gocql.TypeBigInt,
	"blob":      gocql.TypeBlob,
	"boolean":   gocql.TypeBoolean,
	"counter":   gocql.TypeCounter,
	"date":      gocql.TypeDate,
	"decimal":   gocql.TypeDecimal,
	"double":    gocql.TypeDouble,
	"duration":  gocql.TypeDuration,
	"float":     gocql.TypeFloat,
	"inet":      gocql.TypeInet,
	"int":       gocql.TypeInt,
	"smallint":  gocql.TypeSmallInt,
	"text":      gocql.TypeVarchar,
	"varchar":   gocql.TypeVarchar,
	"time":      gocql.TypeTime,
	"timestamp": gocql.TypeTimestamp,
	"timeuuid":  gocql.TypeTimeUUID,
	"tinyint":   gocql.TypeTinyInt,
	"uuid":      gocql.TypeUUID,
	"varint":    gocql.TypeVarint,
}

// parseType parses CQL type text such as "int", "map<text, int>", "frozen<list<int>>" or
// "tuple<int, text>".
func parseType(s string) (*cqlType, error) {
	p := typeParser{s: strings.ToLower(s)}
	t, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", s, err)
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("type %q: unexpected %q", s, p.s[p.i:])
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *typeParser) word() string {
	p.skipSpace()
	j := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
		p.i++
	}
	return p.s[j:p.i]
}

func (p *typeParser) expect(c byte) error {
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q at offset %d", c, p.i)
	}
	p.i++
	return nil
}

func (p *typeParser) args() ([]*cqlType, error) {
	if err := p.expect('<'); err != nil {
		return nil, err
	}
	var out []*cqlType
	for {
		t, err := p.parse()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		return out, p.expect('>')
	}
}

func (p *typeParser) parse() (*cqlType, error) {
	w := p.word()
	if id, ok := nativeTypes[w]; ok {
		return newNative(id), nil
	}
	switch w {
	case "frozen":
		a, err := p.args()
		if err != nil {
			return nil, err
		}
		if len(a) != 1 {
			return nil, fmt.Errorf("frozen takes one type")
		}
		t := *a[0]
		t.frozen = true
		t.finish()
		return &t, nil
	case "list", "set":
		a, err := p.args()
		if err != nil {
			return nil, err
		}
		if len(a) != 1 {
			return nil, fmt.Errorf("%s takes one type", w)
		}
		id := gocql.TypeList
		if w == "set" {
			id = gocql.TypeSet
		}
		t := &cqlType{id: id, elem: a[0]}
		t.finish()
		return t, nil
	case "map":
		a, err := p.args()
		if err != nil {
			return nil, err
		}
		if len(a) != 2 {
			return nil, fmt.Errorf("map takes two types")
		}
		t := &cqlType{id: gocql.TypeMap, key: a[0], elem: a[1]}
		t.finish()
		return t, nil
	case "tuple":
		a, err := p.args()
		if err != nil {
			return nil, err
		}
		t := &cqlType{id: gocql.TypeTuple, elems: a, frozen: true}
		t.finish()
		return t, nil
	case "":
		return nil, fmt.Errorf("missing type at offset %d", p.i)
	}
	return nil, fmt.Errorf("unsupported type %q", w)
}

func newNative(id gocql.Type) *cqlType {
	t := &cqlType{id: id}
	t.finish()
	return t
}

// finish fills the gocql TypeInfo and the canonical name.
func (t *cqlType) finish() {
	nt := gocql.NewNativeType(4, t.id, "")
	var name string
	switch t.id {
	case gocql.TypeList, gocql.TypeSet:
		t.info = gocql.CollectionType{NativeType: nt, Elem: t.elem.info}
		name = map[gocql.Type]string{gocql.TypeList: "list", gocql.TypeSet: "set"}[t.id] + "<" + t.elem.name + ">"
	case gocql.TypeMap:
		t.info = gocql.CollectionType{NativeType: nt, Key: t.key.info, Elem: t.elem.info}
		name = "map<" + t.key.name + ", " + t.elem.name + ">"
	case gocql.TypeTuple:
		infos := make([]gocql.TypeInfo, len(t.elems))
		names := make([]string, len(t.elems))
		for i, e := range t.elems {
			infos[i] = e.info
			names[i] = e.name
		}
		t.info = gocql.TupleTypeInfo{NativeType: nt, Elems: infos}
		name = "tuple<" + strings.Join(names, ", ") + ">"
	default:
		t.info = nt
		for k, v := range nativeTypes {
			if v == t.id && k != "varchar" {
				name = k
			}
		}
	}
	if t.frozen {
		name = "frozen<" + name + ">"
	}
	t.name = name
}

// isMultiCell reports whether the type is a non-frozen collection (writetime/ttl are not allowed on it).
func (t *cqlType) isMultiCell() bool {
	return !t.frozen && (t.id == gocql.TypeList || t.id == gocql.TypeSet || t.id == gocql.TypeMap)
}

// appendOption appends the protocol [option] describing the type.
func (t *cqlType) appendOption(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t.id))
	switch t.id {
	case gocql.TypeList, gocql.TypeSet:
		b = t.elem.appendOption(b)
	case gocql.TypeMap:
		b = t.key.appendOption(b)
		b = t.elem.appendOption(b)
	case gocql.TypeTuple:
		b = binary.BigEndian.AppendUint16(b, uint16(len(t.elems)))
		for _, e := range t.elems {
			b = e.appendOption(b)
		}
	}
	return b
}

// marshal encodes a Go value as the column's serialized value; nil means null.
// Common scalar types take a fast path; everything else goes through gocql.Marshal.
func (t *cqlType) marshal(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch t.id {
	case gocql.TypeBigInt, gocql.TypeCounter:
		if x, ok := v.(int64); ok {
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(x)), nil
		}
	case gocql.TypeInt:
		switch x := v.(type) {
		case int32:
			return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(x)), nil
		case int:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(int32(x))), nil
			}
		}
	case gocql.TypeVarchar, gocql.TypeAscii:
		if x, ok := v.(string); ok {
			return append(make([]byte, 0, len(x)), x...), nil
		}
	case gocql.TypeBlob:
		if x, ok := v.([]byte); ok {
			if x == nil {
				return nil, nil
			}
			return append(make([]byte, 0, len(x)), x...), nil
		}
	case gocql.TypeDouble:
		if x, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(x)), nil
		}
	case gocql.TypeBoolean:
		if x, ok := v.(bool); ok {
			if x {
				return []byte{1}, nil
			}
			return []byte{0}, nil
		}
	}
	b, err := gocql.Marshal(t.info, v)
	if err != nil || b == nil {
		return b, err
	}
	switch t.id {
	case gocql.TypeSet, gocql.TypeMap, gocql.TypeList, gocql.TypeTuple:
		b, err = t.normalize(b)
		if err == nil && !t.frozen && t.id != gocql.TypeTuple && len(b) == 4 {
			// Cassandra stores an empty non-frozen collection as no cells: it reads back as null.
			return nil, nil
		}
	}
	return b, err
}

// normalize rewrites a serialized collection the way Cassandra stores it: set elements and
// map entries sorted by the key type's order, set duplicates and repeated map keys removed
// (the last value wins), recursively inside nested collections and tuples.
func (t *cqlType) normalize(b []byte) ([]byte, error) {
	r := &reader{b: b}
	switch t.id {
	case gocql.TypeTuple:
		out := make([]byte, 0, len(b))
		for _, e := range t.elems {
			v, _ := r.value()
			if r.err != nil {
				return nil, r.err
			}
			if v != nil {
				var err error
				if v, err = e.normalize(v); err != nil {
					return nil, err
				}
			}
			out = appendValue(out, v)
		}
		return out, nil
	case gocql.TypeList, gocql.TypeSet, gocql.TypeMap:
	default:
		return b, nil
	}
	n := int(r.int())
	type entry struct{ k, v []byte }
	entries := make([]entry, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		var e entry
		e.k, _ = r.value()
		if t.id == gocql.TypeMap {
			e.v, _ = r.value()
		}
		entries = append(entries, e)
	}
	if r.err != nil {
		return nil, r.err
	}
	keyType := t.elem
	if t.id == gocql.TypeMap {
		keyType = t.key
	}
	for i := range entries {
		var err error
		if entries[i].k != nil {
			if entries[i].k, err = keyType.normalize(entries[i].k); err != nil {
				return nil, err
			}
		}
		if t.id == gocql.TypeMap && entries[i].v != nil {
			if entries[i].v, err = t.elem.normalize(entries[i].v); err != nil {
				return nil, err
			}
		}
	}
	if t.id != gocql.TypeList {
		sort.SliceStable(entries, func(i, j int) bool { return compareValues(keyType, entries[i].k, entries[j].k) < 0 })
		w := 0
		for i := range entries {
			if w > 0 && compareValues(keyType, entries[w-1].k, entries[i].k) == 0 {
				entries[w-1] = entries[i]
				continue
			}
			entries[w] = entries[i]
			w++
		}
		entries = entries[:w]
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, len(b)), uint32(len(entries)))
	for _, e := range entries {
		out = appendValue(out, e.k)
		if t.id == gocql.TypeMap {
			out = appendValue(out, e.v)
		}
	}
	return out, nil
}

// literal converts a CQL literal token (string, number, boolean, uuid, hex blob) to a serialized
// value of this type.
func (t *cqlType) literal(tok token) ([]byte, error) {
	switch tok.kind {
	case tkString:
		switch t.id {
		case gocql.TypeVarchar, gocql.TypeAscii:
			return []byte(tok.text), nil
		case gocql.TypeInet:
			return t.marshal(tok.text)
		}
	case tkNumber:
		switch t.id {
		case gocql.TypeBigInt, gocql.TypeCounter, gocql.TypeInt, gocql.TypeSmallInt, gocql.TypeTinyInt, gocql.TypeTimestamp, gocql.TypeVarint:
			var n big.Int
			if _, ok := n.SetString(tok.text, 10); !ok {
				break
			}
			if t.id == gocql.TypeVarint {
				return t.marshal(&n)
			}
			if !n.IsInt64() {
				break
			}
			return t.marshal(n.Int64())
		case gocql.TypeDouble, gocql.TypeFloat:
			var f float64
			if _, err := fmt.Sscan(tok.text, &f); err == nil {
				if t.id == gocql.TypeFloat {
					return t.marshal(float32(f))
				}
				return t.marshal(f)
			}
		case gocql.TypeDecimal:
			d, ok := new(inf.Dec).SetString(tok.text)
			if ok {
				return t.marshal(d)
			}
		}
	case tkIdent:
		switch {
		case t.id == gocql.TypeBoolean && (tok.text == "true" || tok.text == "false"):
			return t.marshal(tok.text == "true")
		case t.id == gocql.TypeUUID || t.id == gocql.TypeTimeUUID:
			u, err := gocql.ParseUUID(tok.text)
			if err == nil {
				return t.marshal(u)
			}
		case t.id == gocql.TypeBlob && strings.HasPrefix(tok.text, "0x"):
			var out []byte
			if _, err := fmt.Sscanf(tok.text[2:], "%x", &out); err == nil || len(tok.text) == 2 {
				return append([]byte{}, out...), nil
			}
		}
	}
	return nil, fmt.Errorf("invalid literal %q for type %s", tok.text, t.name)
}

// compareValues orders two serialized values of type t the way Cassandra's comparator does
// for the common types (clustering order); other types compare as unsigned bytes.
func compareValues(t *cqlType, a, b []byte) int {
	switch t.id {
	case gocql.TypeBigInt, gocql.TypeCounter, gocql.TypeTimestamp, gocql.TypeTime, gocql.TypeInt, gocql.TypeSmallInt, gocql.TypeTinyInt:
		if len(a) == len(b) && len(a) > 0 {
			// signed big-endian: flip the sign bit of the first byte
			if a[0]^0x80 != b[0]^0x80 {
				if a[0]^0x80 < b[0]^0x80 {
					return -1
				}
				return 1
			}
			return bytes.Compare(a[1:], b[1:])
		}
	case gocql.TypeDouble:
		if len(a) == 8 && len(b) == 8 {
			return cmpFloat(math.Float64frombits(binary.BigEndian.Uint64(a)), math.Float64frombits(binary.BigEndian.Uint64(b)))
		}
	case gocql.TypeFloat:
		if len(a) == 4 && len(b) == 4 {
			return cmpFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(a))), float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
		}
	case gocql.TypeVarint:
		if len(a) > 0 && len(b) > 0 {
			var x, y big.Int
			if gocql.Unmarshal(t.info, a, &x) == nil && gocql.Unmarshal(t.info, b, &y) == nil {
				return x.Cmp(&y)
			}
		}
	case gocql.TypeDecimal:
		if len(a) > 4 && len(b) > 4 {
			var x, y inf.Dec
			if gocql.Unmarshal(t.info, a, &x) == nil && gocql.Unmarshal(t.info, b, &y) == nil {
				return x.Cmp(&y)
			}
		}
	case gocql.TypeTimeUUID:
		if len(a) == 16 && len(b) == 16 {
			if c := cmpUint64(uuidTime(a), uuidTime(b)); c != 0 {
				return c
			}
		}
	case gocql.TypeUUID:
		if len(a) == 16 && len(b) == 16 {
			va, vb := a[6]>>4, b[6]>>4
			if va != vb {
				return cmpUint64(uint64(va), uint64(vb))
			}
			if va == 1 {
				if c := cmpUint64(uuidTime(a), uuidTime(b)); c != 0 {
					return c
				}
			}
		}
	}
	return bytes.Compare(a, b)
}

func uuidTime(u []byte) uint64 {
	return uint64(u[6]&0x0f)<<56 | uint64(u[7])<<48 | uint64(u[4])<<40 | uint64(u[5])<<32 |
		uint64(binary.BigEndian.Uint32(u[0:4]))
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
