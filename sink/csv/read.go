package csv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
)

// RowName names a row by its line, from 1, as a text editor shows it.
func (*Format) RowName(file string, pos int64) string { return fmt.Sprintf("%s:%d", file, pos) }

// Read reads a CSV file as the format writes it (see the package comment): a header of the
// column names, one record per line, Spark's quoting (\" and \\ inside quotes), null as an empty
// unquoted field. A row's pos is its line.
func (f *Format) Read(ctx context.Context, r io.ReaderAt, size int64, schema pipeline.TargetSchema, to files.RowReceiver) (int64, error) {
	cr := &reader{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<20), delim: f.delim}
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
	var scratch []byte
	for {
		if n%(4<<10) == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		ok, err := cr.next()
		if err != nil {
			return n, fmt.Errorf("line %d: %w", cr.line, err)
		}
		if !ok {
			return n, nil
		}
		if len(cr.fields) != len(schema.Columns) {
			return n, fmt.Errorf("line %d has %d fields, table %s has %d columns", cr.line, len(cr.fields), schema.Table, len(schema.Columns))
		}
		for c, col := range schema.Columns {
			if scratch, err = sendField(to, c, col, cr.fields[c], cr.quoted[c], scratch); err != nil {
				return n, fmt.Errorf("line %d, column %s: %w", cr.line, col.Name, err)
			}
		}
		to.EndRow(cr.line)
		n++
	}
}

// sendField hands one CSV field of column c (col) to to; scratch is a buffer it may reuse and
// returns.
func sendField(to files.RowReceiver, c int, col pipeline.Column, f []byte, quoted bool, scratch []byte) ([]byte, error) {
	if len(f) == 0 && !quoted {
		to.Null(c)
		return scratch, nil
	}
	s := unsafe.String(unsafe.SliceData(f), len(f)) // parsed here, never kept
	switch col.Type {
	case pipeline.TypeVarchar, pipeline.TypeJSON:
		to.Bytes(c, f)
	case pipeline.TypeVarbinary:
		scratch = append(scratch[:0], make([]byte, len(f)/2)...)
		if _, err := hex.Decode(scratch, f); err != nil {
			return scratch, fmt.Errorf("not hex: %w", err)
		}
		to.Bytes(c, scratch)
	case pipeline.TypeBigint, pipeline.TypeInteger, pipeline.TypeSmallint, pipeline.TypeTinyint:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return scratch, fmt.Errorf("%q is not an integer", s)
		}
		to.Int(c, i)
	case pipeline.TypeTimestamp:
		ms, err := parseTimestamp(s)
		if err != nil {
			return scratch, err
		}
		to.Int(c, ms)
	case pipeline.TypeDate:
		y, m, d, ok := parseISODate(s)
		if !ok {
			return scratch, fmt.Errorf("%q is not a date (yyyy-mm-dd)", s)
		}
		to.Int(c, time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix()/86400)
	case pipeline.TypeBoolean:
		// true or false in any case, as Spark's CSV reader takes them (not 1, 0, t, f: it fails
		// those, so the table would not get the value read here)
		switch {
		case strings.EqualFold(s, "true"):
			to.Bool(c, true)
		case strings.EqualFold(s, "false"):
			to.Bool(c, false)
		default:
			return scratch, fmt.Errorf("%q is not true or false, which Lindorm's bulk load (Spark's CSV reader) does not load as a BOOLEAN; write the file again with rekey migrate", s)
		}
	case pipeline.TypeFloat:
		v, err := strconv.ParseFloat(s, 32)
		if err != nil || !sparkFloatText(s) {
			return scratch, fmt.Errorf("%q is not a FLOAT as Lindorm's bulk load (Spark's CSV reader) reads one", s)
		}
		to.Float32(c, float32(v))
	case pipeline.TypeDouble:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !sparkFloatText(s) {
			return scratch, fmt.Errorf("%q is not a DOUBLE as Lindorm's bulk load (Spark's CSV reader) reads one", s)
		}
		to.Float64(c, v)
	case pipeline.TypeDecimal:
		if !bigDecimalText(s) {
			return scratch, fmt.Errorf("%q is not a DECIMAL as Lindorm's bulk load (Spark's CSV reader) reads one", s)
		}
		d, e := files.DecimalValue(col, pipeline.Decimal(s))
		if e != nil {
			return scratch, errors.New(e.Message)
		}
		to.Decimal(c, d.Hi, d.Lo)
	default:
		return scratch, fmt.Errorf("type %s is not read", col.Type)
	}
	return scratch, nil
}

// sparkFloatText tells whether s, a number ParseFloat took, is no NaN or infinity, or one spelt
// as Spark's CSV reader takes it (its defaults NaN, Inf, -Inf, and Java's Infinity); Go also
// takes inf, nan, +Inf, INFINITY..., which that reader fails.
func sparkFloatText(s string) bool {
	if !strings.ContainsAny(s, "iInN") {
		return true
	}
	switch s {
	case "NaN", "Inf", "-Inf", "Infinity", "+Infinity", "-Infinity":
		return true
	}
	return false
}

// bigDecimalText tells whether s is a number as java.math.BigDecimal reads it, which Spark's CSV
// reader does with a DECIMAL field: a sign, digits with at most one point (at least one digit),
// then an exponent of e or E, a sign and digits. files.DecimalValue also takes spaces around the
// number and an exponent with two signs (1e+-2), which fail that reader: the bulk load loads
// NULL.
func bigDecimalText(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits, point := 0, false
	for ; i < len(s); i++ {
		switch {
		case s[i] >= '0' && s[i] <= '9':
			digits++
			continue
		case s[i] == '.' && !point:
			point = true
			continue
		}
		break
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != 'e' && s[i] != 'E' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	return i < len(s) && allDigits(s[i:])
}

// parseTimestamp reads a TIMESTAMP as the format writes it (yyyy-mm-ddThh:mm:ss.SSSZ), in epoch
// milliseconds. A number (epoch milliseconds, as rekey wrote CSV before) is an error: Spark's
// CSV reader, which Lindorm's bulk load runs, loads it as NULL, so reading it as a time would
// verify a value the table does not get.
func parseTimestamp(s string) (int64, error) {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return 0, fmt.Errorf("%q is epoch milliseconds, which Lindorm's bulk load (Spark's CSV reader) loads as NULL: "+
			"an earlier rekey wrote CSV timestamps so; migrate again into a new --out (this rekey writes yyyy-mm-ddThh:mm:ss.SSSZ) or use --format parquet", s)
	}
	date, clock, ok := strings.Cut(s, "T")
	y, m, d, okDate := parseISODate(date)
	hh, mm, ss, msec, okClock := parseClock(clock)
	if !ok || !okDate || !okClock {
		return 0, fmt.Errorf("%q is not a timestamp (yyyy-mm-ddThh:mm:ss.SSSZ)", s)
	}
	return time.Date(y, time.Month(m), d, hh, mm, ss, msec*1e6, time.UTC).UnixMilli(), nil
}

// parseClock reads hh:mm:ss.SSSZ, digits only and each field in its range: a time that is none
// (24:00, a sign) fails Spark's reader, and time.Date would carry it into the next day.
func parseClock(s string) (hh, mm, ss, msec int, ok bool) {
	const form = "00:00:00.000Z"
	if len(s) != len(form) {
		return 0, 0, 0, 0, false
	}
	for i := 0; i < len(form); i++ {
		if form[i] == '0' && (s[i] < '0' || s[i] > '9') || form[i] != '0' && s[i] != form[i] {
			return 0, 0, 0, 0, false
		}
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range s[i : i+n] {
			v = v*10 + int(c-'0')
		}
		return v
	}
	hh, mm, ss, msec = num(0, 2), num(3, 2), num(6, 2), num(9, 3)
	return hh, mm, ss, msec, hh < 24 && mm < 60 && ss < 60
}

// parseISODate reads yyyy-mm-dd as the format writes it: the year has at least four digits and
// may be negative (-0001-01-01) or longer (10000-01-01), as Go's time formatting and Spark write
// it.
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
	if !allDigits(s[j+1:i]) || !allDigits(s[i+1:]) { // a sign is no digit of a month or a day
		return 0, 0, 0, false
	}
	if m, err = strconv.Atoi(s[j+1 : i]); err != nil || m < 1 || m > 12 {
		return 0, 0, 0, false
	}
	if d, err = strconv.Atoi(s[i+1:]); err != nil || d < 1 || d > 31 {
		return 0, 0, 0, false
	}
	if time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Day() != d {
		return 0, 0, 0, false // February 30: no day, which time.Date would carry into March
	}
	return y, m, d, true
}

// reader splits the format's files into fields, telling a quoted empty field from an empty one
// (encoding/csv cannot) and reading Spark's escapes. Fields point into its buffers until the
// next call.
type reader struct {
	r      *bufio.Reader
	delim  byte
	rec    []byte
	buf    []byte
	fields [][]byte
	quoted []bool
	line   int64 // the line the record read last starts at, from 1
	lines  int64 // the lines read
}

// next reads one record, one line (the format writes no line break inside a value); false at
// the end of the file.
func (c *reader) next() (bool, error) {
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

func (c *reader) split() error {
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

// allDigits tells whether s is ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
