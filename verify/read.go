package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	pq "github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/store"
)

// readBatch is the rows decoded at a time from a Parquet file.
const readBatch = 4 << 10

// readParquet reads a Parquet data file a row group and a batch of rows at a time with arrow's
// column chunk readers, and files each row; it returns the rows read. The values are read as
// Parquet stores them (byte arrays point into the decoded pages, which the Go allocator leaves
// alone): half the CPU of arrow's record reader, which copies them into arrays first (measured
// on the core bench's 16 files: 0.70 s vs 1.40 s). Each column's type is checked against the
// one rekey writes for the mapping's column (parquet.CheckColumn).
func (t *targetReader) readParquet(ctx context.Context, r store.Reader, fileIdx int) (n int64, err error) {
	// arrow's decoders and codecs (rekey's zstd among them: arrow's Codec.Decode returns no
	// error) panic on corrupt pages: a damaged file is an error of this file, not a crash
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the file is damaged after its row %d: %v", n, p)
		}
	}()
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return 0, fmt.Errorf("not a whole Parquet file: %w", err)
	}
	defer pf.Close()
	fileSchema := pf.MetaData().Schema
	schema := t.v.schema
	cols := make([]pqColumn, len(schema.Columns))
	for i, col := range schema.Columns {
		// a flat schema: a column's path is its name
		leaf := fileSchema.ColumnIndexByName(col.Name)
		if leaf < 0 {
			return 0, fmt.Errorf("it has no column %s: is it a file of table %s?", col.Name, schema.Table)
		}
		if err := parquet.CheckColumn(col, fileSchema.Column(leaf)); err != nil {
			return 0, err
		}
		cols[i] = pqColumn{col: col, leaf: leaf, nullable: fileSchema.Column(leaf).MaxDefinitionLevel() > 0}
	}
	k := schema.KeyLen
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		rgr := pf.RowGroup(rg)
		for i := range cols {
			if err := cols[i].open(rgr); err != nil {
				return n, err
			}
		}
		for left := rgr.NumRows(); left > 0; {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			rows := int(min(left, readBatch))
			for i := range cols {
				if err := cols[i].read(rows); err != nil {
					return n, fmt.Errorf("row group %d: %w", rg, err)
				}
			}
			for row := 0; row < rows; row++ {
				t.key, t.row = t.key[:0], t.row[:0]
				for c := 0; c < k; c++ {
					t.key = cols[c].append(t.key, row)
				}
				for c := k; c < len(cols); c++ {
					t.row = cols[c].append(t.row, row)
				}
				t.put(fileIdx, n)
				n++
			}
			t.c.RowsIn.Add(int64(rows))
			left -= int64(rows)
		}
	}
	return n, nil
}

// pqColumn reads one column of a row group a batch at a time and appends its rows' stored form.
type pqColumn struct {
	col      pipeline.Column
	leaf     int
	nullable bool
	r        file.ColumnChunkReader
	phys     pq.Type // r's physical type (append switches on it per value)
	defs     []int16 // a nullable column's levels: 0 is null
	next     int     // the next value (values skip the nulls)
	ba       []pq.ByteArray
	flba     []pq.FixedLenByteArray
	i64      []int64
	i32      []int32
	bools    []bool
	f32      []float32
	f64      []float64
}

// open starts the column's chunk of a row group, checking it is stored as rekey writes it.
func (c *pqColumn) open(rg *file.RowGroupReader) error {
	r, err := rg.Column(c.leaf)
	if err != nil {
		return err
	}
	c.r, c.phys = r, r.Type()
	ok := false
	switch r.(type) {
	case *file.ByteArrayColumnChunkReader:
		ok = c.col.Type == pipeline.TypeVarchar || c.col.Type == pipeline.TypeJSON || c.col.Type == pipeline.TypeVarbinary
	case *file.Int64ColumnChunkReader:
		ok = c.col.Type == pipeline.TypeBigint || c.col.Type == pipeline.TypeTimestamp
	case *file.Int32ColumnChunkReader:
		ok = c.col.Type == pipeline.TypeInteger || c.col.Type == pipeline.TypeSmallint || c.col.Type == pipeline.TypeTinyint || c.col.Type == pipeline.TypeDate
	case *file.BooleanColumnChunkReader:
		ok = c.col.Type == pipeline.TypeBoolean
	case *file.Float32ColumnChunkReader:
		ok = c.col.Type == pipeline.TypeFloat
	case *file.Float64ColumnChunkReader:
		ok = c.col.Type == pipeline.TypeDouble
	case *file.FixedLenByteArrayColumnChunkReader:
		ok = c.col.Type == pipeline.TypeDecimal
	}
	if !ok {
		return fmt.Errorf("column %s (%s) is stored as %s, not as rekey writes it", c.col.Name, c.col.SQLType(), r.Type())
	}
	return nil
}

// read reads the next rows of the column.
func (c *pqColumn) read(rows int) error {
	if c.nullable && cap(c.defs) < rows {
		c.defs = make([]int16, rows)
	}
	c.next = 0
	levels, values := 0, 0
	for levels < rows {
		if !c.r.HasNext() {
			return fmt.Errorf("column %s holds fewer values than its row group's rows: the file is damaged", c.col.Name)
		}
		var defs []int16
		if c.nullable {
			defs = c.defs[levels:rows]
		}
		var total int64
		var got int
		var err error
		switch r := c.r.(type) {
		case *file.ByteArrayColumnChunkReader:
			total, got, err = readValues(r, &c.ba, rows, values, defs)
		case *file.FixedLenByteArrayColumnChunkReader:
			total, got, err = readValues(r, &c.flba, rows, values, defs)
		case *file.Int64ColumnChunkReader:
			total, got, err = readValues(r, &c.i64, rows, values, defs)
		case *file.Int32ColumnChunkReader:
			total, got, err = readValues(r, &c.i32, rows, values, defs)
		case *file.BooleanColumnChunkReader:
			total, got, err = readValues(r, &c.bools, rows, values, defs)
		case *file.Float32ColumnChunkReader:
			total, got, err = readValues(r, &c.f32, rows, values, defs)
		case *file.Float64ColumnChunkReader:
			total, got, err = readValues(r, &c.f64, rows, values, defs)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("column %s: %w", c.col.Name, err)
		}
		if total == 0 {
			return fmt.Errorf("column %s holds fewer values than its row group's rows: the file is damaged", c.col.Name)
		}
		levels += int(total)
		values += got
	}
	return nil
}

// batchReader is a typed column chunk reader (file.Int64ColumnChunkReader...).
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// readValues reads the levels (defs) and values after the values already read of a batch of
// rows into vals, sized for the batch.
func readValues[T any](r batchReader[T], vals *[]T, rows, values int, defs []int16) (int64, int, error) {
	if cap(*vals) < rows {
		*vals = make([]T, rows)
	}
	*vals = (*vals)[:rows]
	levels := rows - values // at most: with nulls, fewer values than levels were read
	if defs != nil {
		levels = len(defs)
	}
	return r.ReadBatch(int64(levels), (*vals)[values:], defs, nil)
}

// append appends the stored form of row i of the batch read; rows are appended in order.
func (c *pqColumn) append(dst []byte, i int) []byte {
	if c.nullable && c.defs[i] == 0 {
		return append(dst, tagNull)
	}
	v := c.next
	c.next++
	switch c.phys {
	case pq.Types.ByteArray:
		return appendBytes(dst, c.ba[v])
	case pq.Types.Int64:
		return appendInt(dst, c.i64[v])
	case pq.Types.Int32:
		return appendInt(dst, int64(c.i32[v]))
	case pq.Types.FixedLenByteArray:
		hi, lo := bigEndianDecimal(c.flba[v])
		return appendDecimal(dst, hi, lo)
	case pq.Types.Boolean:
		return appendBool(dst, c.bools[v])
	case pq.Types.Float:
		return appendFloat32(dst, c.f32[v])
	case pq.Types.Double:
		return appendFloat64(dst, c.f64[v])
	}
	panic("verify: a column reader open did not accept")
}

// bigEndianDecimal reads a DECIMAL stored as FIXED_LEN_BYTE_ARRAY (big-endian two's
// complement, at most 16 bytes) as the high and low 64 bits of its unscaled value.
func bigEndianDecimal(b []byte) (int64, uint64) {
	var buf [16]byte
	if len(b) > 0 && b[0]&0x80 != 0 { // negative: sign-extend
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-min(len(b), 16):], b[max(len(b)-16, 0):])
	return int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])
}

// readCSV reads a CSV data file as sink/csv writes it (see its package comment): a header of
// the column names, one record per line, Spark's quoting (\" and \\ inside quotes), null as an
// empty unquoted field.
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
			return n, fmt.Errorf("line %d: %w", cr.line, err)
		}
		if !ok {
			break
		}
		if len(cr.fields) != len(schema.Columns) {
			return n, fmt.Errorf("line %d has %d fields, table %s has %d columns", cr.line, len(cr.fields), schema.Table, len(schema.Columns))
		}
		t.key, t.row = t.key[:0], t.row[:0]
		for c, col := range schema.Columns {
			dst := &t.row
			if c < k {
				dst = &t.key
			}
			if *dst, err = appendCSVField(*dst, col, cr.fields[c], cr.quoted[c]); err != nil {
				return n, fmt.Errorf("line %d, column %s: %w", cr.line, col.Name, err)
			}
		}
		t.put(fileIdx, cr.line) // a text file's rows are named by line, as a text editor shows them
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
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return dst, fmt.Errorf("%q is not an integer", s)
		}
		return appendInt(dst, i), nil
	case pipeline.TypeTimestamp:
		if i, err := strconv.ParseInt(s, 10, 64); err == nil { // epoch milliseconds, as rekey wrote them before
			return appendInt(dst, i), nil
		}
		date, clock, ok := strings.Cut(s, "T")
		y, m, d, okDate := parseISODate(date)
		var hh, mm, ss, msec int
		if n, err := fmt.Sscanf(clock, "%2d:%2d:%2d.%3dZ", &hh, &mm, &ss, &msec); !ok || !okDate || err != nil || n != 4 || len(clock) != len("15:04:05.000Z") {
			return dst, fmt.Errorf("%q is not a timestamp (yyyy-mm-ddThh:mm:ss.SSSZ)", s)
		}
		return appendInt(dst, time.Date(y, time.Month(m), d, hh, mm, ss, msec*1e6, time.UTC).UnixMilli()), nil
	case pipeline.TypeDate:
		y, m, d, ok := parseISODate(s)
		if !ok {
			return dst, fmt.Errorf("%q is not a date (yyyy-mm-dd)", s)
		}
		return appendInt(dst, time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix()/86400), nil
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

// parseISODate reads yyyy-mm-dd as sink/csv writes it: the year has at least four digits and may
// be negative (-0001-01-01) or longer (10000-01-01), as Go's time formatting and Spark write it.
func parseISODate(s string) (y, m, d int, ok bool) {
	i := strings.LastIndexByte(s, '-')
	j := strings.LastIndexByte(s[:max(i, 0)], '-')
	if j < 4 || i != j+3 || len(s) != i+3 {
		return 0, 0, 0, false
	}
	var err error
	if y, err = strconv.Atoi(s[:j]); err != nil {
		return 0, 0, 0, false
	}
	if m, err = strconv.Atoi(s[j+1 : i]); err != nil || m < 1 || m > 12 {
		return 0, 0, 0, false
	}
	if d, err = strconv.Atoi(s[i+1:]); err != nil || d < 1 || d > 31 {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func appendUvarintLen(dst []byte, n int) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

// csvReader splits rekey's CSV files into fields, telling a quoted empty field from an empty
// one (encoding/csv cannot) and reading Spark's escapes. Fields point into its buffers until the
// next call.
type csvReader struct {
	r      *bufio.Reader
	delim  byte
	rec    []byte
	buf    []byte
	fields [][]byte
	quoted []bool
	line   int64 // the line the record read last starts at, from 1
	lines  int64 // the lines read
}

// next reads one record, one line (sink/csv writes no line break inside a value); false at the
// end of the file.
func (c *csvReader) next() (bool, error) {
	c.rec = c.rec[:0]
	c.line = c.lines + 1
	for {
		line, err := c.r.ReadSlice('\n')
		c.rec = append(c.rec, line...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if len(c.rec) == 0 {
				return false, nil
			}
			c.lines++
			return true, c.split()
		}
		if err != nil {
			return false, err
		}
		c.lines++
		c.rec = c.rec[:len(c.rec)-1]
		return true, c.split()
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
				j := bytes.IndexAny(b[i:], "\"\\")
				if j < 0 {
					return errors.New("a quoted field is not closed on its line")
				}
				c.buf = append(c.buf, b[i:i+j]...)
				i += j
				if b[i] == '\\' && i+1 < len(b) && (b[i+1] == '"' || b[i+1] == '\\') { // an escaped quote or backslash
					c.buf = append(c.buf, b[i+1])
					i += 2
					continue
				}
				if b[i] == '\\' { // a lone backslash is itself, as Spark reads it
					c.buf = append(c.buf, '\\')
					i++
					continue
				}
				i++
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
