package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/store"
)

// readBatch is the rows decoded at a time from a Parquet file.
const readBatch = 16 << 10

// readParquet reads a Parquet data file with arrow's reader, a batch of columns at a time, and
// files each row; it returns the rows read.
func (t *targetReader) readParquet(ctx context.Context, r store.Reader, fileIdx int) (int64, error) {
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return 0, fmt.Errorf("not a whole Parquet file: %w", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: readBatch}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	sc, err := fr.Schema()
	if err != nil {
		return 0, err
	}
	schema := t.v.schema
	idx := make([]int, len(schema.Columns))
	for i, col := range schema.Columns {
		fi := sc.FieldIndices(col.Name)
		if len(fi) != 1 {
			return 0, fmt.Errorf("it has no column %s: is it a file of table %s?", col.Name, schema.Table)
		}
		want, err := parquet.ArrowType(col)
		if err != nil {
			return 0, err
		}
		if got := sc.Field(fi[0]).Type; !arrow.TypeEqual(got, want) {
			return 0, fmt.Errorf("column %s is %s, the mapping's %s is written as %s", col.Name, got, col.SQLType(), want)
		}
		idx[i] = fi[0]
	}
	rr, err := fr.GetRecordReader(ctx, idx, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	enc := make([]colEncoder, len(schema.Columns))
	var n int64
	for rr.Next() {
		rec := rr.Record()
		rs := rec.Schema()
		for i, col := range schema.Columns {
			fi := rs.FieldIndices(col.Name)
			if len(fi) != 1 {
				return n, fmt.Errorf("column %s missing from a row group", col.Name)
			}
			if enc[i], err = encoderFor(col, rec.Column(fi[0])); err != nil {
				return n, err
			}
		}
		rows := int(rec.NumRows())
		k := schema.KeyLen
		for row := 0; row < rows; row++ {
			t.key, t.row = t.key[:0], t.row[:0]
			for c := 0; c < k; c++ {
				t.key = enc[c](t.key, row)
			}
			for c := k; c < len(enc); c++ {
				t.row = enc[c](t.row, row)
			}
			t.put(fileIdx, n)
			n++
		}
		t.c.RowsIn.Add(int64(rows))
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	return n, nil
}

// colEncoder appends the stored form of row i of one column.
type colEncoder func(dst []byte, i int) []byte

func encoderFor(col pipeline.Column, a arrow.Array) (colEncoder, error) {
	var enc colEncoder // of a value that is not null
	switch a := a.(type) {
	case *array.String:
		offs, data := a.ValueOffsets(), a.ValueBytes()
		enc = func(dst []byte, i int) []byte { return appendBytes(dst, data[offs[i]:offs[i+1]]) }
	case *array.Binary:
		offs, data := a.ValueOffsets(), a.ValueBytes()
		enc = func(dst []byte, i int) []byte { return appendBytes(dst, data[offs[i]:offs[i+1]]) }
	case *array.Int64:
		vals := a.Int64Values()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, vals[i]) }
	case *array.Int32:
		vals := a.Int32Values()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, int64(vals[i])) }
	case *array.Int16:
		vals := a.Int16Values()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, int64(vals[i])) }
	case *array.Int8:
		vals := a.Int8Values()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, int64(vals[i])) }
	case *array.Timestamp:
		vals := a.TimestampValues()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, int64(vals[i])) }
	case *array.Date32:
		vals := a.Date32Values()
		enc = func(dst []byte, i int) []byte { return appendInt(dst, int64(vals[i])) }
	case *array.Boolean:
		enc = func(dst []byte, i int) []byte { return appendBool(dst, a.Value(i)) }
	case *array.Float32:
		vals := a.Float32Values()
		enc = func(dst []byte, i int) []byte { return appendFloat32(dst, vals[i]) }
	case *array.Float64:
		vals := a.Float64Values()
		enc = func(dst []byte, i int) []byte { return appendFloat64(dst, vals[i]) }
	case *array.Decimal128:
		enc = func(dst []byte, i int) []byte {
			n := a.Value(i)
			return appendDecimal(dst, n.HighBits(), n.LowBits())
		}
	default:
		return nil, fmt.Errorf("column %s: arrow type %s is not read", col.Name, a.DataType())
	}
	if a.NullN() == 0 {
		return enc, nil
	}
	return func(dst []byte, i int) []byte {
		if a.IsNull(i) {
			return append(dst, tagNull)
		}
		return enc(dst, i)
	}, nil
}

// readCSV reads a CSV data file as sink/csv writes it (see its package comment): a header of
// the column names, RFC 4180 quoting, null as an empty unquoted field and "" as an empty value.
func (t *targetReader) readCSV(r store.Reader, fileIdx int) (int64, error) {
	cr := &csvReader{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, r.Size()), 1<<20), delim: ','}
	schema := t.v.schema
	ok, err := cr.next()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("empty: it has no header line")
	}
	if len(cr.fields) != len(schema.Columns) {
		return 0, fmt.Errorf("its header has %d columns, table %s has %d", len(cr.fields), schema.Table, len(schema.Columns))
	}
	for i, col := range schema.Columns {
		if string(cr.fields[i]) != col.Name {
			return 0, fmt.Errorf("header column %d is %q, table %s has %s there", i+1, cr.fields[i], schema.Table, col.Name)
		}
	}
	var n int64
	k := schema.KeyLen
	for {
		ok, err := cr.next()
		if err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		if !ok {
			break
		}
		if len(cr.fields) != len(schema.Columns) {
			return n, fmt.Errorf("row %d has %d fields, table %s has %d columns", n+1, len(cr.fields), schema.Table, len(schema.Columns))
		}
		t.key, t.row = t.key[:0], t.row[:0]
		for c, col := range schema.Columns {
			dst := &t.row
			if c < k {
				dst = &t.key
			}
			if *dst, err = appendCSVField(*dst, col, cr.fields[c], cr.quoted[c]); err != nil {
				return n, fmt.Errorf("row %d, column %s: %w", n+1, col.Name, err)
			}
		}
		t.put(fileIdx, n)
		n++
		if n%readBatch == 0 {
			t.c.RowsIn.Add(readBatch)
		}
	}
	t.c.RowsIn.Add(n % readBatch)
	return n, nil
}

// appendCSVField appends the stored form of one CSV field of col.
func appendCSVField(dst []byte, col pipeline.Column, f []byte, quoted bool) ([]byte, error) {
	if len(f) == 0 && !quoted {
		return append(dst, tagNull), nil
	}
	s := unsafe.String(unsafe.SliceData(f), len(f)) // parsed here, never kept
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		return appendText(dst, s), nil
	case pipeline.TypeVarbinary:
		dst = append(dst, tagValue)
		dst = appendUvarintLen(dst, len(f)/2)
		start := len(dst)
		dst = append(dst, make([]byte, len(f)/2)...)
		if _, err := hex.Decode(dst[start:], f); err != nil {
			return dst, fmt.Errorf("not hex: %w", err)
		}
		return dst, nil
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint, pipeline.TypeTimestamp:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return dst, fmt.Errorf("%q is not an integer", s)
		}
		return appendInt(dst, i), nil
	case pipeline.TypeDate:
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return dst, fmt.Errorf("%q is not a date (yyyy-mm-dd)", s)
		}
		return appendInt(dst, d.Unix()/86400), nil
	case pipeline.TypeBoolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return dst, fmt.Errorf("%q is not true or false", s)
		}
		return appendBool(dst, b), nil
	case pipeline.TypeFloat:
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return dst, fmt.Errorf("%q is not a FLOAT", s)
		}
		return appendFloat32(dst, float32(v)), nil
	case pipeline.TypeDouble:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return dst, fmt.Errorf("%q is not a DOUBLE", s)
		}
		return appendFloat64(dst, v), nil
	case pipeline.TypeDecimal:
		d, e := files.DecimalValue(col, pipeline.Decimal(s))
		if e != nil {
			return dst, errors.New(e.Message)
		}
		return appendDecimal(dst, d.Hi, d.Lo), nil
	}
	return dst, fmt.Errorf("type %s is not read", col.Type)
}

func appendUvarintLen(dst []byte, n int) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

// csvReader splits rekey's CSV files into fields, telling a quoted empty field from an empty
// one (encoding/csv cannot). Fields point into its buffers until the next call.
type csvReader struct {
	r      *bufio.Reader
	delim  byte
	rec    []byte
	buf    []byte
	fields [][]byte
	quoted []bool
}

// next reads one record; false at the end of the file.
func (c *csvReader) next() (bool, error) {
	c.rec = c.rec[:0]
	quotes := 0
	for {
		line, err := c.r.ReadSlice('\n')
		c.rec = append(c.rec, line...)
		quotes += bytes.Count(line, []byte{'"'})
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if len(c.rec) == 0 {
				return false, nil
			}
			if quotes%2 != 0 {
				return false, errors.New("the file ends inside a quoted field: it was cut short")
			}
			return true, c.split()
		}
		if err != nil {
			return false, err
		}
		if quotes%2 == 0 { // a newline inside quotes leaves an odd count: read on
			c.rec = c.rec[:len(c.rec)-1]
			return true, c.split()
		}
	}
}

func (c *csvReader) split() error {
	c.fields, c.quoted, c.buf = c.fields[:0], c.quoted[:0], c.buf[:0]
	b := c.rec
	for {
		if len(b) > 0 && b[0] == '"' {
			start := len(c.buf)
			i := 1
			for {
				j := bytes.IndexByte(b[i:], '"')
				if j < 0 {
					return errors.New("a quoted field is not closed")
				}
				c.buf = append(c.buf, b[i:i+j]...)
				i += j + 1
				if i < len(b) && b[i] == '"' { // a doubled quote
					c.buf = append(c.buf, '"')
					i++
					continue
				}
				break
			}
			c.fields = append(c.fields, c.buf[start:len(c.buf):len(c.buf)])
			c.quoted = append(c.quoted, true)
			b = b[i:]
		} else {
			j := bytes.IndexByte(b, c.delim)
			if j < 0 {
				j = len(b)
			}
			c.fields = append(c.fields, b[:j:j])
			c.quoted = append(c.quoted, false)
			b = b[j:]
		}
		if len(b) == 0 {
			return nil
		}
		if b[0] != c.delim {
			return errors.New("a quoted field is followed by text before the delimiter")
		}
		b = b[1:]
	}
}
