package replicate

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
)

// Deletes cannot go through bulkload: they are written as Lindorm SQL statements, one per key,
//
//	DELETE FROM orders WHERE pk1 = 'a1b2u17' AND orderid = 42;
//
// with every primary-key column in an equality. That is the only form every LindormTable version
// accepts: before 2.8.2.26 (and after it unless batch deletion was enabled by Alibaba's support)
// DELETE must name the full primary key with = conditions, one row per statement, so the IN-list
// form ((k1, k2) IN ((..), (..))) is not used. Run a file's statements in order, in batches of at
// most 2,000 (Lindorm's write batch limit), through any MySQL-protocol client.
//
// Literals: VARCHAR/JSON quoted with '' doubling, or X'hex' when the text holds a backslash, a
// control character or bytes that are not UTF-8 (lindorm.AppendString: the file means the same
// under any client's escape rules, NO_BACKSLASH_ESCAPES or not); integers and DECIMAL as text;
// FLOAT/DOUBLE in shortest form; BOOLEAN true/false; TIMESTAMP 'yyyy-mm-dd hh:mm:ss.SSS' and DATE 'yyyy-mm-dd'
// (UTC); VARBINARY X'hex'. Lindorm reads a TIMESTAMP string in the session's time zone, UTC+8 by
// default: every file starts with SET time_zone = '+00:00' (LindormTable 2.7.6 or later), so its
// UTC literals name the right instant whatever the session's default. UNCERTAIN: the X'..' form
// for VARBINARY keys.

// appendLiteral appends v as a SQL literal of column type t.
func appendLiteral(dst []byte, t pipeline.Type, v pipeline.Value) []byte {
	if v.IsNull() {
		return append(dst, "NULL"...)
	}
	switch t {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return lindorm.AppendString(dst, v.String())
	case pipeline.TypeVarbinary:
		return lindorm.AppendHex(dst, v.Str)
	case pipeline.TypeBoolean:
		return strconv.AppendBool(dst, v.Num != 0)
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f := v.Float()
		if v.Kind == pipeline.KindInt {
			f = float64(v.Num)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return lindorm.AppendString(dst, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case pipeline.TypeTimestamp:
		if v.Kind == pipeline.KindInt {
			dst = append(dst, '\'')
			dst = time.UnixMilli(v.Num).UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
			return append(dst, '\'')
		}
	case pipeline.TypeDate:
		if v.Kind == pipeline.KindInt {
			dst = append(dst, '\'')
			dst = time.Unix(v.Num*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
			return append(dst, '\'')
		}
	case pipeline.TypeDecimal:
		if t := v.String(); numeric(t) {
			return append(dst, t...)
		}
	}
	if v.Kind == pipeline.KindText || v.Kind == pipeline.KindBytes || v.Kind == pipeline.KindDecimal && !numeric(v.Str) {
		return lindorm.AppendString(dst, v.Str)
	}
	return v.AppendCanonical(dst)
}

// numeric tells whether s is a bare number literal; any other text of a DECIMAL key is quoted,
// never written as SQL.
func numeric(s string) bool {
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (i == 0 || s[i-1] == 'e' || s[i-1] == 'E')):
		default:
			return false
		}
	}
	return digits
}

// deleteStmt renders the DELETE of one key: the first KeyLen values of row.
type deleteStmt struct {
	prefix []byte   // "DELETE FROM t WHERE "
	cols   [][]byte // "k1 = ", " AND k2 = "
	types  []pipeline.Type
}

func newDeleteStmt(schema pipeline.TargetSchema) *deleteStmt {
	d := &deleteStmt{prefix: []byte("DELETE FROM " + lindorm.Ident(schema.Table) + " WHERE ")}
	for i, c := range schema.Key() {
		sep := ""
		if i > 0 {
			sep = " AND "
		}
		d.cols = append(d.cols, []byte(sep+lindorm.Ident(c.Name)+" = "))
		d.types = append(d.types, c.Type)
	}
	return d
}

func (d *deleteStmt) append(dst []byte, row []pipeline.Value) []byte {
	dst = append(dst, d.prefix...)
	for i, c := range d.cols {
		dst = append(dst, c...)
		dst = appendLiteral(dst, d.types[i], row[i])
	}
	return append(dst, ";\n"...)
}

// appendKey appends a binary encoding of the key (row's first len(key) values, of the key
// columns key) that tells keys apart as the table does (sqlsink.KeyValue: 1.5 and 1.50 in a
// DECIMAL column are one key): kind, then 8 bytes for numbers or a length-prefixed string.
func appendKey(dst []byte, key []pipeline.Column, row []pipeline.Value) []byte {
	for i, col := range key {
		v := sqlsink.KeyValue(col, row[i])
		dst = append(dst, byte(v.Kind))
		switch v.Kind {
		case pipeline.KindNull:
		case pipeline.KindInt, pipeline.KindFloat, pipeline.KindBool:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.Num))
		default:
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.Str)))
			dst = append(dst, v.Str...)
		}
	}
	return dst
}

// deleteHeader is the first lines of a delete file: comments, then the session's time zone.
func deleteHeader(table string, region, partition int, first int64) string {
	return fmt.Sprintf("-- rekey: DELETE statements for table %s, region %d, Kafka partition %d, from offset %d.\n"+
		"-- Run them after bulk-loading the upsert file of the same name, before the next segment's files,\n"+
		"-- in one session: the SET makes its TIMESTAMP literals (UTC) mean the same instant in any session zone.\n"+
		"SET time_zone = '+00:00';\n",
		table, region, partition, first)
}

// ParseDeletes reads back a delete file's keys (the inverse of deleteStmt.append, for `rekey
// verify`): one row of the key columns' values per DELETE statement, in file order, typed as
// pipeline.Value's conventions say for schema's key column types. Comments and the SET line are
// passed over; any other line is an error naming it.
func ParseDeletes(data []byte, schema pipeline.TargetSchema) ([][]pipeline.Value, error) {
	d := newDeleteStmt(schema)
	var out [][]pipeline.Value
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, "SET ") {
			continue
		}
		rest, ok := strings.CutPrefix(line, string(d.prefix))
		if !ok {
			return nil, fmt.Errorf("line %d is not a DELETE from table %s", n+1, schema.Table)
		}
		key := make([]pipeline.Value, len(d.cols))
		for i, c := range d.cols {
			if rest, ok = strings.CutPrefix(rest, string(c)); !ok {
				return nil, fmt.Errorf("line %d: want %q next", n+1, strings.TrimSpace(string(c)))
			}
			var err error
			if key[i], rest, err = parseLiteral(rest, d.types[i]); err != nil {
				return nil, fmt.Errorf("line %d, key column %d: %w", n+1, i+1, err)
			}
		}
		if rest != ";" {
			return nil, fmt.Errorf("line %d: %q after the key", n+1, rest)
		}
		out = append(out, key)
	}
	return out, nil
}

// parseLiteral reads one literal appendLiteral wrote for type t at the start of s.
func parseLiteral(s string, t pipeline.Type) (pipeline.Value, string, error) {
	lit, rest, err := scanLiteral(s)
	if err != nil || lit.null {
		return pipeline.Value{}, rest, err
	}
	v, err := lit.value(t)
	return v, rest, err
}

// literal is a literal's text as scanned: unquoted, unescaped or decoded from hex.
type literal struct {
	text   string
	quoted bool // '..': a timestamp or date in its text form, or a string
	hexed  bool // X'..': bytes
	null   bool
}

// scanLiteral splits the literal at the start of s from the rest: X'..', '..' (a quote inside
// doubled) or a bare word ending at a space or ';'.
func scanLiteral(s string) (literal, string, error) {
	switch {
	case strings.HasPrefix(s, "X'"):
		end := strings.IndexByte(s[2:], '\'')
		if end < 0 {
			return literal{}, s, errors.New("an unclosed X'..' literal")
		}
		b, err := hex.DecodeString(s[2 : 2+end])
		if err != nil {
			return literal{}, s, fmt.Errorf("a hex literal X'..': %w", err)
		}
		return literal{text: string(b), hexed: true}, s[3+end:], nil
	case strings.HasPrefix(s, "'"):
		var sb strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					sb.WriteByte('\'')
					i++
					continue
				}
				break
			}
			sb.WriteByte(s[i])
		}
		if i >= len(s) {
			return literal{}, s, errors.New("an unclosed '..' literal")
		}
		return literal{text: sb.String(), quoted: true}, s[i+1:], nil
	default:
		end := strings.IndexAny(s, " ;")
		if end < 0 {
			end = len(s)
		}
		text := s[:end]
		return literal{text: text, null: text == "NULL"}, s[end:], nil
	}
}

// value is the literal as a value of type t; a type without a text form of its own takes a
// quoted or hex literal as text and a bare one as an integer.
func (l literal) value(t pipeline.Type) (pipeline.Value, error) {
	switch t {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return pipeline.Text(l.text), nil
	case pipeline.TypeVarbinary:
		return pipeline.Bytes(l.text), nil
	case pipeline.TypeBoolean:
		b, err := strconv.ParseBool(l.text)
		return pipeline.Bool(b), err
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f, err := strconv.ParseFloat(l.text, 64)
		return pipeline.Float(f), err
	case pipeline.TypeTimestamp:
		if l.quoted {
			ts, err := parseTime(l.text, "01-02 15:04:05.000")
			return pipeline.Int(ts.UnixMilli()), err
		}
	case pipeline.TypeDate:
		if l.quoted {
			d, err := parseTime(l.text, "01-02")
			return pipeline.Int(d.Unix() / 86400), err
		}
	case pipeline.TypeDecimal:
		return pipeline.Decimal(l.text), nil
	}
	if l.quoted || l.hexed {
		return pipeline.Text(l.text), nil
	}
	i, err := strconv.ParseInt(l.text, 10, 64)
	return pipeline.Int(i), err
}

// parseTime reads a time appendLiteral wrote, in UTC: a year (of four digits, more, or negative:
// 10000, -0001, as Go's time formatting writes it), '-', then the rest in layout.
func parseTime(s, layout string) (time.Time, error) {
	i := strings.IndexByte(s[min(1, len(s)):], '-') + 1 // past a year's sign
	if i <= 0 {
		return time.Time{}, fmt.Errorf("%q is not a time (yyyy-%s)", s, layout)
	}
	y, err := strconv.Atoi(s[:i])
	if err != nil || i < 4 {
		return time.Time{}, fmt.Errorf("%q is not a time (yyyy-%s)", s, layout)
	}
	t, err := time.Parse(layout, s[i+1:]) // in year 0, a leap year: February 29 parses
	if err != nil {
		return time.Time{}, err
	}
	out := time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	if out.Day() != t.Day() {
		return time.Time{}, fmt.Errorf("%q is not a time: no February 29 in %d", s, y)
	}
	return out, nil
}
