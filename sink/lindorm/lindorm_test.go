package lindorm_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
)

func orders() pipeline.TargetSchema {
	return pipeline.TargetSchema{Table: "orders", KeyLen: 2, Columns: []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "orderid", Type: pipeline.TypeBigint, KeyPos: 1, Desc: true},
		{Name: "status", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "amount", Type: pipeline.TypeDecimal, Precision: 12, Scale: 2, KeyPos: -1},
		{Name: "log-event", Type: pipeline.TypeJSON, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
	}}
}

func TestDDLVarcharSplits(t *testing.T) {
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix",
		Splits: []pipeline.Value{pipeline.Text("4000"), pipeline.Text("8000"), pipeline.Text("c000")}}
	got := lindorm.DDL(orders(), plan, [][2]string{{"COMPRESSION", "ZSTD"}, {"TTL", "2592000"}, {"SPLITKEYS", "ignored"}})
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
	got := lindorm.DDL(s, plan, [][2]string{{"DYNAMIC_COLUMNS", "true"}, {"COMMENT", "it's"}})
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
	got := lindorm.DDL(orders(), pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "single"}, nil)
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

func TestSplitKeyEscaping(t *testing.T) {
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Splits: []pipeline.Value{pipeline.Text("o'brien")}}
	ddl := lindorm.DDL(orders(), plan, nil)
	if want := "SPLITKEYS='o''brien'"; !strings.Contains(ddl, want) {
		t.Fatalf("%s does not hold %s", ddl, want)
	}
	if err := lindorm.CheckSplitKeys(plan); err != nil {
		t.Fatal(err)
	}
	plan.Splits = append(plan.Splits, pipeline.Text("a,b"))
	if err := lindorm.CheckSplitKeys(plan); err == nil {
		t.Fatal("comma in a split key accepted")
	}
}

func TestBulkloadConfig(t *testing.T) {
	for _, format := range []string{"parquet", "csv"} {
		data, err := lindorm.BulkloadConfig(orders(), format, "oss://bucket/out")
		if err != nil {
			t.Fatal(err)
		}
		var job struct {
			FileType     string `json:"fileType"`
			ReaderConfig struct {
				FilePath  string          `json:"filePath"`
				Column    json.RawMessage `json:"column"`
				Header    *bool           `json:"header"`
				Delimiter *string         `json:"delimiter"`
			} `json:"readerConfig"`
			WriterConfig struct {
				Namespace    string   `json:"namespace"`
				LindormTable string   `json:"lindormTable"`
				Compression  string   `json:"compression"`
				Columns      []string `json:"columns"`
			} `json:"writerConfig"`
		}
		if err := json.Unmarshal(data, &job); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, data)
		}
		names := []string{"pk1", "orderid", "status", "amount", "log-event", "ts"}
		if job.FileType != format || job.ReaderConfig.FilePath != "oss://bucket/out" || job.WriterConfig.Namespace != "default" ||
			job.WriterConfig.LindormTable != "orders" || job.WriterConfig.Compression != "zstd" || !reflect.DeepEqual(job.WriterConfig.Columns, names) {
			t.Fatalf("%s: %s", format, data)
		}
		switch format {
		case "parquet":
			var cols []string
			json.Unmarshal(job.ReaderConfig.Column, &cols)
			if !reflect.DeepEqual(cols, names) || job.ReaderConfig.Header != nil {
				t.Fatalf("parquet reader: %s", data)
			}
		case "csv":
			var cols []lindorm.CSVColumn
			json.Unmarshal(job.ReaderConfig.Column, &cols)
			var got []string
			for _, c := range cols {
				got = append(got, c.Name)
			}
			if !reflect.DeepEqual(got, names) || cols[3].Type != "DECIMAL(12,2)" || job.ReaderConfig.Header == nil || !*job.ReaderConfig.Header || *job.ReaderConfig.Delimiter != "," {
				t.Fatalf("csv reader: %s", data)
			}
		}
	}
	if _, err := lindorm.BulkloadConfig(orders(), "orc", "x"); err == nil {
		t.Fatal("orc accepted")
	}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: "hex_prefix",
		Splits: []pipeline.Value{pipeline.Text("4000"), pipeline.Text("8000")}}
	m := lindorm.NewManifest(orders(), plan, "parquet", 1000)
	m.Mapping, m.MappingFingerprint, m.RekeyVersion = "orders", "sha256:abc", "v0.1.0"
	m.RowsIn, m.RowsWritten, m.RowsRejected = 12, 10, 2
	if err := m.AddFiles([]pipeline.FileInfo{
		{Region: 0, Path: "data/region-0000/part-00001.parquet", Rows: 3, Bytes: 600},
		{Region: 0, Path: "data/region-0000/part-00000.parquet", Rows: 3, Bytes: 600},
		{Region: 2, Path: "data/region-0002/part-00000.parquet", Rows: 4, Bytes: 900},
	}); err != nil {
		t.Fatal(err)
	}
	if err := lindorm.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := lindorm.ReadManifest(dir)
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
	raw, _ := os.ReadFile(filepath.Join(dir, lindorm.ManifestFile))
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

// TestReadManifestRefusesPathsOutsideTheOutput: issue 9, item 13 (a crafted manifest.json with
// {"path":"../canary.parquet"} made merge link the file): every reader of a manifest gets the
// refusal, naming the manifest and the path.
func TestReadManifestRefusesPathsOutsideTheOutput(t *testing.T) {
	for _, p := range []string{"../canary.parquet", "/tmp/canary.parquet", "data/region-0000/../../canary.parquet"} {
		dir := t.TempDir()
		data := `{"format":"parquet","regions":[{"index":0,"files":[{"path":"data/region-0000/part-00000.parquet"},{"path":"` + p + `"}]}]}`
		if err := os.WriteFile(filepath.Join(dir, lindorm.ManifestFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := lindorm.ReadManifest(dir)
		if !errors.Is(err, pipeline.ErrUnsafePath) || !strings.Contains(err.Error(), filepath.Join(dir, lindorm.ManifestFile)) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", p, err)
		}
	}
}
