package pipeline

import (
	"fmt"
	"strings"
)

// SourceColumn is one column as the source declares it (a mapping's source.columns, a Cassandra
// table's schema): its name and its type in the mapping's type language, whose names are
// Cassandra's ("text", "bigint", "list<int>", "map<text, frozen<list<int>>>"), lowercased.
type SourceColumn struct {
	Name string
	Type string
}

// SourceSchema is the ordered list of source columns; Record.Values follow this order.
type SourceSchema []SourceColumn

// Index returns the position of the named column, or -1.
func (s SourceSchema) Index(name string) int {
	for i, c := range s {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Names lists the column names in order.
func (s SourceSchema) Names() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

// Type is a Lindorm SQL column type.
type Type uint8

const (
	TypeInvalid Type = iota
	TypeVarchar
	TypeBigint
	TypeInteger
	TypeSmallint
	TypeTinyint
	TypeBoolean
	TypeFloat
	TypeDouble
	TypeDecimal
	TypeTimestamp // stored as epoch milliseconds
	TypeDate      // stored as days since 1970-01-01
	TypeVarbinary // only as the last primary-key column
	TypeJSON      // never in a primary key
)

var typeNames = [...]string{"INVALID", "VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT",
	"BOOLEAN", "FLOAT", "DOUBLE", "DECIMAL", "TIMESTAMP", "DATE", "VARBINARY", "JSON"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("TYPE(%d)", int(t))
}

// FixedSize is the stored size in bytes of a value of a fixed-width type, 0 for the types whose
// values vary in length (VARCHAR, DECIMAL, VARBINARY, JSON).
func (t Type) FixedSize() int {
	switch t {
	case TypeBigint, TypeTimestamp, TypeDouble:
		return 8
	case TypeInteger, TypeFloat, TypeDate:
		return 4
	case TypeSmallint:
		return 2
	case TypeTinyint, TypeBoolean:
		return 1
	}
	return 0
}

// ParseType reads a Lindorm type name such as "BIGINT", "varchar" or "DECIMAL(20,4)". For
// DECIMAL it also returns precision and scale (38,18 when not written); INT is INTEGER.
func ParseType(s string) (t Type, precision, scale int, err error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if strings.HasPrefix(u, "DECIMAL") {
		rest := strings.TrimSpace(u[len("DECIMAL"):])
		if rest == "" {
			return TypeDecimal, 38, 18, nil
		}
		if _, err := fmt.Sscanf(rest, "(%d,%d)", &precision, &scale); err != nil {
			if _, err2 := fmt.Sscanf(strings.ReplaceAll(rest, " ", ""), "(%d,%d)", &precision, &scale); err2 != nil {
				return 0, 0, 0, fmt.Errorf("type %q: want DECIMAL(precision,scale)", s)
			}
		}
		if precision < 1 || precision > 38 || scale < 0 || scale > precision {
			return 0, 0, 0, fmt.Errorf("type %q: precision must be 1..38 and scale 0..precision", s)
		}
		return TypeDecimal, precision, scale, nil
	}
	if u == "INT" {
		return TypeInteger, 0, 0, nil
	}
	if u == "STRING" || u == "TEXT" {
		return TypeVarchar, 0, 0, nil
	}
	for i, n := range typeNames {
		if i > 0 && n == u {
			return Type(i), 0, 0, nil
		}
	}
	// Lindorm types rekey does not write, and the one that holds their values
	base, _, _ := strings.Cut(u, "(")
	if to, ok := unwrittenTypes[strings.TrimSpace(base)]; ok {
		return 0, 0, 0, fmt.Errorf("%s is a Lindorm type rekey does not write: cast to %s", strings.TrimSpace(s), to)
	}
	return 0, 0, 0, fmt.Errorf("unknown Lindorm type %q (want one of VARCHAR, BIGINT, INTEGER, SMALLINT, TINYINT, BOOLEAN, FLOAT, DOUBLE, DECIMAL(p,s), TIMESTAMP, DATE, VARBINARY, JSON)", s)
}

// unwrittenTypes are Lindorm's types rekey does not write, with the type to cast to instead.
var unwrittenTypes = map[string]string{
	"CHAR":    "VARCHAR (a CHAR(n) column is text of n characters)",
	"VARCHAR": "VARCHAR, without a length",
	"BINARY":  "VARBINARY (a BINARY(n) column is n bytes)",
	"TIME":    "BIGINT (a time of day as its nanoseconds, as a CQL time) or VARCHAR",
}

// Column is one target column of the Lindorm table.
type Column struct {
	Name      string
	Type      Type
	Precision int // DECIMAL only
	Scale     int // DECIMAL only
	KeyPos    int // position in the primary key (0-based), or -1 for a non-key column
	Desc      bool
}

// SQLType is the column type as written in Lindorm DDL.
func (c Column) SQLType() string {
	if c.Type == TypeDecimal {
		return fmt.Sprintf("DECIMAL(%d,%d)", c.Precision, c.Scale)
	}
	return c.Type.String()
}

// IsKey tells whether the column is part of the primary key.
func (c Column) IsKey() bool { return c.KeyPos >= 0 }

// TargetSchema is the ordered list of target columns: the primary-key columns first, in key
// order, then the other columns. Row.Values follow this order.
type TargetSchema struct {
	Table   string
	Columns []Column
	KeyLen  int // the first KeyLen columns are the primary key
}

// Key returns the primary-key columns.
func (s TargetSchema) Key() []Column { return s.Columns[:s.KeyLen] }

// CompareKeys orders two rows by the full primary key as the table stores them, DESC columns
// reversed.
func (s TargetSchema) CompareKeys(a, b []Value) int {
	for k := 0; k < s.KeyLen; k++ {
		col := &s.Columns[k]
		if c := Compare(col.Type, a[k], b[k]); c != 0 {
			if col.Desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// Index returns the position of the named column, or -1.
func (s TargetSchema) Index(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// NormalizeSourceType puts a source column's type (SourceColumn.Type) in a canonical form for
// comparisons: lowercase, no blanks, no frozen<...> wrappers, varchar as text
// ("Map<Text, frozen<list<int>>>" -> "map<text,list<int>>").
func NormalizeSourceType(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), ""))
	for {
		i := strings.Index(s, "frozen<")
		if i < 0 {
			break
		}
		depth, j := 1, i+len("frozen<") // find the matching '>'
		for ; j < len(s) && depth > 0; j++ {
			switch s[j] {
			case '<':
				depth++
			case '>':
				depth--
			}
		}
		if depth != 0 {
			break
		}
		s = s[:i] + s[i+len("frozen<"):j-1] + s[j:]
	}
	return strings.ReplaceAll(s, "varchar", "text")
}
