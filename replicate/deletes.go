package replicate

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
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
		return lindorm.AppendHex(dst, v.S)
	case pipeline.TypeBoolean:
		return strconv.AppendBool(dst, v.I != 0)
	case pipeline.TypeFloat, pipeline.TypeDouble:
		f := v.Float()
		if v.K == pipeline.KindInt {
			f = float64(v.I)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return lindorm.AppendString(dst, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case pipeline.TypeTimestamp:
		if v.K == pipeline.KindInt {
			dst = append(dst, '\'')
			dst = time.UnixMilli(v.I).UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
			return append(dst, '\'')
		}
	case pipeline.TypeDate:
		if v.K == pipeline.KindInt {
			dst = append(dst, '\'')
			dst = time.Unix(v.I*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
			return append(dst, '\'')
		}
	case pipeline.TypeDecimal:
		if t := v.String(); numeric(t) {
			return append(dst, t...)
		}
	}
	if v.K == pipeline.KindText || v.K == pipeline.KindBytes || v.K == pipeline.KindDecimal && !numeric(v.S) {
		return lindorm.AppendString(dst, v.S)
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

// appendKey appends a binary encoding of the key (the first n values) that tells keys apart:
// kind, then 8 bytes for numbers or a length-prefixed string.
func appendKey(dst []byte, row []pipeline.Value, n int) []byte {
	for _, v := range row[:n] {
		dst = append(dst, byte(v.K))
		switch v.K {
		case pipeline.KindNull:
		case pipeline.KindInt, pipeline.KindFloat, pipeline.KindBool:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.I))
		default:
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.S)))
			dst = append(dst, v.S...)
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
