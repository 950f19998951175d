package csv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
)

// received records what a Format's Read hands over, a value as text per column and a row per
// EndRow.
type received struct {
	row  []string
	rows [][]string
	pos  []int64
}

func (r *received) Null(c int)               { r.row = append(r.row, "null") }
func (r *received) Bytes(c int, b []byte)    { r.row = append(r.row, "bytes:"+string(b)) }
func (r *received) Int(c int, v int64)       { r.row = append(r.row, fmt.Sprint("int:", v)) }
func (r *received) Bool(c int, v bool)       { r.row = append(r.row, fmt.Sprint("bool:", v)) }
func (r *received) Float32(c int, v float32) { r.row = append(r.row, fmt.Sprint("f32:", v)) }
func (r *received) Float64(c int, v float64) { r.row = append(r.row, fmt.Sprint("f64:", v)) }
func (r *received) Decimal(c int, hi int64, lo uint64) {
	r.row = append(r.row, fmt.Sprint("dec:", hi, lo))
}
func (r *received) EndRow(pos int64) {
	r.rows, r.pos, r.row = append(r.rows, r.row), append(r.pos, pos), nil
}

// Read gives back what the format writes at the edges of TIMESTAMP and DATE (years before 1 and
// after 9999 are written with a sign or a fifth digit, as Go and Spark write them), the quotes and
// backslashes Spark's escapes carry, and nulls apart from empty strings; rows are named by line.
func TestReadGivesBackWhatIsWritten(t *testing.T) {
	f := csv.New()
	ts := pipeline.Column{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1}
	date := pipeline.Column{Name: "d", Type: pipeline.TypeDate, KeyPos: -1}
	text := pipeline.Column{Name: "s", Type: pipeline.TypeVarchar, KeyPos: -1}
	cases := []struct {
		col  pipeline.Column
		v    pipeline.Value
		want string
	}{
		{ts, pipeline.Int(files.MaxTimestamp), fmt.Sprint("int:", files.MaxTimestamp)},
		{ts, pipeline.Int(files.MinTimestamp), fmt.Sprint("int:", files.MinTimestamp)},
		{ts, pipeline.Int(-62135596800001), "int:-62135596800001"},
		{ts, pipeline.Int(253402300800000), "int:253402300800000"},
		{ts, pipeline.Int(-1), "int:-1"}, {ts, pipeline.Int(0), "int:0"},
		{date, pipeline.Int(-2147483648), "int:-2147483648"}, {date, pipeline.Int(2147483647), "int:2147483647"},
		{date, pipeline.Int(-719163), "int:-719163"}, {date, pipeline.Int(2932897), "int:2932897"},
		{text, pipeline.Text(`a "b", c\`), `bytes:a "b", c\`}, {text, pipeline.Text(`\"`), `bytes:\"`},
		{text, pipeline.Text(` x\y `), `bytes: x\y `}, {text, pipeline.Null, "null"},
	}
	for _, c := range cases {
		field, err := f.AppendValue(nil, c.col, c.v)
		if err != nil {
			t.Fatalf("%s %v: %v", c.col.Type, c.v, err)
		}
		file := c.col.Name + "\n" + string(field) + "\n"
		schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{c.col}}
		var got received
		n, err := f.Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got)
		if err != nil || n != 1 || len(got.rows) != 1 {
			t.Fatalf("%s %q: read %d rows (%v): %v", c.col.Type, field, n, got.rows, err)
		}
		if got.rows[0][0] != c.want || got.pos[0] != 2 {
			t.Errorf("%s %q: read %s at line %d, want %s at line 2", c.col.Type, field, got.rows[0][0], got.pos[0], c.want)
		}
	}
	if got := f.RowName("data/region-0000/part-00000.csv", 2); got != "data/region-0000/part-00000.csv:2" {
		t.Errorf("RowName = %q", got)
	}
}

// A field that is not its column's type is an error naming the line and the column.
func TestReadNamesTheLineAndColumnOfABadField(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "d", Type: pipeline.TypeDate, KeyPos: -1}}}
	file := "id,d\n1,2024-01-02\n2,yesterday\n"
	var got received
	n, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got)
	if err == nil || n != 1 || !strings.Contains(err.Error(), "line 3, column d") {
		t.Fatalf("read %d rows, err %v; want 1 row and an error at line 3, column d", n, err)
	}
}

// A BOOLEAN field is true or false in any case, as Spark's CSV reader (Lindorm's bulk load)
// takes it; the other forms strconv.ParseBool takes (1, 0, t, f) fail that reader, so reading
// them as booleans would verify a value the table does not get. Before, "1" read as true.
func TestReadBooleanAsSparkDoes(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{{Name: "b", Type: pipeline.TypeBoolean, KeyPos: -1}}}
	for field, want := range map[string]string{"true": "bool:true", "FALSE": "bool:false", "True": "bool:true",
		"1": "", "0": "", "t": "", "F": ""} {
		file := "b\n" + field + "\n"
		var got received
		_, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got)
		switch {
		case want == "" && err == nil:
			t.Errorf("%q read as %v; want an error naming the line and column", field, got.rows)
		case want == "" && !strings.Contains(err.Error(), "line 2, column b"):
			t.Errorf("%q: error %v does not name line 2, column b", field, err)
		case want != "" && (err != nil || len(got.rows) != 1 || got.rows[0][0] != want):
			t.Errorf("%q read as %v (%v); want %s", field, got.rows, err, want)
		}
	}
}

// A DATE or TIMESTAMP field that names no real day or time (February 30, hour 24, a sign or a
// space among the digits) is an error naming the line and column, as Spark's CSV reader fails
// it. Before, the reader normalised them (2024-02-30 read as 2024-03-01), so verify could say a
// value equal that the bulk load does not load.
func TestReadRefusesDatesAndTimesThatAreNone(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{
		{Name: "d", Type: pipeline.TypeDate, KeyPos: -1}, {Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1}}}
	for _, line := range []string{
		"2024-02-30,2024-01-01T00:00:00.000Z", "2023-04-31,2024-01-01T00:00:00.000Z",
		"2024-01-01,2024-01-01T24:00:00.000Z", "2024-01-01,2024-01-01T23:60:00.000Z", "2024-01-01,2024-01-01T23:00:60.000Z",
		"2024-01-01,2024-01-01T 1:02:03.456Z", "2024-01-01,2024-01-01T01:02:03.-12Z", "2024-01-01,2024-01-01T+1:02:03.456Z",
		"2024-01-01,2024-02-30T01:02:03.456Z", "2024-+1-01,2024-01-01T00:00:00.000Z",
	} {
		file := "d,ts\n" + line + "\n"
		var got received
		if _, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got); err == nil || !strings.Contains(err.Error(), "line 2, column") {
			t.Errorf("%q read as %v (%v); want an error naming line 2 and the column", line, got.rows, err)
		}
	}
	file := "d,ts\n2024-02-29,2024-02-29T23:59:59.999Z\n"
	var got received
	if _, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got); err != nil || len(got.rows) != 1 {
		t.Errorf("a leap day: %v (%v)", got.rows, err)
	}
}

// A FLOAT or DOUBLE field reads as Spark's CSV reader reads it: NaN, Inf, -Inf (its defaults)
// and Java's Infinity, +Infinity, -Infinity; the other spellings Go's ParseFloat takes (inf, nan,
// +Inf, INFINITY: what Python writes) fail that reader, so they are errors. Before, "inf" read
// as +Inf and verify called it equal to a value the bulk load loads as NULL.
func TestReadFloatSpecialsAsSparkDoes(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{{Name: "f", Type: pipeline.TypeDouble, KeyPos: -1}}}
	for field, ok := range map[string]bool{"NaN": true, "Inf": true, "-Inf": true, "Infinity": true, "+Infinity": true, "-Infinity": true,
		"1.5e3": true, "-0": true, "inf": false, "nan": false, "+Inf": false, "INFINITY": false, "-inf": false, "NAN": false} {
		file := "f\n" + field + "\n"
		var got received
		_, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got)
		if ok != (err == nil) {
			t.Errorf("%q: read %v, err %v; want ok %v", field, got.rows, err, ok)
		}
	}
}

// A DECIMAL field reads as Spark's CSV reader reads it (java.math.BigDecimal of the text): a
// space around the number or an exponent with two signs fails that reader, which loads the
// value as NULL, so they are errors naming the line and column. Before, the reader trimmed the
// spaces and took "1e+-2" as 0.01, and verify called equal a value the bulk load does not load.
func TestReadDecimalAsSparkDoes(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{{Name: "dec", Type: pipeline.TypeDecimal, Precision: 10, Scale: 3, KeyPos: -1}}}
	for field, ok := range map[string]bool{"12.300": true, "-0.001": true, "+1.5": true, ".5": true, "5.": true, "1e2": true, "1E+2": true,
		"15e-1": true, `" 12.300"`: false, `"12.300 "`: false, "\"\t1\"": false, "1e+-2": false, "1e++2": false, "1e": false, "e2": false} {
		file := "dec\n" + field + "\n"
		var got received
		_, err := csv.New().Read(context.Background(), strings.NewReader(file), int64(len(file)), schema, &got)
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "line 2, column dec") {
			t.Errorf("%q: read %v, err %v; want ok %v", field, got.rows, err, ok)
		}
	}
}
