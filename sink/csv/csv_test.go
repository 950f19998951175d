package csv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/sinktest"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plan := sinktest.VarcharPlan("h", "q")
	schema, rows := sinktest.ForCSV(sinktest.AllTypes(), sinktest.AllTypesRows(5000, 4, plan))
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: csv.New(), CheckRegions: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, r := range rows {
		want[strings.Join(render(schema, r.Values), "\x00")]++
	}
	n := 0
	for _, fi := range infos {
		raw, err := os.ReadFile(filepath.Join(dir, fi.Path))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		if lines[0] != "k1,k2,c_int,c_small,c_tiny,c_bool,c_float,c_double,c_dec,c_dec38,c_ts,c_date,c_json,c_text" {
			t.Fatalf("header %q", lines[0])
		}
		for i, line := range lines[1:] {
			rec, err := sparkFields(line)
			if err != nil || len(rec) != len(schema.Columns) {
				t.Fatalf("%s line %d %q: %d fields, %v", fi.Path, i+2, line, len(rec), err)
			}
			k := strings.Join(rec, "\x00")
			if want[k] == 0 {
				t.Fatalf("%s line %d: unexpected %q", fi.Path, i+2, rec)
			}
			want[k]--
			n++
			if got := plan.Route(pipeline.Text(rec[0])); got != fi.Region {
				t.Fatalf("%s: key %q in region %d", fi.Path, rec[0], got)
			}
		}
		if int64(len(lines)-1) != fi.Rows {
			t.Errorf("%s: %d records, FileInfo %d", fi.Path, len(lines)-1, fi.Rows)
		}
	}
	if n != len(rows) {
		t.Fatalf("read %d rows of %d", n, len(rows))
	}
}

// render is the expected CSV text of each value, "NULL" for null.
func render(schema pipeline.TargetSchema, vals []pipeline.Value) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		col := schema.Columns[i]
		switch {
		case v.IsNull():
			out[i] = "NULL"
		case col.Type == pipeline.TypeDate:
			out[i] = sinktest.DateString(v.Num)
		case col.Type == pipeline.TypeTimestamp:
			out[i] = time.UnixMilli(v.Num).UTC().Format("2006-01-02T15:04:05.000Z")
		default:
			out[i] = sinktest.Canon(col, v)
		}
	}
	return out
}

// sparkFields splits one line as Spark's CSV reader does with its defaults (quote ", escape \,
// an empty unquoted field null): "NULL" for null.
func sparkFields(line string) ([]string, error) {
	var out []string
	for {
		if strings.HasPrefix(line, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				b.WriteByte(line[i])
			}
			if i >= len(line) {
				return out, fmt.Errorf("unclosed quote")
			}
			out = append(out, b.String())
			line = line[i+1:]
		} else {
			j := strings.IndexByte(line, ',')
			if j < 0 {
				j = len(line)
			}
			if j == 0 {
				out = append(out, "NULL")
			} else {
				out = append(out, line[:j])
			}
			line = line[j:]
		}
		if line == "" {
			return out, nil
		}
		if line[0] != ',' {
			return out, fmt.Errorf("text after a quoted field: %q", line)
		}
		line = line[1:]
	}
}

func TestFields(t *testing.T) {
	f := csv.New()
	cases := []struct {
		col  pipeline.Column
		v    pipeline.Value
		want string
	}{
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Null, ``},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(`a "b", c`), `"a \"b\", c"`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(`back\slash\`), `"back\\slash\\"`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(`\"`), `"\\\""`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text("#x"), `#x`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(" pad"), `" pad"`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text("plain"), `plain`},
		{pipeline.Column{Type: pipeline.TypeTimestamp, KeyPos: -1}, pipeline.Int(1700000000123), `2023-11-14T22:13:20.123Z`},
		{pipeline.Column{Type: pipeline.TypeTimestamp, KeyPos: -1}, pipeline.Int(-62135596800000), `0001-01-01T00:00:00.000Z`},
		{pipeline.Column{Type: pipeline.TypeTimestamp, KeyPos: -1}, pipeline.Int(-1), `1969-12-31T23:59:59.999Z`},
		{pipeline.Column{Type: pipeline.TypeDate, KeyPos: -1}, pipeline.Int(-719162), `0001-01-01`},
		{pipeline.Column{Type: pipeline.TypeDate, KeyPos: -1}, pipeline.Int(19000), `2022-01-08`},
		{pipeline.Column{Type: pipeline.TypeDate, KeyPos: -1}, pipeline.Int(-1), `1969-12-31`},
		{pipeline.Column{Type: pipeline.TypeBoolean, KeyPos: -1}, pipeline.Bool(true), `true`},
		{pipeline.Column{Type: pipeline.TypeDouble, KeyPos: -1}, pipeline.Float(0.1), `0.1`},
		{pipeline.Column{Type: pipeline.TypeFloat, KeyPos: -1}, pipeline.Float(0.1), `0.1`},
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 10, Scale: 3, KeyPos: -1}, pipeline.Decimal("-12.34"), `-12.340`},
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 10, Scale: 0, KeyPos: -1}, pipeline.Int(42), `42`},
		// DECIMAL(38,18), CQL decimal's default: unscaled values at and beyond 2^63.
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 38, Scale: 18, KeyPos: -1}, pipeline.Decimal("18.31"), `18.310000000000000000`},
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 38, Scale: 18, KeyPos: -1}, pipeline.Decimal("-18.31"), `-18.310000000000000000`},
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 38, Scale: 18, KeyPos: -1}, pipeline.Decimal("9.223372036854775808"), `9.223372036854775808`},
		{pipeline.Column{Type: pipeline.TypeDecimal, Precision: 38, Scale: 18, KeyPos: -1}, pipeline.Decimal("9.223372036854775807"), `9.223372036854775807`},
	}
	for _, c := range cases {
		got, err := f.AppendValue(nil, c.col, c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %v: got %q %v, want %q", c.col.Type, c.v, got, err, c.want)
		}
	}
	if _, err := f.AppendValue(nil, pipeline.Column{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, pipeline.Null); err == nil {
		t.Error("null key accepted")
	}
}

// Text that is not UTF-8 is rejected by the CSV format too (code "encoding"), as by Parquet: the
// same row is written or rejected whichever format the run uses.
func TestInvalidUTF8Rejected(t *testing.T) {
	f := csv.New()
	for _, col := range []pipeline.Column{{Name: "c", Type: pipeline.TypeVarchar, KeyPos: -1}, {Name: "c", Type: pipeline.TypeJSON, KeyPos: -1}} {
		for _, v := range []pipeline.Value{pipeline.Text("DELIV\xff\xfeERED"), pipeline.Bytes("\xe4\xb8")} {
			_, err := f.AppendValue(nil, col, v)
			re, ok := err.(*pipeline.RowError)
			if !ok || re.Code != pipeline.CodeEncoding || re.Field != "c" {
				t.Errorf("%s %q: %v; want an encoding reject", col.Type, v.Str, err)
			}
		}
	}
}

// Spark's CSV reader, which Lindorm's bulkload runs with the header and delimiter settings alone,
// read back other values than the source's (deploy/dev/spark, Spark 4.0.1): an empty string
// became NULL, a line break split the row in two, RFC 4180's doubled quote ("") was taken as the
// end of the field, an epoch-millisecond TIMESTAMP was NULL and a hex VARBINARY loaded the hex
// text's own bytes. The empty string and line breaks are now rejects (csv_value) naming the
// column and Parquet, quotes and backslashes are escaped as Spark reads them, TIMESTAMP is ISO
// 8601 in UTC, and a VARBINARY column is refused before anything is written.
func TestValuesSparkCannotReadAreRefused(t *testing.T) {
	f := csv.New()
	for _, c := range []struct {
		v    string
		want string
	}{{"", "empty string"}, {"a\nb", "line break"}, {"a\rb", "line break"}, {"\r\n", "line break"}} {
		for _, col := range []pipeline.Column{{Name: "c", Type: pipeline.TypeVarchar, KeyPos: -1}, {Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "j", Type: pipeline.TypeJSON, KeyPos: -1}} {
			_, err := f.AppendValue(nil, col, pipeline.Text(c.v))
			re, ok := err.(*pipeline.RowError)
			if !ok || re.Code != pipeline.CodeCSVValue || re.Field != col.Name || !strings.Contains(re.Message, c.want) || !strings.Contains(re.Message, "--format parquet") {
				t.Errorf("%s %q: %v; want a csv_value reject naming the %s and Parquet", col.Name, c.v, err, c.want)
			}
		}
	}
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "payload", Type: pipeline.TypeVarbinary, KeyPos: -1}}}
	err := f.CheckSchema(schema)
	if err == nil || !strings.Contains(err.Error(), `"payload" is VARBINARY`) || !strings.Contains(err.Error(), "--format parquet") {
		t.Errorf("VARBINARY column: %v", err)
	}
	if _, err := f.NewBuffer(schema); err == nil {
		t.Error("a buffer for a VARBINARY column")
	}
	if _, err := csv.NewDelimiter('\\'); err == nil {
		t.Error("a backslash delimiter: Spark's escape character")
	}
}

// With --sort the sink holds rows before it appends them: a value the CSV format refuses must be a
// reject at Write there too. Before, the sorted row reached Append at Commit and failed the run
// ("sorted row no longer fits").
func TestSortedWriteRejectsWhatCSVRefuses(t *testing.T) {
	dir := t.TempDir()
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "s", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	plan := pipeline.RegionPlan{Type: pipeline.TypeBigint, Strategy: "single"}
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: csv.New(), Sort: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []pipeline.Row{
		{Values: []pipeline.Value{pipeline.Int(2), pipeline.Text("b")}},
		{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("")}},
		{Values: []pipeline.Value{pipeline.Int(3), pipeline.Text("x\ny")}},
		{Values: []pipeline.Value{pipeline.Int(0), pipeline.Text(`a"\`)}},
	}
	err = s.Write(context.Background(), rows)
	rj, ok := err.(*files.RejectError)
	if !ok || len(rj.Rows) != 2 || rj.Rows[0].Index != 1 || rj.Rows[1].Index != 2 || rj.Rows[0].Err.Code != pipeline.CodeCSVValue {
		t.Fatalf("Write: %v", err)
	}
	infos, err := s.Commit(context.Background())
	if err != nil || len(infos) != 1 {
		t.Fatalf("Commit: %v %v", infos, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, infos[0].Path))
	if want := "k,s\n0,\"a\\\"\\\\\"\n2,b\n"; err != nil || string(data) != want {
		t.Errorf("file %q, want %q (%v)", data, want, err)
	}
}

// Spark's CSV reader drops a line before parsing it when the line is blank to Java's
// String.trim (every character at or below U+0020), and some Spark 3 releases also drop a line
// that begins with U+0000, their default comment character (CSVExprUtils.filterCommentAndEmpty): a row of a
// one-column table holding "\x01", or a row whose first value begins with a NUL, was lost by the
// bulkload without a word. A value that begins or ends with such a character is quoted, so no
// line is blank or begins with it, and reads back as written.
func TestNoLineIsOneSparkSkips(t *testing.T) {
	f := csv.New()
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}}}
	values := []string{"\x01", "\x00", "\x00a", "a\x1f", "\x0b \x0c", "\x1fb\x7f", "a\x00b"}
	buf, err := f.NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := buf.Append([]pipeline.Value{pipeline.Text(v)}); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
	}
	var out bytes.Buffer
	w, err := f.NewWriter(&out, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(buf.Cut()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")[1:]
	for i, line := range lines {
		if strings.TrimFunc(line, func(r rune) bool { return r <= ' ' }) == "" || strings.HasPrefix(line, "\x00") {
			t.Errorf("%q is written as the line %q, which Spark skips", values[i], line)
		}
	}
	var got received
	if _, err := f.Read(context.Background(), bytes.NewReader(out.Bytes()), int64(out.Len()), schema, &got); err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if i >= len(got.rows) || got.rows[i][0] != "bytes:"+v {
			t.Errorf("%q read back as %q", v, got.rows)
		}
	}
}

// A column whose name holds a line break cannot be a CSV header field: Spark's CSV reader
// (Lindorm's bulkload) reads one line per record, so the rest of the header would load as a row,
// and rekey's own reader (verify) fails the file. Such a table is refused before anything is
// written, naming the column and Parquet. Before, the header was written across two lines.
func TestColumnNameWithALineBreakIsRefused(t *testing.T) {
	f := csv.New()
	for _, name := range []string{"a\nb", "a\rb", "ab\r\n"} {
		schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
			{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: name, Type: pipeline.TypeVarchar, KeyPos: -1}}}
		err := f.CheckSchema(schema)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) || !strings.Contains(err.Error(), "--format parquet") {
			t.Errorf("column %q: %v; want an error naming it and --format parquet", name, err)
		}
		var out bytes.Buffer
		if _, err := f.NewWriter(&out, schema); err == nil {
			t.Errorf("column %q: header written as %q", name, out.String())
		}
	}
}
