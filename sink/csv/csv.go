// Package csv is the CSV format of the region sink (sink/files): RFC 4180 text with a header
// row, for Lindorm bulkload's CSV reader (the job config names each column's type, see
// sink/lindorm).
//
// Encoding:
//
//	null                       empty unquoted field            a,,b
//	empty string               quoted empty field              a,"",b
//	VARCHAR, JSON              as is; quoted ("" doubling) when it holds the delimiter, a quote,
//	                           CR or LF, or starts or ends with a space or tab
//	VARBINARY                  lowercase hex (empty value: "")
//	BIGINT ... TINYINT         decimal
//	TIMESTAMP                  epoch milliseconds (decimal)
//	DATE                       yyyy-mm-dd (proleptic Gregorian, UTC)
//	BOOLEAN                    true / false
//	FLOAT, DOUBLE              shortest round-trip form; NaN, Infinity, -Infinity
//	DECIMAL(p,s)               plain text with exactly s fractional digits ("-12.340")
//
// Lines end with "\n". UNCERTAIN: whether Lindorm's CSV reader tells a null from an empty
// string the same way; see the README.
//
// Not encoding/csv's Writer: it cannot quote an empty field, so it would write an empty string as
// a null, and it takes a []string per record where this appends typed values to a chunk's buffer.
package csv

import (
	"fmt"
	"io"
	"math"
	"strconv"
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

// NewDelimiter returns the CSV format with another single-byte delimiter (not a quote, CR or LF).
func NewDelimiter(d byte) (*Format, error) {
	if d == '"' || d == '\r' || d == '\n' || d == 0 {
		return nil, fmt.Errorf("csv: invalid delimiter %q", d)
	}
	return &Format{delim: d}, nil
}

var _ files.Format = (*Format)(nil)

func (*Format) Name() string      { return "csv" }
func (*Format) Ext() string       { return "csv" }
func (f *Format) Delimiter() byte { return f.delim }

func (f *Format) check(schema pipeline.TargetSchema) error {
	for _, c := range schema.Columns {
		switch c.Type {
		case pipeline.TypeInvalid:
			return fmt.Errorf("csv: column %q has no type", c.Name)
		}
		if c.Type > pipeline.TypeJSON {
			return fmt.Errorf("csv: column %q: unsupported type %s", c.Name, c.Type)
		}
	}
	return nil
}

// NewWriter writes the header row to w.
func (f *Format) NewWriter(w io.Writer, schema pipeline.TargetSchema) (files.FileWriter, error) {
	if err := f.check(schema); err != nil {
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
	if err := f.check(schema); err != nil {
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

const hexDigits = "0123456789abcdef"

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
		return f.appendText(dst, s), nil
	case pipeline.TypeVarbinary:
		s, err := files.TextValue(col, v)
		if err != nil {
			return dst, err
		}
		if s == "" {
			return append(dst, '"', '"'), nil
		}
		for i := 0; i < len(s); i++ {
			dst = append(dst, hexDigits[s[i]>>4], hexDigits[s[i]&15])
		}
		return dst, nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeTimestamp:
		i, err := files.IntValue(col, v)
		if err != nil {
			return dst, err
		}
		return strconv.AppendInt(dst, i, 10), nil
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

func (f *Format) needsQuotes(s string) bool {
	if s == "" {
		return true
	}
	if c := s[0]; c == ' ' || c == '\t' {
		return true
	}
	if c := s[len(s)-1]; c == ' ' || c == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case f.delim, '"', '\r', '\n':
			return true
		}
	}
	return false
}

func (f *Format) appendText(dst []byte, s string) []byte {
	if !f.needsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
