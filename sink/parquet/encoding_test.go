package parquet_test

import (
	"context"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// Before, `DELIV\xFF\xFEERED` written into a Parquet STRING column made the whole file unreadable
// (DuckDB: "Invalid string encoding found in Parquet file"). Whatever produced it, the sink rejects
// a VARCHAR or JSON value that is not UTF-8 (code "encoding", naming the column), writes every
// other row, and a VARBINARY column still takes any bytes.
func TestInvalidUTF8NeverReachesAParquetFile(t *testing.T) {
	parquet.Poisoned(t)
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("m")
	good := sinktest.AllTypesRows(50, 3, plan)
	with := func(col int, v pipeline.Value) pipeline.Row {
		vals := append([]pipeline.Value(nil), good[0].Values...)
		vals[col] = v
		return pipeline.Row{Values: vals, Region: good[0].Region}
	}
	bad := []struct {
		row pipeline.Row
		col string
	}{
		{with(14, pipeline.Text("DELIV\xff\xfeERED")), "c_text"},
		{with(14, pipeline.Bytes("\xe4\xb8")), "c_text"}, // a blob's bytes in a VARCHAR column
		{with(13, pipeline.Text("{\"a\":\"\xff\"}")), "c_json"},
		{with(0, pipeline.Text("k\xc0\xaf")), "k1"}, // an overlong '/' in the key
	}
	binary := with(12, pipeline.Bytes("\xff\xfe\x00")) // VARBINARY: any bytes
	for _, sorted := range []bool{false, true} {
		dir := t.TempDir()
		s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), Sort: sorted}, nil)
		if err != nil {
			t.Fatal(err)
		}
		batch := append([]pipeline.Row{}, good...)
		for _, b := range bad {
			batch = append(batch, b.row)
		}
		batch = append(batch, binary)
		err = s.Write(context.Background(), batch)
		rj, ok := err.(*pipeline.RowRejects)
		if !ok || len(rj.Rows) != len(bad) {
			t.Fatalf("sort=%v: Write: %v; want %d rejects", sorted, err, len(bad))
		}
		for i, r := range rj.Rows {
			if r.Index != len(good)+i || r.Err.Code != pipeline.CodeEncoding || r.Err.Field != bad[i].col {
				t.Errorf("sort=%v: reject %d: index %d %v; want index %d, encoding on %s", sorted, i, r.Index, r.Err, len(good)+i, bad[i].col)
			}
		}
		if ce := files.CheckRow(schema, bad[0].row.Values); ce == nil || ce.Code != pipeline.CodeEncoding {
			t.Errorf("CheckRow: %v", ce)
		}
		infos, err := s.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows, bin := 0, 0
		for _, fi := range infos {
			pf, err := sinktest.ReadParquet(filepath.Join(dir, filepath.FromSlash(fi.Path)), schema)
			if err != nil {
				t.Fatalf("sort=%v: %s unreadable: %v", sorted, fi.Path, err)
			}
			for _, vals := range pf.Values {
				rows++
				for c, v := range vals {
					if schema.Columns[c].Type != pipeline.TypeVarbinary && !utf8.ValidString(v.Str) {
						t.Errorf("sort=%v: %s: STRING column %s holds invalid UTF-8 %q", sorted, fi.Path, schema.Columns[c].Name, v.Str)
					}
				}
				if vals[12].Str == "\xff\xfe\x00" {
					bin++
				}
			}
		}
		if rows != len(good)+1 || bin != 1 {
			t.Errorf("sort=%v: read %d rows (%d with the binary value), want %d (1)", sorted, rows, bin, len(good)+1)
		}
	}
}

// Every STRING value's UTF-8 verdict is utf8.ValidString's, whatever its length and wherever a
// non-ASCII or invalid sequence sits in it: in a key column (plain), in a dictionary column as
// a new entry, and as a value the dictionary already holds.
func TestTextValuesAreValidUTF8AtEveryLengthAndPosition(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "c", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	buf, err := parquet.New().NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	inserts := []string{"é", "中", "😀", "\xff", "\xc3", "\xe4\xb8", "\x80", "\xed\xa0\x80", "\xc0\xaf"}
	for n := 0; n <= 40; n++ {
		ascii := "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"[:n]
		values := []string{ascii}
		for pos := 0; pos <= n; pos++ {
			for _, ins := range inserts {
				values = append(values, ascii[:pos]+ins+ascii[pos:])
			}
		}
		for _, v := range values {
			valid := utf8.ValidString(v)
			for _, row := range [][]pipeline.Value{
				{pipeline.Text(v), pipeline.Text("x")},
				{pipeline.Text("k"), pipeline.Text(v)},
				{pipeline.Text("k"), pipeline.Text(v)}, // a dictionary hit when valid
			} {
				err := buf.Append(row)
				if valid && err != nil {
					t.Fatalf("%q: %v; want it kept", v, err)
				}
				re, ok := err.(*pipeline.RowError)
				if !valid && (!ok || re.Code != pipeline.CodeEncoding) {
					t.Fatalf("%q: %v; want an encoding reject", v, err)
				}
			}
		}
		buf.Cut().Release()
	}
}
