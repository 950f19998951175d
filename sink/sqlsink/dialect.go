package sqlsink

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/sqlsink/sqldialect"
)

// Dialect is a SQL target (sqldialect): the package builds statements and checks tables only
// through it, never asking which target it has. The two built in (sink/sqltargets) differ so:
//
//	              Lindorm (lindorm://)                        MySQL, MariaDB (mysql://)
//	upsert        UPSERT INTO t (c..) VALUES (..),(..)        INSERT INTO t (c..) VALUES (..),(..)
//	                                                          ON DUPLICATE KEY UPDATE c=VALUES(c),..
//	delete        DELETE FROM t WHERE k1=.. AND k2=..         DELETE FROM t WHERE (k1,k2) IN ((..),(..))
//	              one key per statement (lindormsql)
//	multi-get     SELECT c.. FROM t WHERE (k1=.. AND k2=..)   SELECT c.. FROM t WHERE (k1,k2) IN ((..),..)
//	              OR (..)   (k IN (..) for one key column)
//	FLOAT read    f                                           `f` + 0e0 (mysqlsql)
//	schema        DESCRIBE t                                  information_schema.COLUMNS + STATISTICS
//	identifiers   bare when plain, `quoted` otherwise         always `quoted`
//
// Why each differs is with its value (lindormsql, mysqlsql).
//
// Statements carry their values as literals rather than placeholders: go-sql-driver's client-side
// interpolation writes bytes as _binary'..', a MySQL introducer Lindorm does not document, and
// server-side prepares cost a round trip per statement shape; literals also cost no allocation
// per value. Literals: VARCHAR/JSON quoted with backslash escapes (every MySQL connection sets
// its sql_mode without NO_BACKSLASH_ESCAPES when it opens, so a server whose mode changes under
// a run cannot change what a literal means; Lindorm's sessions take them by default); integers;
// DOUBLE in shortest round-trip form, FLOAT as the shortest form of its exact double (what a
// FLOAT column compares as); DECIMAL at the column's scale; BOOLEAN TRUE/FALSE; TIMESTAMP
// 'yyyy-mm-dd hh:mm:ss.SSS' and DATE 'yyyy-mm-dd' in UTC, read by the session in UTC because
// every connection sets time_zone='+00:00'; VARBINARY X'hex'.
type Dialect = sqldialect.Dialect

// statements holds a table's fixed statement pieces.
type statements struct {
	d           *Dialect
	schema      pipeline.TargetSchema
	full        upsertShape // every column
	deleteHead  string      // "DELETE FROM t WHERE (k1, k2) IN (" or "DELETE FROM t WHERE "
	selectHead  string      // "SELECT a, b FROM t WHERE "
	deleteWhere string      // "DELETE FROM t WHERE " (a range)
	keySelect   string      // "SELECT k1, k2 FROM t WHERE " (a range's keys)
	keyOrder    string      // " ORDER BY k1, k2 DESC"
	scanTail    string      // " ORDER BY k1, k2 DESC LIMIT 2000" (a page of a scan)
	keyEq       []string
	keyList     string // "(k1, k2)" or "k1"
	allNull     string // " AND c1 IS NULL AND c2 IS NULL": a row that holds nothing but its key
}

func newStatements(d *Dialect, schema pipeline.TargetSchema) *statements {
	s := &statements{d: d, schema: schema}
	t := d.Ident(schema.Table)
	cols := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		cols[i] = d.Ident(c.Name)
	}
	keys := cols[:schema.KeyLen]
	s.full = s.upsertShape(nil)
	s.keyList = keys[0]
	if len(keys) > 1 {
		s.keyList = "(" + strings.Join(keys, ", ") + ")"
	}
	if d.BatchDeletes {
		s.deleteHead = "DELETE FROM " + t + " WHERE " + s.keyList + " IN ("
	} else {
		s.deleteHead = "DELETE FROM " + t + " WHERE "
	}
	for i, k := range keys {
		sep := ""
		if i > 0 {
			sep = " AND "
		}
		s.keyEq = append(s.keyEq, sep+k+"=")
	}
	read := make([]string, len(cols))
	for i, c := range schema.Columns {
		read[i] = cols[i]
		if c.Type == pipeline.TypeFloat {
			read[i] += d.FloatRead
		}
	}
	s.selectHead = "SELECT " + strings.Join(read, ", ") + " FROM " + t + " WHERE "
	s.deleteWhere = "DELETE FROM " + t + " WHERE "
	s.keySelect = "SELECT " + strings.Join(read[:schema.KeyLen], ", ") + " FROM " + t + " WHERE "
	for _, c := range cols[schema.KeyLen:] {
		s.allNull += " AND " + c + " IS NULL"
	}
	order := make([]string, len(keys))
	for i, k := range keys {
		order[i] = k
		if schema.Columns[i].Desc {
			order[i] += " DESC"
		}
	}
	s.keyOrder = " ORDER BY " + strings.Join(order, ", ")
	s.scanTail = s.keyOrder + " LIMIT " + strconv.Itoa(ScanPage)
	return s
}

// keySchema is the schema of the key columns alone.
func (s *statements) keySchema() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: s.schema.Table, KeyLen: s.schema.KeyLen, Columns: s.schema.Columns[:s.schema.KeyLen]}
}

// appendRangeCond appends the condition of a key range: "k1=.. AND (bound) AND (bound)". A bound
// on (c1, c2) compares as a tuple, written out so that every engine takes it: (c1 > v1 OR (c1 =
// v1 AND c2 >= v2)) for an inclusive start; a DESC column compares the other way.
func (s *statements) appendRangeCond(dst []byte, kr *pipeline.KeyRange) ([]byte, *pipeline.RowError) {
	var rerr *pipeline.RowError
	n := len(kr.Prefix)
	and := false
	for i, v := range kr.Prefix {
		if and {
			dst = append(dst, " AND "...)
		}
		and = true
		dst = append(dst, s.d.Ident(s.schema.Columns[i].Name)+"="...)
		if dst, rerr = s.appendLiteral(dst, s.schema.Columns[i], v); rerr != nil {
			return dst, rerr
		}
	}
	for _, b := range []struct {
		kb    *pipeline.KeyBound
		after bool // the start: rows after the bound
	}{{&kr.Start, true}, {&kr.End, false}} {
		if len(b.kb.Vals) == 0 {
			continue
		}
		if and {
			dst = append(dst, " AND "...)
		}
		and = true
		dst = append(dst, '(')
		for i := range b.kb.Vals {
			if i > 0 {
				dst = append(dst, " OR "...)
			}
			dst = append(dst, '(')
			for j := 0; j <= i; j++ {
				col := s.schema.Columns[n+j]
				if j > 0 {
					dst = append(dst, " AND "...)
				}
				dst = append(dst, s.d.Ident(col.Name)...)
				switch {
				case j < i:
					dst = append(dst, '=')
				case b.after != col.Desc:
					dst = append(dst, '>')
				default:
					dst = append(dst, '<')
				}
				if j == len(b.kb.Vals)-1 && b.kb.Inclusive {
					dst = append(dst, '=')
				}
				if dst, rerr = s.appendLiteral(dst, col, b.kb.Vals[j]); rerr != nil {
					return dst, rerr
				}
			}
			dst = append(dst, ')')
		}
		dst = append(dst, ')')
	}
	if !and {
		dst = append(dst, "TRUE"...)
	}
	return dst, nil
}

// upsertShape is the text around an upsert's row tuples.
type upsertShape struct {
	head string // "UPSERT INTO t (a, b) VALUES "
	tail string // "" or " ON DUPLICATE KEY UPDATE b=VALUES(b)"
}

// upsertShape renders the upsert of the key columns and the columns set names (nil: every
// column). The columns it does not name keep their values: Lindorm's UPSERT writes the named
// columns only, and MySQL's ON DUPLICATE KEY UPDATE updates the ones it lists.
func (s *statements) upsertShape(set []bool) upsertShape {
	d := s.d
	var cols, upd []string
	for i, c := range s.schema.Columns {
		if i < s.schema.KeyLen || set == nil || set[i] {
			cols = append(cols, d.Ident(c.Name))
		}
	}
	keys := cols[:s.schema.KeyLen]
	sh := upsertShape{head: d.UpsertVerb + d.Ident(s.schema.Table) + " (" + strings.Join(cols, ", ") + ") VALUES "}
	if d.OnDuplicate {
		upd = cols[s.schema.KeyLen:]
		if len(upd) == 0 {
			upd = keys // key columns only: the update is a no-op that keeps the row
		}
		parts := make([]string, len(upd))
		for i, c := range upd {
			parts[i] = c + "=VALUES(" + c + ")"
		}
		sh.tail = " ON DUPLICATE KEY UPDATE " + strings.Join(parts, ", ")
	}
	return sh
}

// appendPartialRow appends "(k1, .., v)" for the key columns and the columns set names.
func (s *statements) appendPartialRow(dst []byte, row []pipeline.Value, set []bool) ([]byte, *pipeline.RowError) {
	dst = append(dst, '(')
	first := true
	for i := range s.schema.Columns {
		if i >= s.schema.KeyLen && !set[i] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var err *pipeline.RowError
		if dst, err = s.appendLiteral(dst, s.schema.Columns[i], row[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ')'), nil
}

// appendRow appends "(v1, v2, ...)" for a whole row, or the reject of the first value that has
// no literal of its column's type (files' rules: the same values are refused as by the files).
func (s *statements) appendRow(dst []byte, row []pipeline.Value) ([]byte, *pipeline.RowError) {
	dst = append(dst, '(')
	for i := range s.schema.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err *pipeline.RowError
		if dst, err = s.appendLiteral(dst, s.schema.Columns[i], row[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ')'), nil
}

// appendKeyTuple appends the key for an IN list: "(k1, k2)" or "k1".
func (s *statements) appendKeyTuple(dst []byte, row []pipeline.Value) ([]byte, *pipeline.RowError) {
	n := s.schema.KeyLen
	if n > 1 {
		dst = append(dst, '(')
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err *pipeline.RowError
		if dst, err = s.appendLiteral(dst, s.schema.Columns[i], row[i]); err != nil {
			return dst, err
		}
	}
	if n > 1 {
		dst = append(dst, ')')
	}
	return dst, nil
}

// appendKeyEq appends "k1=.. AND k2=..".
func (s *statements) appendKeyEq(dst []byte, row []pipeline.Value) ([]byte, *pipeline.RowError) {
	for i, eq := range s.keyEq {
		dst = append(dst, eq...)
		var err *pipeline.RowError
		if dst, err = s.appendLiteral(dst, s.schema.Columns[i], row[i]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// cellTimestamp puts Lindorm's _l_ts_ hint after a statement's verb (UPSERT, DELETE): the cells
// it writes, or its delete marker, carry the timestamp ms instead of the server's time. Lindorm
// takes a hint only right after the verb, and as text (not in a prepared statement).
func cellTimestamp(stmt string, ms int64) string {
	verb, rest, _ := strings.Cut(stmt, " ")
	return verb + " /*+ _l_ts_(" + strconv.FormatInt(ms, 10) + ") */ " + rest
}

// upsert renders one upsert statement of the rendered row tuples.
func (s *statements) upsert(dst []byte, sh *upsertShape, tuples [][]byte) []byte {
	dst = append(dst, sh.head...)
	for i, t := range tuples {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, t...)
	}
	return append(dst, sh.tail...)
}

// deletes renders the DELETE statements of the rendered keys (tuples for BatchDeletes, "k1=..
// AND k2=.." otherwise): one statement, or one per key.
func (s *statements) deletes(keys [][]byte) []string {
	if !s.d.BatchDeletes {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = s.deleteHead + string(k)
		}
		return out
	}
	var b strings.Builder
	b.WriteString(s.deleteHead)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k)
	}
	b.WriteByte(')')
	return []string{b.String()}
}

// lookup renders the multi-get of rendered keys (tuples for the row-IN form, "k1=.. AND k2=.."
// otherwise).
func (s *statements) lookup(keys [][]byte) string {
	var b strings.Builder
	b.WriteString(s.selectHead)
	switch {
	case s.d.RowIn || s.schema.KeyLen == 1:
		b.WriteString(s.keyList)
		b.WriteString(" IN (")
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(k)
		}
		b.WriteByte(')')
	default:
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteByte('(')
			b.Write(k)
			b.WriteByte(')')
		}
	}
	return b.String()
}

// lookupKeyForm tells which key rendering lookup wants: tuples (true) or equalities.
func (s *statements) lookupKeyForm() bool { return s.d.RowIn || s.schema.KeyLen == 1 }

// appendLiteral appends v as a literal of col's type. Values are checked with the files'
// converters, so a value is refused here exactly when a bulk-load file would refuse it.
func (s *statements) appendLiteral(dst []byte, col pipeline.Column, v pipeline.Value) ([]byte, *pipeline.RowError) {
	if v.IsNull() {
		if col.IsKey() {
			return dst, files.NullKeyError(col)
		}
		return append(dst, "NULL"...), nil
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		t, err := files.TextValue(col, v)
		if err != nil {
			return dst, err
		}
		return s.appendQuoted(dst, t), nil
	case pipeline.TypeVarbinary:
		t, err := files.TextValue(col, v)
		if err != nil {
			return dst, err
		}
		dst = append(dst, "X'"...)
		for i := 0; i < len(t); i++ {
			dst = append(dst, hexDigits[t[i]>>4], hexDigits[t[i]&0xf])
		}
		return append(dst, '\''), nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint:
		i, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		return strconv.AppendInt(dst, i, 10), nil
	case pipeline.TypeTimestamp:
		ms, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '\'')
		dst = time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
		return append(dst, '\''), nil
	case pipeline.TypeDate:
		days, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '\'')
		dst = time.Unix(days*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
		return append(dst, '\''), nil
	case pipeline.TypeBoolean:
		b, err := files.BoolValue(col, v)
		if err != nil {
			return dst, err
		}
		if b {
			return append(dst, "TRUE"...), nil
		}
		return append(dst, "FALSE"...), nil
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f, err := files.FloatValue(col, v)
		if err != nil {
			return dst, err
		}
		if err := refusedFloat(col, f); err != nil {
			return dst, err
		}
		if col.Type == pipeline.TypeFloat {
			// the stored float's exact double (0.1 as 0.10000000149011612), not its shortest
			// float form: MySQL and MariaDB compare a FLOAT column with a literal as doubles, so
			// a key written short matched no row (a delete or a lookup by key found nothing),
			// and the largest FLOAT's shortest form, 3.4028235e+38, is out of range as a double;
			// stored into a FLOAT, the exact double is the same float
			f = float64(float32(f))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
	case pipeline.TypeDecimal:
		d, err := files.DecimalValue(col, v)
		if err != nil {
			return dst, err
		}
		return d.AppendText(dst, col.Scale), nil
	}
	return dst, files.TypeError(col, "unsupported column type %s", col.Type)
}

// refusedFloat refuses a NaN or infinite FLOAT or DOUBLE, which has no SQL literal.
func refusedFloat(col pipeline.Column, f float64) *pipeline.RowError {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return &pipeline.RowError{Code: CodeTargetRefused, Field: col.Name,
			Message: strconv.FormatFloat(f, 'g', -1, 64) + " has no SQL literal: a " + col.Type.String() + " column over SQL takes finite numbers only"}
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends a string literal with backslash escapes: the characters MySQL's own
// client library escapes are escaped (the session takes backslash escapes: see driverConfig).
func (s *statements) appendQuoted(dst []byte, t string) []byte {
	dst = append(dst, '\'')
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case 0:
			dst = append(dst, '\\', '0')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case 0x1a:
			dst = append(dst, '\\', 'Z')
		case '\'', '"', '\\':
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '\'')
}

// ValueChecker refuses a row the sink refuses before sending it: a NaN or infinite FLOAT or
// DOUBLE has no SQL literal (target_refused; the transform has given every other value its
// column's type already). verify asks it so as to count such a row as a reject rather than look
// for it; replicate asks it of an update that moves its row to another key before the old key's
// delete, which applied alone would take the row out of the table.
type ValueChecker struct{}

// CheckValues implements files.ValueChecker.
func (ValueChecker) CheckValues(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError {
	for i, c := range schema.Columns {
		if (c.Type != pipeline.TypeFloat && c.Type != pipeline.TypeDouble) || values[i].IsNull() {
			continue
		}
		if f, err := files.FloatValue(c, values[i]); err == nil {
			if err := refusedFloat(c, f); err != nil {
				return err
			}
		}
	}
	return nil
}
