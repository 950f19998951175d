package parquet_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/format"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// writeRows writes rows through the region sink and returns the committed files' paths.
func writeRows(t *testing.T, schema pipeline.TargetSchema, plan pipeline.RegionPlan, rows []pipeline.Row) []string {
	t.Helper()
	dir := t.TempDir()
	s, err := files.New(context.Background(), files.Config{Store: sinktest.Folder(t, dir), Schema: schema, Plan: plan, Format: parquet.New()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) > 0 {
		if err := s.Write(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := s.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, fi := range infos {
		paths = append(paths, filepath.Join(dir, filepath.FromSlash(fi.Path)))
	}
	return paths
}

// Before, arrow v15 wrote repetition_type=REPEATED on the root schema element, which the Parquet
// format forbids (PARQUET-843, apache/arrow-go#722); readers such as hyparquet then fail on every
// column. The root element read back from the footer (parquet-go's thrift decoding) must be
// REQUIRED.
func TestRootSchemaElementIsRequired(t *testing.T) {
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("m")
	paths := writeRows(t, schema, plan, sinktest.AllTypesRows(200, 4, plan))
	if len(paths) == 0 {
		t.Fatal("no files written")
	}
	for _, p := range paths {
		pf, err := sinktest.ReadParquet(p, schema)
		if err != nil {
			t.Fatal(err)
		}
		root := pf.Meta.Metadata().Schema[0]
		if n, _ := root.NumChildren.Get(); n != int32(len(schema.Columns)) {
			t.Fatalf("%s: first schema element %q has %d children: not the root", p, root.Name, n)
		}
		// The format says the root has no repetition; REQUIRED is what parquet-mr and Arrow C++
		// write and what every reader accepts. REPEATED is the bug.
		if rep, ok := root.RepetitionType.Get(); !ok || rep != format.Required {
			t.Errorf("%s: root schema element repetition %v (set %t), want REQUIRED", p, rep, ok)
		}
	}
}

// sparkRebaseMode is Spark 3's decision for one file (apache/spark,
// sql/core/src/main/scala/org/apache/spark/sql/execution/datasources/DataSourceUtils.scala,
// getRebaseSpec): without "org.apache.spark.version" the session config decides (EXCEPTION by
// default: READ_ANCIENT_DATETIME); a version below minVersion (a string comparison, as in Scala)
// or the legacy key present means LEGACY (Julian rebase); otherwise CORRECTED (values as written).
func sparkRebaseMode(kv map[string]string, minVersion, legacyKey string) string {
	v, ok := kv["org.apache.spark.version"]
	if !ok {
		return "CONFIG"
	}
	if _, legacy := kv[legacyKey]; v < minVersion || legacy {
		return "LEGACY"
	}
	return "CORRECTED"
}

// Spark 3 (what LTS runs) refuses (READ_ANCIENT_DATETIME) or shifts DATE before 1582-10-15 and
// TIMESTAMP before 1900 in Parquet files without its own metadata; Cassandra data often holds such
// sentinels. Every file says it is proleptic Gregorian, so Spark reads DATE 1000-01-01 and
// TIMESTAMP 1800-01-01T00:00:00Z exactly as written, and the independent reader gets the same
// values back.
func TestSparkReadsAncientDatetimesAsWritten(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "ancient", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "d", Type: pipeline.TypeDate, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
	}}
	day := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400 }
	ms := func(tm time.Time) int64 { return tm.UnixMilli() }
	want := [][2]int64{
		{day(1000, 1, 1), ms(time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC))},
		{day(1582, 10, 4), ms(time.Date(1582, 10, 4, 23, 59, 59, 999e6, time.UTC))},
		{day(1, 1, 1), ms(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))},
		{day(1970, 1, 1), 0},
	}
	if want[0][0] != -354285 || want[0][1] != -5364662400000 {
		t.Fatalf("proleptic Gregorian arithmetic: %v", want[0]) // the values a Spark CORRECTED read returns
	}
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "single"}
	var rows []pipeline.Row
	for i, w := range want {
		rows = append(rows, pipeline.Row{Values: []pipeline.Value{
			pipeline.Text(string(rune('a' + i))), pipeline.Int(w[0]), pipeline.Int(w[1])}})
	}
	// a file closed before any chunk gets the same footer
	empty := filepath.Join(t.TempDir(), "empty.parquet")
	fh, err := os.Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	w, err := parquet.New().NewWriter(fh, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	for _, rs := range [][]pipeline.Row{rows, nil} {
		path := empty
		if rs != nil {
			paths := writeRows(t, schema, plan, rs)
			if len(paths) != 1 {
				t.Fatalf("%d files, want 1", len(paths))
			}
			path = paths[0]
		}
		pf, err := sinktest.ReadParquet(path, schema)
		if err != nil {
			t.Fatal(err)
		}
		md := pf.Meta.Metadata()
		kv := map[string]string{}
		for _, e := range md.KeyValueMetadata {
			kv[e.Key] = e.Value
		}
		if v := kv["org.apache.spark.version"]; v != parquet.SparkVersion {
			t.Errorf("org.apache.spark.version %q, want %q", v, parquet.SparkVersion)
		}
		if m := sparkRebaseMode(kv, "3.0.0", "org.apache.spark.legacyDateTime"); m != "CORRECTED" {
			t.Errorf("Spark's datetime rebase mode for this file: %s, want CORRECTED", m)
		}
		if m := sparkRebaseMode(kv, "3.1.0", "org.apache.spark.legacyINT96"); m != "CORRECTED" {
			t.Errorf("Spark's INT96 rebase mode for this file: %s, want CORRECTED", m)
		}
		// TIMESTAMP is INT64 MILLIS (UTC), never INT96; DATE is INT32 DATE
		for _, el := range md.Schema[1:] {
			switch el.Name {
			case "ts":
				typ, _ := el.Type.Get()
				ts, ok := el.LogicalType.Value.(*format.TimestampType)
				if typ != format.Int64 || !ok || !ts.IsAdjustedToUTC || ts.Unit.String() != (&format.MilliSeconds{}).String() {
					t.Errorf("ts written as %v %v, want INT64 TIMESTAMP(MILLIS, UTC)", typ, &el.LogicalType)
				}
			case "d":
				typ, _ := el.Type.Get()
				if _, ok := el.LogicalType.Value.(*format.DateType); typ != format.Int32 || !ok {
					t.Errorf("d written as %v %v, want INT32 DATE", typ, &el.LogicalType)
				}
			}
		}
		if rs == nil {
			continue
		}
		if len(pf.Values) != len(want) {
			t.Fatalf("read %d rows, wrote %d", len(pf.Values), len(want))
		}
		for i, vals := range pf.Values {
			if vals[1].Num != want[i][0] || vals[2].Num != want[i][1] {
				t.Errorf("row %d: read date %d ts %d, wrote %d %d", i, vals[1].Num, vals[2].Num, want[i][0], want[i][1])
			}
		}
		if got := sinktest.DateString(pf.Values[0][1].Num); got != "1000-01-01" {
			t.Errorf("first date reads as %s", got)
		}
		if got := time.UnixMilli(pf.Values[0][2].Num).UTC().Format(time.RFC3339); got != "1800-01-01T00:00:00Z" {
			t.Errorf("first timestamp reads as %s", got)
		}
	}
}
