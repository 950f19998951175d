package parquet_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/parquet"
)

// received records what Read hands over, a value as text per column and a row per EndRow.
type received struct {
	row  []string
	rows [][]string
	pos  []int64
}

func (r *received) add(c int, s string)      { r.row = append(r.row, fmt.Sprint(c, "=", s)) }
func (r *received) Null(c int)               { r.add(c, "null") }
func (r *received) Bytes(c int, b []byte)    { r.add(c, "bytes:"+string(b)) }
func (r *received) Int(c int, v int64)       { r.add(c, fmt.Sprint("int:", v)) }
func (r *received) Bool(c int, v bool)       { r.add(c, fmt.Sprint("bool:", v)) }
func (r *received) Float32(c int, v float32) { r.add(c, fmt.Sprint("f32:", v)) }
func (r *received) Float64(c int, v float64) { r.add(c, fmt.Sprint("f64:", v)) }
func (r *received) Decimal(c int, hi int64, lo uint64) {
	r.add(c, fmt.Sprint("dec:", hi, ":", lo))
}
func (r *received) EndRow(pos int64) {
	r.rows, r.pos, r.row = append(r.rows, r.row), append(r.pos, pos), nil
}

// Read gives back every row the format wrote, value by value as stored (nulls, decimals as
// their unscaled 128-bit value, timestamps in ms), rows named by their index; a file of another
// table, or not a Parquet file at all, is an error saying so.
func TestReadGivesBackWhatIsWritten(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0},
		{Name: "name", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "price", Type: pipeline.TypeDecimal, Precision: 10, Scale: 2, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "ok", Type: pipeline.TypeBoolean, KeyPos: -1},
		{Name: "f", Type: pipeline.TypeDouble, KeyPos: -1},
	}}
	rows := [][]pipeline.Value{
		{pipeline.Int(1), pipeline.Text("a"), pipeline.Decimal("-1.50"), pipeline.Int(1700000000123), pipeline.Int(1), pipeline.Float(0.5)},
		{pipeline.Int(2), pipeline.Null, pipeline.Null, pipeline.Null, pipeline.Null, pipeline.Null},
	}
	f := parquet.New()
	file := bytes.NewBuffer(fileOf(t, f, schema, rows))
	var got received
	n, err := f.Read(context.Background(), bytes.NewReader(file.Bytes()), int64(file.Len()), schema, &got)
	if err != nil || n != 2 {
		t.Fatalf("read %d rows: %v", n, err)
	}
	want := [][]string{
		{"0=int:1", "1=bytes:a", "2=dec:-1:18446744073709551466", "3=int:1700000000123", "4=bool:true", "5=f64:0.5"},
		{"0=int:2", "1=null", "2=null", "3=null", "4=null", "5=null"},
	}
	if fmt.Sprint(got.rows) != fmt.Sprint(want) || fmt.Sprint(got.pos) != "[0 1]" {
		t.Fatalf("read %v at %v, want %v at [0 1]", got.rows, got.pos, want)
	}
	if name := f.RowName("data/region-0000/part-00000.parquet", 1); name != "data/region-0000/part-00000.parquet row 2" {
		t.Errorf("RowName = %q", name)
	}

	other := schema
	other.Columns = append([]pipeline.Column{{Name: "other", Type: pipeline.TypeBigint, KeyPos: 0}}, schema.Columns[1:]...)
	if _, err := f.Read(context.Background(), bytes.NewReader(file.Bytes()), int64(file.Len()), other, &received{}); err == nil || !strings.Contains(err.Error(), "no column other") {
		t.Errorf("a file of another table: %v", err)
	}
	if _, err := f.Read(context.Background(), strings.NewReader("id,name\n"), 8, schema, &received{}); err == nil || !strings.Contains(err.Error(), "not a whole Parquet file") {
		t.Errorf("a CSV file: %v", err)
	}
}

// fileOf is a Parquet file of rows in one row group; rows the format refuses are left out.
func fileOf(t *testing.T, f *parquet.Format, schema pipeline.TargetSchema, rows [][]pipeline.Value) []byte {
	t.Helper()
	buf, err := f.NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		buf.Append(r) // a value the sink refuses is a reject: left out
	}
	var out bytes.Buffer
	w, err := f.NewWriter(&out, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(buf.Cut()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
