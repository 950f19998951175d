// Package csv is the CSV format of the region sink (sink/files): text with a header row, in the
// dialect Spark's CSV reader reads with its default options, since Lindorm's bulkload runs on
// Spark and the job sets only the header, the delimiter and the column types (see sink/lindorm).
// deploy/dev/spark reads every form below back with Spark 4.0.1.
//
// Encoding:
//
//	null                       empty unquoted field            a,,b
//	VARCHAR, JSON              as is; quoted when it holds the delimiter, a quote or a backslash,
//	                           or starts or ends with a space, a tab or another control character
//	                           (<= U+0020: Spark skips a line that is blank to Java's trim, and
//	                           some Spark 3 releases one that begins with U+0000); inside quotes
//	                           a quote is \" and a backslash \\ (Spark's escape character, not
//	                           RFC 4180's "")
//	BIGINT ... TINYINT         decimal
//	TIMESTAMP                  ISO 8601 in UTC with milliseconds: 2024-01-02T03:04:05.678Z (Spark
//	                           parses a number as no timestamp, and text without a zone in the
//	                           session's zone)
//	DATE                       yyyy-mm-dd (proleptic Gregorian, UTC)
//	BOOLEAN                    true / false
//	FLOAT, DOUBLE              shortest round-trip form; NaN, Infinity, -Infinity
//	DECIMAL(p,s)               plain text with exactly s fractional digits ("-12.340")
//
// Lines end with "\n". What Spark's CSV reader cannot read back is refused: an empty string
// (Spark reads "" as null) and a value holding CR or LF (Spark reads a line per record) are
// rejects with code csv_value; a VARBINARY column is refused at the start (CheckSchema: Spark
// reads a binary column as the text's own bytes, so no text form of arbitrary bytes loads back),
// and so is a column whose name holds CR or LF (the header is one line).
//
// Not encoding/csv's Writer: it writes RFC 4180 quotes, and it takes a []string per record where
// this appends typed values to a chunk's buffer.
package csv

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// Format writes CSV files.
type Format struct {
	delim byte
}

// New returns the CSV format with a comma delimiter.
func New() *Format { return &Format{delim: ','} }

// NewDelimiter returns the CSV format with another single-byte delimiter (not a quote, a
// backslash, CR or LF).
func NewDelimiter(d byte) (*Format, error) {
	if d == '"' || d == '\\' || d == '\r' || d == '\n' || d == 0 {
		return nil, fmt.Errorf("csv: invalid delimiter %q", d)
	}
	return &Format{delim: d}, nil
}

var (
	_ files.Format       = (*Format)(nil)
	_ files.ValueChecker = (*Format)(nil)
)

func (*Format) Name() string      { return "csv" }
func (*Format) Ext() string       { return "csv" }
func (f *Format) Delimiter() byte { return f.delim }

// CheckSchema refuses a table the CSV format cannot carry to Lindorm: a VARBINARY column (Spark's
// CSV reader, which Lindorm's bulkload runs, reads a binary column as the bytes of its text, so
// neither hex nor any other text form of arbitrary bytes loads back as written), and a column
// whose name holds CR or LF (the header is one line, as every record).
func (f *Format) CheckSchema(schema pipeline.TargetSchema) error {
	for _, c := range schema.Columns {
		if strings.ContainsAny(c.Name, "\r\n") {
			return fmt.Errorf("csv: column %q has a line break in its name, which the CSV header cannot carry (Spark's CSV reader, "+
				"which Lindorm's bulkload runs, reads one line per record: the rest of the header would load as a row): use "+
				"--format parquet, or give the target column another name in the mapping (target.columns)", c.Name)
		}
		switch c.Type {
		case pipeline.TypeInvalid:
			return fmt.Errorf("csv: column %q has no type", c.Name)
		case pipeline.TypeVarbinary:
			return fmt.Errorf("csv: column %q is VARBINARY, which Lindorm's bulkload cannot read from CSV (its Spark reader takes a "+
				"binary field as the bytes of its text, so no text form of arbitrary bytes loads back): use --format parquet, "+
				"or leave the column out of the mapping (target.exclude)", c.Name)
		}
		if c.Type > pipeline.TypeJSON {
			return fmt.Errorf("csv: column %q: unsupported type %s", c.Name, c.Type)
		}
	}
	return nil
}

// NewWriter writes the header row to w.
func (f *Format) NewWriter(w io.Writer, schema pipeline.TargetSchema) (files.FileWriter, error) {
	if err := f.CheckSchema(schema); err != nil {
		return nil, err
	}
	var b []byte
	for i, c := range schema.Columns {
		if i > 0 {
			b = append(b, f.delim)
		}
		b = f.appendText(b, c.Name)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	return &writer{w: w}, nil
}

type writer struct{ w io.Writer }

func (w *writer) Write(c files.Chunk) error {
	ch, ok := c.(*chunk)
	if !ok {
		return fmt.Errorf("csv: foreign chunk %T", c)
	}
	_, err := w.w.Write(ch.data)
	return err
}

func (w *writer) Close() error { return nil }

type buffer struct {
	f      *Format
	schema pipeline.TargetSchema
	data   []byte
	rows   int
	last   int
}

// NewBuffer returns an empty row buffer holding encoded lines.
func (f *Format) NewBuffer(schema pipeline.TargetSchema) (files.Buffer, error) {
	if err := f.CheckSchema(schema); err != nil {
		return nil, err
	}
	return &buffer{f: f, schema: schema}, nil
}

func (b *buffer) Rows() int   { return b.rows }
func (b *buffer) Mem() int64  { return int64(cap(b.data)) }
func (b *buffer) Used() int64 { return int64(len(b.data)) }

func (b *buffer) Append(values []pipeline.Value) error {
	if len(values) != len(b.schema.Columns) {
		return &pipeline.RowError{Code: pipeline.CodeType, Message: fmt.Sprintf("row has %d values, want %d", len(values), len(b.schema.Columns))}
	}
	if b.data == nil && b.last > 0 {
		b.data = make([]byte, 0, b.last)
	}
	start := len(b.data)
	for i := range values {
		if i > 0 {
			b.data = append(b.data, b.f.delim)
		}
		var err *pipeline.RowError
		b.data, err = b.f.appendValue(b.data, b.schema.Columns[i], values[i])
		if err != nil {
			b.data = b.data[:start]
			return err
		}
	}
	b.data = append(b.data, '\n')
	b.rows++
	return nil
}

type chunk struct {
	data []byte
	rows int
}

func (c *chunk) Rows() int  { return c.rows }
func (c *chunk) Mem() int64 { return int64(cap(c.data)) }
func (c *chunk) Release()   { c.data = nil }

func (b *buffer) Cut() files.Chunk {
	c := &chunk{data: b.data, rows: b.rows}
	b.last = len(b.data)
	b.data, b.rows = nil, 0
	return c
}

// AppendValue appends one field (exported for tests and tools that render single values).
func (f *Format) AppendValue(dst []byte, col pipeline.Column, v pipeline.Value) ([]byte, error) {
	out, err := f.appendValue(dst, col, v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (f *Format) appendValue(dst []byte, col pipeline.Column, v pipeline.Value) ([]byte, *pipeline.RowError) {
	if v.Kind == pipeline.KindNull {
		if col.IsKey() {
			return dst, files.NullKeyError(col)
		}
		return dst, nil
	}
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		s, err := files.TextValue(col, v)
		if err != nil {
			return dst, err
		}
		if err := CheckText(col, s); err != nil {
			return dst, err
		}
		return f.appendText(dst, s), nil
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
		return time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00"), nil
	case pipeline.TypeDate:
		days, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		return time.Unix(days*86400, 0).UTC().AppendFormat(dst, "2006-01-02"), nil
	case pipeline.TypeBoolean:
		bv, err := files.BoolValue(col, v)
		if err != nil {
			return dst, err
		}
		return strconv.AppendBool(dst, bv), nil
	case pipeline.TypeFloat, pipeline.TypeDouble:
		fv, err := files.FloatValue(col, v)
		if err != nil {
			return dst, err
		}
		switch {
		case math.IsNaN(fv):
			return append(dst, "NaN"...), nil
		case math.IsInf(fv, 1):
			return append(dst, "Infinity"...), nil
		case math.IsInf(fv, -1):
			return append(dst, "-Infinity"...), nil
		}
		if col.Type == pipeline.TypeFloat {
			return strconv.AppendFloat(dst, float64(float32(fv)), 'g', -1, 32), nil
		}
		return strconv.AppendFloat(dst, fv, 'g', -1, 64), nil
	case pipeline.TypeDecimal:
		d, err := files.DecimalValue(col, v)
		if err != nil {
			return dst, err
		}
		return d.AppendText(dst, col.Scale), nil
	}
	return dst, files.TypeError(col, "unsupported type %s", col.Type)
}

// CheckText refuses the text values Spark's CSV reader cannot read back: the empty string, which
// it reads as null whether quoted or not (its nullValue is "", and a quoted empty field is
// compared with it too), and a value holding CR or LF, since it reads one line per record
// (multiLine is off by default and the job cannot set it).
func CheckText(col pipeline.Column, s string) *pipeline.RowError {
	switch {
	case s == "":
		return &pipeline.RowError{Code: pipeline.CodeCSVValue, Field: col.Name, Message: "an empty string, which Spark's CSV reader " +
			"(Lindorm's bulkload) reads as NULL: use --format parquet, which keeps it"}
	case strings.ContainsAny(s, "\r\n"):
		return &pipeline.RowError{Code: pipeline.CodeCSVValue, Field: col.Name, Message: "a line break inside a value, which Spark's " +
			"CSV reader (Lindorm's bulkload) reads as the end of the row: use --format parquet, which keeps it"}
	}
	return nil
}

// CheckValues refuses a row holding a text value CheckText refuses (files.ValueChecker: the sink
// calls it before sorting a row; verify to leave out of a CSV output's comparison the rows migrate
// rejected).
func (f *Format) CheckValues(schema pipeline.TargetSchema, values []pipeline.Value) *pipeline.RowError {
	for i, col := range schema.Columns {
		if (col.Type == pipeline.TypeVarchar || col.Type == pipeline.TypeJSON) && !values[i].IsNull() {
			s, err := files.TextValue(col, values[i])
			if err == nil {
				err = CheckText(col, s)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *Format) needsQuotes(s string) bool {
	if s == "" {
		return true
	}
	// a space, a tab or a control character at either end: Spark drops a line that is blank to
	// Java's String.trim (every character <= U+0020: a one-column row of "\x01"), and some
	// Spark 3 releases one that begins with U+0000, their default comment character
	// (CSVExprUtils.filterCommentAndEmpty)
	if s[0] <= ' ' || s[len(s)-1] <= ' ' {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case f.delim, '"', '\\', '\r', '\n':
			return true
		}
	}
	return false
}

// appendText appends s, quoted when it must be, with Spark's escapes inside the quotes: \" for a
// quote and \\ for a backslash (a lone backslash before the closing quote would escape it).
func (f *Format) appendText(dst []byte, s string) []byte {
	if !f.needsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
