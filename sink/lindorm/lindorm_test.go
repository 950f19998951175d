package lindorm_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
)

func orders() pipeline.TargetSchema { return sinktest.OrdersSchema() }

func TestDDLVarcharSplits(t *testing.T) {
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix",
		Splits: []pipeline.Value{pipeline.Text("4000"), pipeline.Text("8000"), pipeline.Text("c000")}}
	got := mustDDL(t, orders(), plan, [][2]string{{"COMPRESSION", "ZSTD"}, {"TTL", "2592000"}, {"SPLITKEYS", "ignored"}})
	want := "CREATE TABLE IF NOT EXISTS orders (\n" +
		"  pk1 VARCHAR NOT NULL,\n" +
		"  orderid BIGINT NOT NULL,\n" +
		"  status VARCHAR,\n" +
		"  amount DECIMAL(12,2),\n" +
		"  `log-event` JSON,\n" +
		"  ts TIMESTAMP,\n" +
		"  PRIMARY KEY(pk1, orderid DESC)\n" +
		") WITH (SPLITKEYS='4000,8000,c000', COMPRESSION='ZSTD', TTL='2592000');\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDDLBigintSplitsAndQuoting(t *testing.T) {
	s := pipeline.TargetSchema{Table: "order", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "id", Type: pipeline.TypeBigint, KeyPos: 0},
		{Name: "note`s", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	plan := pipeline.RegionPlan{Type: pipeline.TypeBigint, Strategy: "int_bucket",
		Splits: []pipeline.Value{pipeline.Int(-100), pipeline.Int(0), pipeline.Int(100)}}
	got := mustDDL(t, s, plan, [][2]string{{"DYNAMIC_COLUMNS", "true"}, {"COMMENT", "it's"}})
	want := "CREATE TABLE IF NOT EXISTS `order` (\n" +
		"  id BIGINT NOT NULL,\n" +
		"  `note``s` VARCHAR,\n" +
		"  PRIMARY KEY(id)\n" +
		") WITH (SPLITKEYS='-100,0,100', DYNAMIC_COLUMNS='true', COMMENT='it''s');\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDDLSingleRegion(t *testing.T) {
	got := mustDDL(t, orders(), pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "single"}, nil)
	want := "CREATE TABLE IF NOT EXISTS orders (\n" +
		"  pk1 VARCHAR NOT NULL,\n" +
		"  orderid BIGINT NOT NULL,\n" +
		"  status VARCHAR,\n" +
		"  amount DECIMAL(12,2),\n" +
		"  `log-event` JSON,\n" +
		"  ts TIMESTAMP,\n" +
		"  PRIMARY KEY(pk1, orderid DESC)\n" +
		");\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func mustDDL(t *testing.T, schema pipeline.TargetSchema, plan pipeline.RegionPlan, options [][2]string) string {
	t.Helper()
	ddl, err := lindorm.DDL(schema, plan, options)
	if err != nil {
		t.Fatal(err)
	}
	return ddl
}

// Quotes double; what SPLITKEYS cannot carry whatever the client's escape rules (a comma, a
// backslash, a control character) and an option value with a backslash are refused, not written.
func TestSplitKeyEscaping(t *testing.T) {
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Splits: []pipeline.Value{pipeline.Text("o'brien")}}
	if ddl, want := mustDDL(t, orders(), plan, nil), "SPLITKEYS='o''brien'"; !strings.Contains(ddl, want) {
		t.Fatalf("%s does not hold %s", ddl, want)
	}
	for _, bad := range []string{"a,b", `m\'); DROP TABLE canary; -- `, "a\nb", "\xff"} {
		p := plan
		p.Splits = append([]pipeline.Value{pipeline.Text("a")}, pipeline.Text(bad))
		if ddl, err := lindorm.DDL(orders(), p, nil); err == nil || !strings.Contains(err.Error(), "split key 1") {
			t.Errorf("split key %q: %v\n%s", bad, err, ddl)
		}
	}
	if ddl, err := lindorm.DDL(orders(), plan, [][2]string{{"COMMENT", `x\'`}}); err == nil || !strings.Contains(err.Error(), "COMMENT") {
		t.Errorf("option value with a backslash: %v\n%s", err, ddl)
	}
}

// bulkload.json carries the LTS API's form fields with the values it documents
// (alibabacloud.com/help/en/lindorm/user-guide/submit-data-import-tasks-through-api): src, dst,
// fileType "Parquet"|"CSV" (rekey wrote "parquet"), driverSpec, instances, readerConfig with a
// filePath naming data/ relative to the bucket on a store, writerConfig with namespace and the
// cells' timestamp.
func TestBulkloadConfig(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for format, fileType := range map[string]string{"parquet": "Parquet", "csv": "CSV"} {
		data, err := lindorm.BulkloadConfig(orders(), lindorm.JobOptions{DataDir: "data", FileType: fileType, Out: "oss://bucket/runs/orders?endpoint=oss-cn-hangzhou.aliyuncs.com",
			Store: true, Source: "oss_src", Target: "ld", Namespace: "shop", Regions: 16, Timestamp: started})
		if err != nil {
			t.Fatal(err)
		}
		var job map[string]json.RawMessage
		if err := json.Unmarshal(data, &job); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, data)
		}
		var keys []string
		for k := range job {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if want := []string{"driverSpec", "dst", "fileType", "instances", "readerConfig", "rekey_uncertain", "src", "writerConfig"}; !reflect.DeepEqual(keys, want) {
			t.Fatalf("%s: fields %v, want %v", format, keys, want)
		}
		wantTop := map[string]string{"src": `"oss_src"`, "dst": `"ld"`, "driverSpec": `"large"`, "instances": `4`,
			"fileType": `"` + fileType + `"`}
		for k, v := range wantTop {
			if string(job[k]) != v {
				t.Errorf("%s: %s = %s, want %s", format, k, job[k], v)
			}
		}
		var writer map[string]any
		json.Unmarshal(job["writerConfig"], &writer)
		wantWriter := map[string]any{"namespace": "shop", "lindormTable": "orders", "compression": "zstd",
			"columns":   []any{"pk1", "orderid", "status", "amount", "log-event", "ts"},
			"timestamp": float64(started.UnixMilli())}
		if !reflect.DeepEqual(writer, wantWriter) {
			t.Errorf("%s: writerConfig %v\nwant %v", format, writer, wantWriter)
		}
		var reader map[string]any
		json.Unmarshal(job["readerConfig"], &reader)
		if reader["filePath"] != "runs/orders/data/*/" {
			t.Errorf("%s: filePath %v, want runs/orders/data/*/ (the region folders, relative to the bucket)", format, reader["filePath"])
		}
		var uncertain []string
		json.Unmarshal(job["rekey_uncertain"], &uncertain)
		all := strings.Join(uncertain, "\n")
		for _, w := range []string{"readerConfig.filePath", "fileType", "writerConfig.timestamp"} {
			if !strings.Contains(all, w) {
				t.Errorf("%s: rekey_uncertain does not mention %s:\n%s", format, w, all)
			}
		}
		for _, u := range uncertain {
			if !strings.Contains(u, "check") {
				t.Errorf("%s: uncertain entry without a way to check it: %s", format, u)
			}
		}
		switch format {
		case "parquet":
			if !reflect.DeepEqual(reader["column"], wantWriter["columns"]) || reader["header"] != nil || reader["delimiter"] != nil {
				t.Errorf("parquet reader: %v", reader)
			}
			if strings.Contains(all, "CSV") && strings.Contains(all, "VARBINARY") {
				t.Errorf("parquet job lists CSV forms: %s", all)
			}
		case "csv":
			cols := reader["column"].([]any)
			if len(cols) != 6 || cols[3].(map[string]any)["name"] != "amount" || cols[3].(map[string]any)["type"] != "DECIMAL(12,2)" ||
				reader["header"] != true || reader["delimiter"] != "," {
				t.Errorf("csv reader: %v", reader)
			}
			if !strings.Contains(all, "TIMESTAMP as 2024-01-02T03:04:05.678Z") || !strings.Contains(all, "csv_value") {
				t.Errorf("csv: the value forms and the rejects are not listed:\n%s", all)
			}
		}
	}
	if _, err := lindorm.BulkloadConfig(orders(), lindorm.JobOptions{DataDir: "data", Out: "x"}); err == nil {
		t.Fatal("files the job cannot read (no fileType) accepted")
	}
}

// A file type the job reads by its columns' names (a self-describing file, as Parquet) needs no
// word of its own here: a new format declares its fileType where it is registered, and the job
// names its columns in file order, with the API's spelling of the type.
func TestBulkloadJobOfAnotherSelfDescribingFileType(t *testing.T) {
	job, err := lindorm.NewBulkloadJob(orders(), lindorm.JobOptions{DataDir: "data", FileType: "ORC", Out: "oss://b/runs", Store: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pk1", "orderid", "status", "amount", "log-event", "ts"}
	if job.FileType != "ORC" || !reflect.DeepEqual(job.ReaderConfig.Column, want) || job.ReaderConfig.Header != nil || job.ReaderConfig.Delimiter != nil {
		t.Fatalf("job %+v, reader %+v", job, job.ReaderConfig)
	}
}

func TestBulkloadConfigDefaults(t *testing.T) {
	s := orders()
	dir := t.TempDir()
	job, err := lindorm.NewBulkloadJob(s, lindorm.JobOptions{DataDir: "data", FileType: "CSV", Out: dir, Regions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if job.Src != lindorm.SourcePlaceholder || job.Dst != lindorm.TargetPlaceholder || job.WriterConfig.Namespace != "default" ||
		job.DriverSpec != "large" || job.Instances != 1 || job.WriterConfig.Timestamp != nil {
		t.Errorf("defaults: %+v", job)
	}
	if want := filepath.ToSlash(filepath.Join(dir, "data")) + "/*/"; job.ReaderConfig.FilePath != want {
		t.Errorf("local filePath %s, want %s", job.ReaderConfig.FilePath, want)
	}
	all := strings.Join(job.Uncertain, "\n")
	if strings.Contains(all, "writerConfig.timestamp") {
		t.Errorf("uncertain:\n%s", all)
	}
	for _, c := range []struct {
		out, want string
		regions   int
	}{{"s3://b", "data/*/", 200}, {"s3://b/", "data/*/", 200}, {"oss://b/a/b/?path_style=true", "a/b/data/*/", 7}} {
		job, err := lindorm.NewBulkloadJob(s, lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: c.out, Store: true, Regions: c.regions})
		if err != nil {
			t.Fatal(err)
		}
		if job.ReaderConfig.FilePath != c.want || job.Instances != min((c.regions+3)/4, 32) {
			t.Errorf("%s: filePath %s instances %d", c.out, job.ReaderConfig.FilePath, job.Instances)
		}
	}
	// an s3:// or oss:// Out is a bucket's without Store: migrate and replicate pass --out as given
	for _, out := range []string{"s3://b/p", "oss://b/p?endpoint=http://localhost:7070"} {
		job, err := lindorm.NewBulkloadJob(s, lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: out, Regions: 1})
		if err != nil || job.ReaderConfig.FilePath != "p/data/*/" {
			t.Errorf("%s without Store: %v, %v", out, job, err)
		}
	}
	for _, bad := range []string{"/local/path", "gs://b/p", "s3:///p"} {
		if _, err := lindorm.NewBulkloadJob(s, lindorm.JobOptions{DataDir: "data", FileType: "Parquet", Out: bad, Store: true}); err == nil {
			t.Errorf("store output %q accepted", bad)
		}
	}
}

// The job reads the folder the output's layout names (JobOptions.DataDir): lindorm knows no
// output names, and a job without the folder is refused rather than pointed at the whole output.
func TestBulkloadJobReadsTheGivenDataFolder(t *testing.T) {
	dir := t.TempDir()
	job, err := lindorm.NewBulkloadJob(orders(), lindorm.JobOptions{DataDir: "files", FileType: "Parquet", Out: dir, Regions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.ToSlash(filepath.Join(dir, "files")) + "/*/"; job.ReaderConfig.FilePath != want {
		t.Errorf("local filePath %s, want %s", job.ReaderConfig.FilePath, want)
	}
	if all := strings.Join(job.Uncertain, "\n"); !strings.Contains(all, "one job per files/region-NNNN/ folder") || !strings.Contains(all, "upload files/ and") {
		t.Errorf("uncertain names another folder:\n%s", all)
	}
	if job, err := lindorm.NewBulkloadJob(orders(), lindorm.JobOptions{DataDir: "files", FileType: "Parquet", Out: "oss://b/runs", Store: true}); err != nil || job.ReaderConfig.FilePath != "runs/files/*/" {
		t.Errorf("store filePath: %v, %v", job, err)
	}
	if _, err := lindorm.NewBulkloadJob(orders(), lindorm.JobOptions{FileType: "Parquet", Out: dir}); err == nil {
		t.Error("a job without its data folder was accepted")
	}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix",
		Splits: []pipeline.Value{pipeline.Text("4000"), pipeline.Text("8000")}}
	m := output.NewManifest(orders(), plan, "parquet", 1000)
	m.Mapping, m.MappingFingerprint, m.RekeyVersion = "orders", "sha256:abc", "v0.1.0"
	m.RowsIn, m.RowsWritten, m.RowsRejected = 12, 10, 2
	if err := m.AddFiles([]pipeline.FileInfo{
		{Region: 0, Path: "data/region-0000/part-00001.parquet", Rows: 3, Bytes: 600},
		{Region: 0, Path: "data/region-0000/part-00000.parquet", Rows: 3, Bytes: 600},
		{Region: 2, Path: "data/region-0002/part-00000.parquet", Rows: 4, Bytes: 900},
	}); err != nil {
		t.Fatal(err)
	}
	if err := outputtest.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := outputtest.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip:\n%+v\n%+v", got, m)
	}
	r := got.Regions
	if r[0].Start != nil || *r[0].End != "4000" || *r[1].Start != "4000" || *r[2].Start != "8000" || r[2].End != nil {
		t.Fatalf("bounds: %+v", r)
	}
	if !r[0].OverSize || r[1].OverSize || r[2].OverSize || r[0].Rows != 6 || r[0].Files[0].Path != "data/region-0000/part-00000.parquet" {
		t.Fatalf("regions: %+v", r)
	}
	if got.Files != 3 || got.Bytes != 2100 {
		t.Fatalf("totals: %d files %d bytes", got.Files, got.Bytes)
	}
	// the stable field names
	raw, _ := os.ReadFile(filepath.Join(dir, output.ManifestFile))
	var generic map[string]any
	json.Unmarshal(raw, &generic)
	for _, k := range []string{"mapping", "mapping_fingerprint", "table", "format", "key_columns", "columns", "region_plan", "region_size",
		"regions", "rows_in", "rows_written", "rows_rejected", "bytes", "files", "created_at", "rekey_version"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("manifest lacks %q", k)
		}
	}
	reg := generic["regions"].([]any)[0].(map[string]any)
	for _, k := range []string{"index", "start", "end", "rows", "bytes", "over_size", "files"} {
		if _, ok := reg[k]; !ok {
			t.Errorf("region lacks %q", k)
		}
	}
	if reg["start"] != nil {
		t.Errorf("open start should be null, got %v", reg["start"])
	}
}

// TestReadManifestRefusesPathsOutsideTheOutput: before, a crafted manifest.json with
// {"path":"../canary.parquet"} made merge link the file; every reader of a manifest gets the
// refusal, naming the manifest and the path.
func TestReadManifestRefusesPathsOutsideTheOutput(t *testing.T) {
	for _, p := range []string{"../canary.parquet", "/tmp/canary.parquet", "data/region-0000/../../canary.parquet"} {
		dir := t.TempDir()
		data := `{"format":"parquet","regions":[{"index":0,"files":[{"path":"data/region-0000/part-00000.parquet"},{"path":"` + p + `"}]}]}`
		if err := os.WriteFile(filepath.Join(dir, output.ManifestFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := outputtest.Manifest(dir)
		if !errors.Is(err, output.ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(dir, output.ManifestFile)) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// SPLITKEYS of a TIMESTAMP first column are written in UTC, while a Lindorm session reads a
// TIMESTAMP string in its own time zone (UTC+8 by default): ddl.sql sets the session to UTC
// before the CREATE TABLE, as replicate's delete files do, so its split points are the instants
// the files were cut at. A table whose split keys hold no TIMESTAMP needs no SET.
func TestDDLTimestampSplitsReadInUTC(t *testing.T) {
	s := pipeline.TargetSchema{Table: "events", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 0},
		{Name: "host", Type: pipeline.TypeVarchar, KeyPos: 1},
		{Name: "msg", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	split := time.Date(2024, 1, 1, 0, 4, 6, 147e6, time.UTC).UnixMilli()
	plan := pipeline.RegionPlan{Type: pipeline.TypeTimestamp, Strategy: "quantile", Splits: []pipeline.Value{pipeline.Int(split)}}
	got := mustDDL(t, s, plan, nil)
	set, create, ok := strings.Cut(got, "CREATE TABLE")
	if !ok || !strings.Contains(set, "\nSET time_zone = '+00:00';\n") {
		t.Fatalf("ddl.sql with TIMESTAMP split keys in UTC does not set the session's time zone before the CREATE TABLE:\n%s", got)
	}
	if !strings.Contains(create, "SPLITKEYS='2024-01-01 00:04:06.147'") {
		t.Fatalf("split key not in UTC:\n%s", got)
	}
	for _, plan := range []pipeline.RegionPlan{
		{Type: pipeline.TypeTimestamp, Strategy: "single"},
		{Type: pipeline.TypeBigint, Strategy: "explicit", Splits: []pipeline.Value{pipeline.Int(split)}},
	} {
		s := s
		s.Columns = append([]pipeline.Column(nil), s.Columns...)
		s.Columns[0].Type = plan.Type
		if got := mustDDL(t, s, plan, nil); !strings.HasPrefix(got, "CREATE TABLE") {
			t.Errorf("%s %s plan: ddl.sql does not start with its CREATE TABLE:\n%s", plan.Type, plan.Strategy, got)
		}
	}
}

// Lindorm's wide-table SQL reads the words of its keyword list as keywords unless back-quoted
// (data, name, day, comment, format, json, ...), and an unquoted identifier must start with a
// letter: such names are back-quoted wherever rekey writes them.
func TestIdentQuotesLindormKeywordsAndLeadingUnderscore(t *testing.T) {
	for _, name := range []string{"data", "name", "day", "hour", "minute", "month", "comment", "format",
		"json", "level", "first", "last", "map", "namespace", "database", "describe", "array", "at", "none", "no", "_id"} {
		if got, want := lindorm.Ident(name), "`"+name+"`"; got != want {
			t.Errorf("Ident(%q) = %s, want %s (a Lindorm keyword, or not starting with a letter)", name, got, want)
		}
	}
	for _, name := range []string{"orderid", "user_id", "tbl1"} {
		if got := lindorm.Ident(name); got != name {
			t.Errorf("Ident(%q) = %s, want it bare", name, got)
		}
	}
}
