package parquet_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"
	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

const wantSchema = `message schema {
	required binary k1 (STRING);
	required int64 k2 (INT(64,true));
	optional int32 c_int (INT(32,true));
	optional int32 c_small (INT(16,true));
	optional int32 c_tiny (INT(8,true));
	optional boolean c_bool;
	optional float c_float;
	optional double c_double;
	optional fixed_len_byte_array(9) c_dec (DECIMAL(20,4));
	optional fixed_len_byte_array(16) c_dec38 (DECIMAL(38,10));
	optional int64 c_ts (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));
	optional int32 c_date (DATE);
	optional binary c_bin;
	optional binary c_json (STRING);
	optional binary c_text (STRING);
}`

func TestAllTypesRoundTrip(t *testing.T) {
	parquet.Poisoned(t)
	dir := t.TempDir()
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("9", "h", "q")
	rows := sinktest.AllTypesRows(20000, 1, plan)
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New(), CheckRegions: true}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < len(rows); i += 1000 {
		if err := s.Write(ctx, rows[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := s.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != plan.Count() {
		t.Fatalf("committed %d files, want one per region (%d)", len(infos), plan.Count())
	}
	want := map[string]int{}
	for _, r := range rows {
		want[strings.Join(sinktest.CanonRow(schema, r.Values), "|")]++
	}
	got := 0
	for _, fi := range infos {
		path := filepath.Join(dir, filepath.FromSlash(fi.Path))
		pf, err := sinktest.ReadParquet(path, schema)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(pf.Schema) != wantSchema {
			t.Fatalf("%s schema:\n%s\nwant:\n%s", fi.Path, pf.Schema, wantSchema)
		}
		for _, rg := range pf.Meta.Metadata().RowGroups {
			for _, cc := range rg.Columns {
				if cc.MetaData.Codec != format.Zstd {
					t.Fatalf("%s: column %v codec %v, want ZSTD", fi.Path, cc.MetaData.PathInSchema, cc.MetaData.Codec)
				}
			}
		}
		if int64(len(pf.Rows)) != fi.Rows {
			t.Errorf("%s: read %d rows, FileInfo says %d", fi.Path, len(pf.Rows), fi.Rows)
		}
		if st, _ := os.Stat(path); st.Size() != fi.Bytes {
			t.Errorf("%s: %d bytes, FileInfo says %d", fi.Path, st.Size(), fi.Bytes)
		}
		if !strings.HasPrefix(fi.Path, output.RegionDir(fi.Region)+"/") {
			t.Errorf("%s: not in its region %d folder", fi.Path, fi.Region)
		}
		for i, vals := range pf.Values {
			if reg := plan.Route(vals[0]); reg != fi.Region {
				t.Fatalf("%s row %d: key %q belongs to region %d", fi.Path, i, vals[0].Str, reg)
			}
			k := strings.Join(pf.Rows[i], "|")
			if want[k] == 0 {
				for _, r := range rows {
					if r.Values[0].Str == vals[0].Str && r.Values[1].Num == vals[1].Num {
						t.Logf("want %v", sinktest.CanonRow(schema, r.Values))
					}
				}
				t.Fatalf("%s row %d: unexpected row %v", fi.Path, i, pf.Rows[i])
			}
			want[k]--
			got++
		}
	}
	if got != len(rows) {
		t.Fatalf("read %d rows, wrote %d", got, len(rows))
	}
	st := s.Stats()
	if st.Rows != int64(len(rows)) || st.Files != len(infos) {
		t.Errorf("stats %+v", st)
	}
}

func TestRejects(t *testing.T) {
	parquet.Poisoned(t)
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("m")
	good := sinktest.AllTypesRows(3, 2, plan)
	bad := func(col int, v pipeline.Value) pipeline.Row {
		vals := append([]pipeline.Value(nil), good[0].Values...)
		vals[col] = v
		return pipeline.Row{Values: vals, Region: good[0].Region}
	}
	cases := []struct {
		row  pipeline.Row
		code string
		col  string
	}{
		{bad(0, pipeline.Null), pipeline.CodeNullKey, "k1"},
		{bad(1, pipeline.Text("12")), pipeline.CodeType, "k2"},
		{bad(3, pipeline.Int(40000)), pipeline.CodeType, "c_small"},
		{bad(4, pipeline.Int(-129)), pipeline.CodeType, "c_tiny"},
		{bad(8, pipeline.Decimal("1.23456")), pipeline.CodeType, "c_dec"},             // 5 fractional digits > scale 4
		{bad(8, pipeline.Decimal("12345678901234567.0")), pipeline.CodeType, "c_dec"}, // 17 integer digits > 16
		{bad(8, pipeline.Decimal("abc")), pipeline.CodeType, "c_dec"},
		{bad(9, pipeline.Decimal("1e30")), pipeline.CodeType, "c_dec38"},
		{bad(11, pipeline.Int(1<<40)), pipeline.CodeType, "c_date"},
		// beyond Spark's TIMESTAMP (microseconds in an int64): Spark fails the whole file
		{bad(10, pipeline.Int(files.MaxTimestamp+1)), pipeline.CodeType, "c_ts"},
		{bad(10, pipeline.Int(math.MinInt64)), pipeline.CodeType, "c_ts"},
	}
	buf, err := parquet.New().NewBuffer(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		err := buf.Append(c.row.Values)
		re, ok := err.(*pipeline.RowError)
		if !ok || re.Code != c.code || re.Field != c.col {
			t.Errorf("%s: got %v, want %s on %s", c.col, err, c.code, c.col)
		}
		if ce := files.CheckRow(schema, c.row.Values); ce == nil || ce.Field != c.col {
			t.Errorf("CheckRow %s: got %v", c.col, ce)
		}
	}
	if buf.Rows() != 0 {
		t.Fatalf("rejected rows left %d rows in the buffer", buf.Rows())
	}
	// exact values that look odd but fit are accepted
	for _, v := range []string{"1.23450", "1.2345000000", "-0.0001", "9999999999999999.9999", "1.5e3", "0"} {
		if err := buf.Append(bad(8, pipeline.Decimal(v)).Values); err != nil {
			t.Errorf("%s rejected: %v", v, err)
		}
	}
	// Write reports rejects and writes the rest
	dir := t.TempDir()
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := append([]pipeline.Row{}, good...)
	batch = append(batch, cases[2].row)
	err = s.Write(context.Background(), batch)
	rj, ok := err.(*files.RejectError)
	if !ok || len(rj.Rows) != 1 || rj.Rows[0].Index != 3 {
		t.Fatalf("Write: %v", err)
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, fi := range infos {
		n += fi.Rows
	}
	if n != 3 {
		t.Fatalf("committed %d rows, want 3", n)
	}
}

func TestDecimalValues(t *testing.T) {
	col := pipeline.Column{Name: "d", Type: pipeline.TypeDecimal, Precision: 38, Scale: 3}
	cases := map[string]string{
		"0": "0.000", "-12.340": "-12.340", "+1.5": "1.500", ".5": "0.500", "5.": "5.000",
		"99999999999999999999999999999999999.999":  "99999999999999999999999999999999999.999",
		"-99999999999999999999999999999999999.999": "-99999999999999999999999999999999999.999",
		"1.5E2": "150.000", "12345e-3": "12.345", "-0.001": "-0.001",
	}
	for in, want := range cases {
		d, err := files.DecimalValue(col, pipeline.Decimal(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := string(d.AppendText(nil, col.Scale)); got != want {
			t.Errorf("%s: got %s want %s", in, got, want)
		}
	}
	for _, in := range []string{"100000000000000000000000000000000000.000", "0.0001", "1e40", "", "-", "1.2.3", "NaN"} {
		if _, err := files.DecimalValue(col, pipeline.Decimal(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	d, err := files.DecimalValue(col, pipeline.Float(0.1))
	if err != nil || string(d.AppendText(nil, 3)) != "0.100" {
		t.Errorf("float 0.1: %v %v", d, err)
	}
	_ = sort.Strings
}

// A file whose footer was damaged (a disk error, a partial overwrite) is reported by Verify, the
// check a resume runs on every file its checkpoint lists: arrow's footer decoding panicked on
// some of these (21 of 3,000 random damages of a core-bench file), which crashed the resume.
func TestVerifyDamagedFooterIsAnError(t *testing.T) {
	schema := sinktest.AllTypes()
	f := parquet.New()
	var rows [][]pipeline.Value
	for _, r := range sinktest.AllTypesRows(2000, 5, sinktest.VarcharPlan("m")) {
		rows = append(rows, r.Values)
	}
	good := fileOf(t, f, schema, rows)
	if err := f.Verify(bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatalf("the whole file: %v", err)
	}
	failed := 0
	for seed := uint64(0); seed < 3000; seed++ {
		b := append([]byte(nil), good...)
		r := rand.New(rand.NewPCG(seed, 1))
		for k := 0; k < 1+r.IntN(4); k++ { // a few bytes of the footer's last 3,000
			b[len(b)-1-r.IntN(min(3000, len(b)))] = byte(r.IntN(256))
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("damage %d: Verify panicked: %v", seed, p)
				}
			}()
			if f.Verify(bytes.NewReader(b), int64(len(b))) != nil {
				failed++
			}
		}()
		if t.Failed() {
			return
		}
	}
	if failed == 0 {
		t.Fatal("no damage was noticed: the test damages nothing")
	}
}
