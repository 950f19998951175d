package parquet_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// dictSchema: lo has 5 values, hi is unique, mix is low-cardinality in the first half of the rows
// and unique in the second, so that its dictionary works for the first chunks and overflows later.
// The numeric columns repeat the pattern: nlo, dlo, ilo low-cardinality (with nulls), ts unique,
// nmix and dmix low then unique, nrev unique then low (the file holds it plain, later chunks
// are dictionary-encoded in memory and expanded).
func dictSchema() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "d", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0},
		{Name: "lo", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "hi", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "mix", Type: pipeline.TypeJSON, KeyPos: -1},
		{Name: "nlo", Type: pipeline.TypeBigint, KeyPos: -1},
		{Name: "dlo", Type: pipeline.TypeDecimal, Precision: 10, Scale: 2, KeyPos: -1},
		{Name: "ilo", Type: pipeline.TypeSmallint, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "nmix", Type: pipeline.TypeBigint, KeyPos: -1},
		{Name: "dmix", Type: pipeline.TypeDecimal, Precision: 30, Scale: 3, KeyPos: -1},
		{Name: "nrev", Type: pipeline.TypeInteger, KeyPos: -1},
	}}
}

func dictRows(n int) []pipeline.Row {
	rows := make([]pipeline.Row, n)
	for i := range rows {
		mix := pipeline.Text(fmt.Sprintf("m%d", i%3))
		if i >= n/2 {
			mix = pipeline.Text(fmt.Sprintf("unique-%08d", i))
		}
		lo := pipeline.Text([]string{"a", "bb", "", "dddd", "e"}[i%5])
		if i%7 == 0 {
			lo = pipeline.Null
		}
		nlo := pipeline.Int(int64(i%4) - 2)
		dlo := pipeline.DecimalUnscaled(fmt.Sprintf("%d.25", i%6), int64(i%6)*100+25, 2)
		ilo := pipeline.Int(int64(i%9) * -1000)
		if i%11 == 0 {
			nlo, dlo, ilo = pipeline.Null, pipeline.Null, pipeline.Null
		}
		nmix, dmix := pipeline.Int(int64(i%3)), pipeline.Decimal(fmt.Sprintf("-%d.5", i%3))
		if i >= n/2 {
			nmix, dmix = pipeline.Int(int64(i)*1_000_003), pipeline.Decimal(fmt.Sprintf("%d.125", i*977))
		}
		nrev := pipeline.Int(int64(i % 5))
		if i < 600 { // overflows the 2 KiB dictionary within the first chunk
			nrev = pipeline.Int(int64(-i) * 31)
		}
		rows[i] = pipeline.Row{Values: []pipeline.Value{pipeline.Int(int64(i)), lo, pipeline.Text(fmt.Sprintf("h%09d", i*7919)), mix,
			nlo, dlo, ilo, pipeline.Int(1_700_000_000_000 + int64(i)*7), nmix, dmix, nrev}}
	}
	return rows
}

func TestDictionaryFallbacks(t *testing.T) {
	parquet.Poisoned(t)
	dir := t.TempDir()
	schema := dictSchema()
	rows := dictRows(40000)
	// 64 KiB buffers: many chunks (row groups) per file; a 2 KiB dictionary overflows quickly
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: pipeline.RegionPlan{Type: pipeline.TypeBigint}, Format: parquet.NewWithDictMax(2 << 10), Memory: 64 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 1000 {
		if err := s.Write(context.Background(), rows[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("%d files", len(infos))
	}
	pf, err := sinktest.ReadParquet(filepath.Join(dir, infos[0].Path), schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Rows) != len(rows) || pf.RowGroups < 5 {
		t.Fatalf("%d rows in %d row groups", len(pf.Rows), pf.RowGroups)
	}
	for i, r := range rows {
		want := sinktest.CanonRow(schema, r.Values)
		for c := range want {
			if pf.Rows[i][c] != want[c] {
				t.Fatalf("row %d col %s: got %q want %q", i, schema.Columns[c].Name, pf.Rows[i][c], want[c])
			}
		}
	}
	// lo is dictionary-encoded in every row group, hi in none; mix starts with a dictionary
	// (enabled in the file) and falls back to plain once it overflows
	encodings := func(col int) (dict, plainOnly int) {
		for _, rg := range pf.Meta.Metadata().RowGroups {
			hasDict := false
			for _, e := range rg.Columns[col].MetaData.Encoding {
				//lint:ignore SA1019 PlainDictionary is what Parquet 1.0 writers record for the same thing
				if e == format.RLEDictionary || e == format.PlainDictionary {

					hasDict = true
				}
			}
			if hasDict {
				dict++
			} else {
				plainOnly++
			}
		}
		return
	}
	if d, p := encodings(1); p != 0 || d == 0 {
		t.Errorf("lo: %d dictionary row groups, %d plain", d, p)
	}
	if d, _ := encodings(2); d != 0 {
		t.Errorf("hi: %d dictionary row groups", d)
	}
	if d, _ := encodings(3); d == 0 {
		t.Errorf("mix: no dictionary row group")
	}
	for _, col := range []int{4, 5, 6} {
		if d, p := encodings(col); p != 0 || d == 0 {
			t.Errorf("%s: %d dictionary row groups, %d plain", schema.Columns[col].Name, d, p)
		}
	}
	if d, _ := encodings(7); d != 0 {
		t.Errorf("ts: %d dictionary row groups", d)
	}
	for _, col := range []int{8, 9} {
		if d, p := encodings(col); d == 0 {
			t.Errorf("%s: %d dictionary row groups, %d plain", schema.Columns[col].Name, d, p)
		}
	}
}

// TestKeyStatistics checks the footer's min/max of the key columns against the data of each row
// group: chunk memory is recycled after a row group is written, so statistics that kept a
// reference into it would show up here.
func TestKeyStatistics(t *testing.T) {
	parquet.Poisoned(t)
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("m")
	rows := sinktest.AllTypesRows(30000, 21, plan)
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), Memory: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 500 {
		if err := s.Write(context.Background(), rows[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range infos {
		pf, err := sinktest.ReadParquet(filepath.Join(dir, fi.Path), schema)
		if err != nil {
			t.Fatal(err)
		}
		first := 0
		rgs := pf.Meta.Metadata().RowGroups
		if len(rgs) < 3 {
			t.Fatalf("%s: %d row groups, want several", fi.Path, len(rgs))
		}
		for g, rg := range rgs {
			n := int(rg.NumRows)
			vals := pf.Values[first : first+n]
			first += n
			st := rg.Columns[0].MetaData.Statistics
			minS, maxS := vals[0][0].Str, vals[0][0].Str
			var minI, maxI int64 = vals[0][1].Num, vals[0][1].Num
			for _, v := range vals {
				minS, maxS = min(minS, v[0].Str), max(maxS, v[0].Str)
				minI, maxI = min(minI, v[1].Num), max(maxI, v[1].Num)
			}
			if !bytes.Equal(st.MinValue, []byte(minS)) || !bytes.Equal(st.MaxValue, []byte(maxS)) {
				t.Fatalf("%s row group %d: k1 statistics [%q, %q], data [%q, %q]", fi.Path, g, st.MinValue, st.MaxValue, minS, maxS)
			}
			st2 := rg.Columns[1].MetaData.Statistics
			if len(st2.MinValue) != 8 || int64(binary.LittleEndian.Uint64(st2.MinValue)) != minI || int64(binary.LittleEndian.Uint64(st2.MaxValue)) != maxI {
				t.Fatalf("%s row group %d: k2 statistics wrong", fi.Path, g)
			}
		}
	}
}

// siblingSchema is the sibling tests' table: a key, a mostly distinct timestamp and a
// low-cardinality text.
var siblingSchema = pipeline.TargetSchema{Table: "s", KeyLen: 1, Columns: []pipeline.Column{
	{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0},
	{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
	{Name: "lo", Type: pipeline.TypeVarchar, KeyPos: -1},
}}

// A timestamp column is mostly distinct: the first two chunks that give its dictionary up, in
// any of a buffer's siblings, make it plain in every sibling, in the chunks under way (at their
// next new value) and in those to come; a low-cardinality column keeps its dictionary. The
// values read back the same from every sibling's file.
func TestSiblingsShareDictionaryVerdicts(t *testing.T) {
	schema := siblingSchema
	f := parquet.New()
	a, err := f.NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, c := a.(files.Siblings).Sibling(), a.(files.Siblings).Sibling()
	rows := map[files.Buffer][][]pipeline.Value{}
	next := int64(0)
	add := func(buf files.Buffer, n int) {
		for range n {
			r := []pipeline.Value{pipeline.Int(next), pipeline.Int(1_700_000_000_000 + next*7), pipeline.Text([]string{"x", "y", "z"}[next%3])}
			next++
			if err := buf.Append(r); err != nil {
				t.Fatal(err)
			}
			rows[buf] = append(rows[buf], r)
		}
	}
	add(c, 100)
	add(a, 5000) // gives ts up at 4096 rows: once
	if !parquet.DictMode(c, 1) || !parquet.DictMode(b, 1) {
		t.Fatal("one chunk's give-up made the column plain in the siblings")
	}
	add(b, 5000) // twice in a row: plain for all
	add(c, 1)
	if parquet.DictMode(c, 1) || !parquet.DictMode(c, 2) {
		t.Fatalf("c's chunk under way: ts dictionary %v (want plain), lo dictionary %v (want kept)", parquet.DictMode(c, 1), parquet.DictMode(c, 2))
	}
	d := c.(files.Siblings).Sibling()
	if parquet.DictMode(d, 1) || !parquet.DictMode(d, 2) {
		t.Fatal("a new sibling's ts must start plain, lo with a dictionary")
	}
	add(d, 10)
	for i, buf := range []files.Buffer{a, b, c, d} {
		checkCutRows(t, fmt.Sprint("buffer ", i), f, buf, schema, rows[buf])
	}
	if parquet.DictMode(a, 1) || !parquet.DictMode(a, 2) {
		t.Fatal("after a cut, a's next chunk: ts plain, lo with a dictionary")
	}
}

// A migrate's regions are siblings filled by different workers at once: what one region learns
// (a timestamp column is not worth a dictionary) the others use, and every row reads back.
func TestSiblingsFilledConcurrently(t *testing.T) {
	schema := siblingSchema
	f := parquet.New()
	bufs, err := files.NewBuffers(f, schema, 4)
	if err != nil {
		t.Fatal(err)
	}
	const chunks, rows = 3, 5000
	files := make([][]byte, len(bufs))
	var wg sync.WaitGroup
	for i, buf := range bufs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			w, err := f.NewWriter(&out, schema)
			if err != nil {
				t.Error(err)
				return
			}
			for c := range chunks {
				for r := range rows {
					n := int64((i*chunks+c)*rows + r)
					if err := buf.Append([]pipeline.Value{pipeline.Int(n), pipeline.Int(1_700_000_000_000 + n), pipeline.Text([]string{"x", "y"}[n%2])}); err != nil {
						t.Error(err)
						return
					}
				}
				ch := buf.Cut()
				if err := w.Write(ch); err != nil {
					t.Error(err)
				}
				ch.Release()
			}
			if err := w.Close(); err != nil {
				t.Error(err)
			}
			files[i] = out.Bytes()
		}()
	}
	wg.Wait()
	for i, buf := range bufs {
		if parquet.DictMode(buf, 1) || !parquet.DictMode(buf, 2) {
			t.Fatalf("buffer %d: ts dictionary %v (want plain: given up by the regions together), lo %v (want kept)", i, parquet.DictMode(buf, 1), parquet.DictMode(buf, 2))
		}
		var want [][]pipeline.Value
		for r := range chunks * rows {
			n := int64(i*chunks*rows + r)
			want = append(want, []pipeline.Value{pipeline.Int(n), pipeline.Int(1_700_000_000_000 + n), pipeline.Text([]string{"x", "y"}[n%2])})
		}
		checkFileRows(t, fmt.Sprint("buffer ", i), files[i], schema, want)
	}
}

// checkFileRows reads a Parquet file with the tests' independent reader and compares its rows with want.
// checkCutRows cuts buf's rows, writes them as one file and checks that it holds want.
func checkCutRows(t *testing.T, name string, f *parquet.Format, buf files.Buffer, schema pipeline.TargetSchema, want [][]pipeline.Value) {
	t.Helper()
	var out bytes.Buffer
	w, err := f.NewWriter(&out, schema)
	if err != nil {
		t.Fatal(err)
	}
	ch := buf.Cut()
	if err := w.Write(ch); err != nil {
		t.Fatal(err)
	}
	ch.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkFileRows(t, name, out.Bytes(), schema, want)
}

func checkFileRows(t *testing.T, name string, file []byte, schema pipeline.TargetSchema, want [][]pipeline.Value) {
	t.Helper()
	pf, err := sinktest.ReadParquetAt(bytes.NewReader(file), int64(len(file)), name, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(pf.Rows) != len(want) {
		t.Fatalf("%s: %d rows, want %d", name, len(pf.Rows), len(want))
	}
	for r := range want {
		w := sinktest.CanonRow(schema, want[r])
		for col := range w {
			if pf.Rows[r][col] != w[col] {
				t.Fatalf("%s row %d col %d: %q, want %q", name, r, col, pf.Rows[r][col], w[col])
			}
		}
	}
}

// A column's distinctness is judged on its values, not its rows: a column of distinct values
// that is null in half the rows gives its dictionary up like one without nulls (its entries are
// never more than half its rows), alone at dictProbeRows rows and among siblings at
// earlyProbeRows, while a half-null column of few values keeps its dictionary; every row reads
// back.
func TestHalfNullDistinctColumnGivesUpDictionary(t *testing.T) {
	schema := siblingSchema
	f := parquet.New()
	for _, tc := range []struct {
		name    string
		sibling bool
		rows    int
	}{{"alone", false, 4200}, {"siblings", true, 1100}} {
		t.Run(tc.name, func(t *testing.T) {
			buf, err := f.NewBuffer(schema)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sibling {
				buf = buf.(files.Siblings).Sibling()
			}
			var rows [][]pipeline.Value
			for i := range tc.rows {
				ts, lo := pipeline.Int(1_700_000_000_000+int64(i)*7), pipeline.Text([]string{"x", "y", "z"}[i%3])
				if i%2 == 1 {
					ts, lo = pipeline.Null, pipeline.Null
				}
				r := []pipeline.Value{pipeline.Int(int64(i)), ts, lo}
				if err := buf.Append(r); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, r)
			}
			if parquet.DictMode(buf, 1) || !parquet.DictMode(buf, 2) {
				t.Fatalf("after %d rows, half null: ts (distinct) dictionary %v, want plain; lo (3 values) dictionary %v, want kept",
					tc.rows, parquet.DictMode(buf, 1), parquet.DictMode(buf, 2))
			}
			checkCutRows(t, tc.name, f, buf, schema, rows)
		})
	}
}
