// Package cqlvalue turns text and JSON values into pipeline.Values by their declared CQL type.
// The file source uses ParseText for CSV fields and FromJSON for JSON Lines members; the Kafka
// JSON source uses FromJSON. The representation follows pipeline.Value's Kind documentation.
package cqlvalue

import (
	"fmt"
	"strings"
)

// Kind is a CQL type without its parameters.
type Kind uint8

const (
	Invalid Kind = iota
	Text         // text and its alias varchar
	Ascii
	Bigint
	Int
	Smallint
	Tinyint
	Varint
	Boolean
	Float
	Double
	Decimal
	Timestamp
	Date
	UUID
	TimeUUID
	Blob
	Inet
	List
	Set
	Map
	Tuple
)

var kindNames = [...]string{"invalid", "text", "ascii", "bigint", "int", "smallint", "tinyint",
	"varint", "boolean", "float", "double", "decimal", "timestamp", "date", "uuid", "timeuuid",
	"blob", "inet", "list", "set", "map", "tuple"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// IsCollection tells whether k is list, set or map.
func (k Kind) IsCollection() bool { return k == List || k == Set || k == Map }

// IsJSON tells whether values of kind k are held as canonical JSON text: collections and tuples.
func (k Kind) IsJSON() bool { return k.IsCollection() || k == Tuple }

// Type is a parsed CQL type. The zero Type is invalid.
type Type struct {
	Kind   Kind
	Frozen bool     // written as frozen<...>; does not change how values parse
	unit   TimeUnit // timestamp: how an integer is read (see TimeUnit)
	params []Type   // list, set: the element; map: key, value
}

// TimeUnit says how an integer in a timestamp column is read. CQL has no such notion: rekey
// writes it after the type, "timestamp(s)", when the mapping sets source.timestamp_unit, so that
// the unit travels with the column's type to every source that parses values.
type TimeUnit uint8

const (
	// UnitAuto reads epoch milliseconds, but rejects integers that are far more likely another
	// unit: 0 < |v| < 1e11 (epoch seconds up to the year 5138; as milliseconds, before
	// 1973-03-03) and |v| >= 1e14 (epoch microseconds or nanoseconds; as milliseconds, after
	// the year 5138). 0 is the same instant in every unit and is accepted.
	UnitAuto    TimeUnit = iota
	UnitSeconds          // epoch seconds, exact
	UnitMillis           // epoch milliseconds, any value (Cassandra's own representation)
	UnitMicros           // epoch microseconds; a value that is not a whole millisecond is an error
	UnitNanos            // epoch nanoseconds; a value that is not a whole millisecond is an error
)

var unitNames = [...]string{"", "s", "ms", "us", "ns"}

// String is the unit's name in mappings: "s", "ms", "us", "ns" ("" for UnitAuto).
func (u TimeUnit) String() string {
	if int(u) < len(unitNames) {
		return unitNames[u]
	}
	return fmt.Sprintf("unit(%d)", int(u))
}

// ParseTimeUnit reads s, ms, us or ns.
func ParseTimeUnit(s string) (TimeUnit, bool) {
	for i := UnitSeconds; int(i) < len(unitNames); i++ {
		if unitNames[i] == s {
			return i, true
		}
	}
	return UnitAuto, false
}

// Unit is the time unit of a timestamp type (UnitAuto when none was given).
func (t Type) Unit() TimeUnit { return t.unit }

// WithTimestampUnit returns t with unit u on every timestamp inside it that has none
// ("map<text, timestamp>" -> "map<text, timestamp(s)>").
func (t Type) WithTimestampUnit(u TimeUnit) Type {
	if t.Kind == Timestamp && t.unit == UnitAuto {
		t.unit = u
	}
	if len(t.params) > 0 {
		ps := make([]Type, len(t.params))
		for i, p := range t.params {
			ps[i] = p.WithTimestampUnit(u)
		}
		t.params = ps
	}
	return t
}

// Supported lists the CQL types ParseType accepts, for error messages and help texts.
const Supported = "text, varchar, ascii, bigint, int, smallint, tinyint, varint, boolean, float, " +
	"double, decimal, timestamp, date, uuid, timeuuid, blob, inet, list<T>, set<T>, map<K, V>, tuple<T, ...>, frozen<...>"

var scalarNames = map[string]Kind{
	"text": Text, "varchar": Text, "ascii": Ascii, "bigint": Bigint, "int": Int,
	"smallint": Smallint, "tinyint": Tinyint, "varint": Varint, "boolean": Boolean,
	"float": Float, "double": Double, "decimal": Decimal, "timestamp": Timestamp, "date": Date,
	"uuid": UUID, "timeuuid": TimeUUID, "blob": Blob, "inet": Inet,
}

// Scalar returns the parameterless type of kind k (not list, set or map).
func Scalar(k Kind) Type { return Type{Kind: k} }

// ListOf, SetOf and MapOf build collection types.
func ListOf(elem Type) Type    { return Type{Kind: List, params: []Type{elem}} }
func SetOf(elem Type) Type     { return Type{Kind: Set, params: []Type{elem}} }
func MapOf(key, val Type) Type { return Type{Kind: Map, params: []Type{key, val}} }
func (t Type) Elem() Type      { return t.param(0) }

// Fields are a tuple's element types.
func (t Type) Fields() []Type { return t.params }
func (t Type) Key() Type      { return t.param(0) }
func (t Type) Value() Type    { return t.param(1) }
func (t Type) param(i int) Type {
	if i < len(t.params) {
		return t.params[i]
	}
	return Type{}
}

// String is the canonical lowercase CQL spelling: "text", "map<text, frozen<list<int>>>".
// varchar is spelled text; a timestamp's unit follows it in parentheses: "timestamp(s)".
func (t Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t Type) write(b *strings.Builder) {
	if t.Frozen {
		b.WriteString("frozen<")
	}
	b.WriteString(t.Kind.String())
	if t.unit != UnitAuto {
		b.WriteString("(" + t.unit.String() + ")")
	}
	if len(t.params) > 0 {
		b.WriteByte('<')
		for i, p := range t.params {
			if i > 0 {
				b.WriteString(", ")
			}
			p.write(b)
		}
		b.WriteByte('>')
	}
	if t.Frozen {
		b.WriteByte('>')
	}
}

// Equal tells whether two types are the same CQL type (varchar and text are the same). Time
// units are not part of the CQL type and are ignored.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind || t.Frozen != o.Frozen || len(t.params) != len(o.params) {
		return false
	}
	for i := range t.params {
		if !t.params[i].Equal(o.params[i]) {
			return false
		}
	}
	return true
}

// ParseType reads a CQL type such as "bigint", "VARCHAR" or "map<text, frozen<list<int>>>".
// Case is ignored and spaces are tolerated. A timestamp may carry its time unit:
// "timestamp(s)", "list<timestamp(us)>" (see TimeUnit).
func ParseType(s string) (Type, error) {
	p := typeParser{s: strings.ToLower(s)}
	t, err := p.parse(0)
	if err == nil {
		p.ws()
		if p.i != len(p.s) {
			err = fmt.Errorf("unexpected %q", p.s[p.i:])
		}
	}
	if err != nil {
		return Type{}, fmt.Errorf("CQL type %q: %w (supported: %s)", s, err, Supported)
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *typeParser) expect(c byte) error {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q at position %d", c, p.i)
	}
	p.i++
	return nil
}

func (p *typeParser) parse(depth int) (Type, error) {
	if depth > 32 {
		return Type{}, fmt.Errorf("type nested too deeply")
	}
	p.ws()
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '_') {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return Type{}, fmt.Errorf("expected a type name at position %d", start)
	}
	if k, ok := scalarNames[name]; ok {
		t := Type{Kind: k}
		if p.ws(); k == Timestamp && p.i < len(p.s) && p.s[p.i] == '(' {
			end := strings.IndexByte(p.s[p.i:], ')')
			if end < 0 {
				return Type{}, fmt.Errorf("expected ')' after the time unit at position %d", p.i)
			}
			u, ok := ParseTimeUnit(strings.TrimSpace(p.s[p.i+1 : p.i+end]))
			if !ok {
				return Type{}, fmt.Errorf("unknown time unit %q (want s, ms, us or ns)", p.s[p.i+1:p.i+end])
			}
			t.unit = u
			p.i += end + 1
		}
		return t, nil
	}
	var nparams int
	var t Type
	switch name {
	case "frozen":
		if err := p.expect('<'); err != nil {
			return Type{}, err
		}
		inner, err := p.parse(depth + 1)
		if err != nil {
			return Type{}, err
		}
		if err := p.expect('>'); err != nil {
			return Type{}, err
		}
		if inner.Kind == Tuple { // a tuple is always frozen: Cassandra prints it either way
			return inner, nil
		}
		if !inner.Kind.IsCollection() {
			return Type{}, fmt.Errorf("frozen<%s>: only collections and tuples can be frozen", inner)
		}
		inner.Frozen = true
		return inner, nil
	case "list":
		t, nparams = Type{Kind: List}, 1
	case "set":
		t, nparams = Type{Kind: Set}, 1
	case "map":
		t, nparams = Type{Kind: Map}, 2
	case "tuple":
		t, nparams = Type{Kind: Tuple}, -1 // one or more
	default:
		return Type{}, fmt.Errorf("unknown type %q", name)
	}
	if err := p.expect('<'); err != nil {
		return Type{}, err
	}
	for i := 0; i < nparams || nparams < 0; i++ {
		if i > 0 {
			if p.ws(); nparams < 0 && p.i < len(p.s) && p.s[p.i] == '>' {
				break
			}
			if err := p.expect(','); err != nil {
				return Type{}, err
			}
		}
		e, err := p.parse(depth + 1)
		if err != nil {
			return Type{}, err
		}
		t.params = append(t.params, e)
	}
	if err := p.expect('>'); err != nil {
		return Type{}, err
	}
	return t, nil
}
