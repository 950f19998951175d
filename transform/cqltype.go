package transform

import (
	"strings"

	"github.com/rekey/rekey/pipeline"
)

// colType is a Lindorm column type with DECIMAL's precision and scale.
type colType struct {
	T    pipeline.Type
	P, S int
}

func (c colType) String() string {
	return pipeline.Column{Type: c.T, Precision: c.P, Scale: c.S}.SQLType()
}

var (
	tVarchar   = colType{T: pipeline.TypeVarchar}
	tBigint    = colType{T: pipeline.TypeBigint}
	tInteger   = colType{T: pipeline.TypeInteger}
	tDecimal   = colType{T: pipeline.TypeDecimal, P: 38, S: 18}
	tTimestamp = colType{T: pipeline.TypeTimestamp}
)

// cqlScalar maps CQL scalar types to Lindorm types.
var cqlScalar = map[string]colType{
	"text":      tVarchar,
	"varchar":   tVarchar,
	"ascii":     tVarchar,
	"uuid":      tVarchar,
	"timeuuid":  tVarchar,
	"inet":      tVarchar,
	"duration":  tVarchar,
	"bigint":    tBigint,
	"varint":    tBigint, // a value out of the int64 range is a row error "type"
	"counter":   tBigint,
	"time":      tBigint, // nanoseconds since midnight
	"int":       tInteger,
	"smallint":  {T: pipeline.TypeSmallint},
	"tinyint":   {T: pipeline.TypeTinyint},
	"boolean":   {T: pipeline.TypeBoolean},
	"float":     {T: pipeline.TypeFloat},
	"double":    {T: pipeline.TypeDouble},
	"decimal":   tDecimal,
	"timestamp": tTimestamp,
	"date":      {T: pipeline.TypeDate},
	"blob":      {T: pipeline.TypeVarbinary},
}

// sameCQL tells whether two CQL type spellings mean the same type (varchar is text; frozen and
// spacing do not matter).
func sameCQL(a, b string) bool {
	return pipeline.NormalizeSourceType(a) == pipeline.NormalizeSourceType(b)
}

// checkCQL validates a CQL type spelling as written in a mapping: scalars, list<t>, set<t>,
// map<k,v>, tuple<...>, frozen<t>. It returns a message, or "".
func checkCQL(s string) string {
	n := strings.ToLower(strings.Join(strings.Fields(s), ""))
	if n == "" {
		return "empty CQL type"
	}
	rest, msg := parseCQL(n)
	if msg == "" && rest != "" {
		msg = "unexpected " + rest
	}
	if msg != "" {
		return "bad CQL type " + quoteString(s) + ": " + msg + " (want text, varchar, ascii, bigint, int, smallint, tinyint, varint, boolean, double, float, decimal, timestamp, timestamp(s|ms|us|ns), date, time, uuid, timeuuid, blob, inet, duration, counter, list<..>, set<..>, map<..,..>, tuple<..>)"
	}
	return ""
}

func parseCQL(s string) (rest string, msg string) {
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	name, rest := s[:i], s[i:]
	var nargs int
	switch name {
	case "list", "set", "frozen":
		nargs = 1
	case "map":
		nargs = 2
	case "tuple":
		nargs = -1
	case "":
		return rest, "expected a type name"
	default:
		if _, ok := cqlScalar[name]; !ok {
			return rest, "unknown type " + quoteString(name)
		}
		if name == "timestamp" && strings.HasPrefix(rest, "(") {
			unit, after, ok := strings.Cut(rest[1:], ")")
			if !ok || !validUnit(unit) {
				return rest, "timestamp(unit): want s, ms, us or ns"
			}
			return after, ""
		}
		return rest, ""
	}
	if !strings.HasPrefix(rest, "<") {
		return rest, name + " needs type arguments: " + name + "<...>"
	}
	rest = rest[1:]
	got := 0
	for {
		var m string
		rest, m = parseCQL(rest)
		if m != "" {
			return rest, m
		}
		got++
		if strings.HasPrefix(rest, ",") {
			rest = rest[1:]
			continue
		}
		if strings.HasPrefix(rest, ">") {
			rest = rest[1:]
			break
		}
		return rest, "expected ',' or '>'"
	}
	if nargs > 0 && got != nargs {
		return rest, name + " takes " + map[int]string{1: "one type argument", 2: "two type arguments"}[nargs]
	}
	return rest, ""
}

func validUnit(u string) bool { return u == "s" || u == "ms" || u == "us" || u == "ns" }

// withTimestampUnit writes unit after every timestamp in the CQL type s that has none
// ("map<text, timestamp>" -> "map<text, timestamp(s)>"): the sources read a timestamp's integer
// epochs in the unit its type carries (as the source decodes them).
func withTimestampUnit(s, unit string) string {
	if unit == "" {
		return s
	}
	const ts = "timestamp"
	var b strings.Builder
	for {
		i := strings.Index(s, ts)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(ts)
		b.WriteString(s[:j])
		word := (i == 0 || !isNameByte(s[i-1])) && (j == len(s) || !isNameByte(s[j]))
		if rest := strings.TrimLeft(s[j:], " \t"); word && !strings.HasPrefix(rest, "(") {
			b.WriteString("(" + unit + ")")
		}
		s = s[j:]
	}
}

func isNameByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' }

// lindormType maps a CQL type (as written in the mapping or reported by Cassandra) to the Lindorm
// type of a carried-over column. Collections, tuples and user-defined types become JSON text in a
// VARCHAR column; collection reports whether that happened.
func lindormType(cql string) (t colType, collection bool) {
	n := pipeline.NormalizeSourceType(cql)
	if t, ok := cqlScalar[n]; ok {
		return t, false
	}
	if strings.HasPrefix(n, "timestamp(") { // with its unit
		return tTimestamp, false
	}
	return tVarchar, true
}

// kindOf is the pipeline.Kind a value of a Lindorm type is stored as.
func kindOf(t pipeline.Type) pipeline.Kind {
	switch t {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return pipeline.KindText
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint,
		pipeline.TypeTimestamp, pipeline.TypeDate:
		return pipeline.KindInt
	case pipeline.TypeBoolean:
		return pipeline.KindBool
	case pipeline.TypeFloat, pipeline.TypeDouble:
		return pipeline.KindFloat
	case pipeline.TypeDecimal:
		return pipeline.KindDecimal
	case pipeline.TypeVarbinary:
		return pipeline.KindBytes
	}
	return pipeline.KindNull
}

// isIntegral: values are integers (KindInt) and arithmetic applies (timestamps as epoch ms,
// dates as days).
func isIntegral(t pipeline.Type) bool { return kindOf(t) == pipeline.KindInt }

// convertible tells whether a value of type from can be turned into type to (maybe failing per row).
func convertible(from, to pipeline.Type) bool {
	if from == to {
		return true
	}
	switch to {
	case pipeline.TypeVarchar, pipeline.TypeVarbinary:
		return from != pipeline.TypeInvalid
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint,
		pipeline.TypeTimestamp, pipeline.TypeDate:
		return isIntegral(from) || from == pipeline.TypeVarchar || from == pipeline.TypeDecimal
	case pipeline.TypeFloat, pipeline.TypeDouble, pipeline.TypeDecimal:
		return isIntegral(from) || from == pipeline.TypeVarchar || from == pipeline.TypeDecimal ||
			from == pipeline.TypeFloat || from == pipeline.TypeDouble
	case pipeline.TypeBoolean:
		return from == pipeline.TypeVarchar
	case pipeline.TypeJSON:
		return from == pipeline.TypeVarchar
	}
	return false
}
