package csv_test

import (
	"context"
	stdcsv "encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/sinktest"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h", "q")
	rows := sinktest.AllTypesRows(5000, 4, plan)
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
		// encoding/csv loses the difference between "" and an empty field: look at the raw
		// fields too, through LazyQuotes=false strict parsing plus a raw scan below
		rd := stdcsv.NewReader(strings.NewReader(string(raw)))
		rd.FieldsPerRecord = len(schema.Columns)
		recs, err := rd.ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", fi.Path, err)
		}
		header := strings.Join(recs[0], ",")
		if header != "k1,k2,c_int,c_small,c_tiny,c_bool,c_float,c_double,c_dec,c_dec38,c_ts,c_date,c_bin,c_json,c_text" {
			t.Fatalf("header %q", header)
		}
		nulls := rawNulls(raw, len(schema.Columns))
		for i, rec := range recs[1:] {
			for c := range rec {
				if nulls[i][c] {
					rec[c] = "NULL"
				}
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
		if int64(len(recs)-1) != fi.Rows {
			t.Errorf("%s: %d records, FileInfo %d", fi.Path, len(recs)-1, fi.Rows)
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
		if v.IsNull() {
			out[i] = "NULL"
			continue
		}
		switch col.Type {
		case pipeline.TypeDate:
			out[i] = sinktest.DateString(v.Num)
		default:
			// encoding/csv drops the CR of a CRLF even inside quotes (documented)
			out[i] = strings.ReplaceAll(sinktest.Canon(col, v), "\r\n", "\n")
		}
	}
	return out
}

// rawNulls finds, per record, which fields are empty and unquoted (null), scanning the raw text.
func rawNulls(raw []byte, ncols int) [][]bool {
	var out [][]bool
	i := 0
	// skip header
	for raw[i] != '\n' {
		i++
	}
	i++
	for i < len(raw) {
		rec := make([]bool, ncols)
		for c := 0; c < ncols; c++ {
			if raw[i] == '"' {
				i++
				for {
					if raw[i] == '"' {
						if i+1 < len(raw) && raw[i+1] == '"' {
							i += 2
							continue
						}
						i++
						break
					}
					i++
				}
			} else {
				start := i
				for raw[i] != ',' && raw[i] != '\n' {
					i++
				}
				rec[c] = i == start
			}
			i++ // delimiter or newline
		}
		out = append(out, rec)
	}
	return out
}

func TestFields(t *testing.T) {
	f := csv.New()
	cases := []struct {
		col  pipeline.Column
		v    pipeline.Value
		want string
	}{
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Null, ``},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(""), `""`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(`a "b", c`), `"a ""b"", c"`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text("x\ny"), "\"x\ny\""},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text(" pad"), `" pad"`},
		{pipeline.Column{Type: pipeline.TypeVarchar, KeyPos: -1}, pipeline.Text("plain"), `plain`},
		{pipeline.Column{Type: pipeline.TypeVarbinary, KeyPos: -1}, pipeline.Bytes("\x00\xffA"), `00ff41`},
		{pipeline.Column{Type: pipeline.TypeVarbinary, KeyPos: -1}, pipeline.Bytes(""), `""`},
		{pipeline.Column{Type: pipeline.TypeTimestamp, KeyPos: -1}, pipeline.Int(1700000000123), `1700000000123`},
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
// same row is written or rejected whichever format the run uses. VARBINARY is hex.
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
	if got, err := f.AppendValue(nil, pipeline.Column{Type: pipeline.TypeVarbinary, KeyPos: -1}, pipeline.Bytes("\xff\xfe")); err != nil || string(got) != "fffe" {
		t.Errorf("varbinary: %q %v", got, err)
	}
}
