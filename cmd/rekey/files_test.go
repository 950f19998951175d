package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/gen"
)

const dsbulkMapping = "../../mappings/dsbulk/customers.yaml"
const dsbulkExport = "../../mappings/dsbulk/customers"

// parquetRowsByFirst reads every row of a Parquet output with the independent reader: the first
// column -> column -> value in sinktest.Canon's form (DATE as yyyy-mm-dd), absent for null.
func parquetRowsByFirst(t *testing.T, dir string, schema pipeline.TargetSchema) map[string]map[string]string {
	t.Helper()
	m, err := outputtest.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]string{}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(dir, filepath.FromSlash(f.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, vals := range pf.Values {
				row := map[string]string{}
				for i, v := range vals {
					switch col := schema.Columns[i]; {
					case v.IsNull():
					case col.Type == pipeline.TypeDate:
						row[col.Name] = sinktest.DateString(v.Num)
					default:
						row[col.Name] = sinktest.Canon(col, v)
					}
				}
				rows[row[schema.Columns[0].Name]] = row
			}
		}
	}
	return rows
}

// copyDir copies the files of a directory.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(to, 0o755)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, to, e.Name(), string(data))
	}
}

// TestMigrateDSBulkUnloadExport: a shipped mapping and sample read a real dsbulk unload CSV layout,
// given as a directory (--source file:DIR, in name order, each file its own stream). Every value of
// the export reads as dsbulk wrote it: \" escapes, empty field null and "" empty, 1/0 booleans,
// base64 blobs, JSON collections, ISO timestamps with short fractions. A resume after a file was
// added to the directory is refused naming the file.
func TestMigrateDSBulkUnloadExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	export := filepath.Join(dir, "export")
	copyDir(t, dsbulkExport, export)
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", dsbulkMapping, "--source", "file:" + export + `?escape=\`, "--out", out, "--progress", "never"}
	stdout := mustRun(t, args...)
	for _, want := range []string{"rows in        20", "rows written   20", "rows rejected  0", "regions        4 (quantile)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	rows := parquetRowsByFirst(t, out, compileFile(t, dsbulkMapping).Target())
	if len(rows) != 20 {
		t.Fatalf("%d rows in the output", len(rows))
	}
	for id, want := range map[string]map[string]string{
		// name with escaped quotes, a two-line note, an empty set, null prefs... as written by dsbulk
		"e3eff9c0-cf44-4d3f-89e7-d15f17362f25": {"name": `Jane "JJ" Doe`, "note": "first line\nsecond line", "prefs": "{}",
			"score": "", "signup_ts": "1704067199999", "tags": "", "active": "true", "avatar": "ffd8ffe000104a464946"},
		"79cb9e86-830c-41c2-8dcc-69292f45e678": {"name": "Doe, Jane", "note": "", "prefs": "", "tags": "[]",
			"signup_ts": "1710491412500", "active": "true", "avatar": "", "birthday": "2001-02-28"},
		"76c468ae-c732-4cc0-87b3-7e1499809225": {"name": "山田太郎", "note": `likes "quotes", and commas`,
			"prefs": `{"lang":1,"theme":2}`, "tags": `["gold","vip"]`, "active": "false", "score": "100", "signup_ts": "1645567322002"},
		"d4ea65d0-03d7-4684-9f85-58a628518867": {"name": "José Müller", "note": `C:\temp\new`, "email": "",
			"signup_ts": "1719748800120", "score": "0.0001", "prefs": `{"newsletter":0}`},
		"ee82ec3f-fee5-45b2-8d1f-e1daff666589": {"balance": "1000.000000000000000000", "avatar": "474946383961010001000000002c"},
	} {
		got, ok := rows[id]
		if !ok {
			t.Errorf("row %s missing", id)
			continue
		}
		for col, v := range want {
			if got[col] != v {
				t.Errorf("row %s column %s: %q, want %q", id, col, got[col], v)
			}
		}
	}
	// the checkpoint's streams tell the files apart
	cp, err := outputtest.Checkpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Streams) != 2 || !cp.Streams["output-000001.csv"].Done || !cp.Streams["output-000002.csv"].Done {
		t.Fatalf("streams %v", cp.Streams)
	}
	if cp.Source["file[output-000002.csv].size"] == "" || cp.Source["csv"] != `escape='\\'` {
		t.Fatalf("checkpoint source %v", cp.Source)
	}

	// a file added since: --resume is refused, naming it
	writeFile(t, export, "output-000003.csv", "customer_id,active,avatar,balance,birthday,email,name,note,prefs,score,signup_ts,tags\n")
	code, _, errs := runCLI(t, append(args, "--resume")...)
	if code != 2 || !strings.Contains(errs, "source file[output-000003.csv].size: not recorded then, ") {
		t.Fatalf("resume with a file added: exit %d: %s", code, errs)
	}

	// read without escape=\, the rows are rejected, each saying what to add
	out2 := filepath.Join(dir, "out2")
	code, _, errs = runCLI(t, "migrate", "-m", dsbulkMapping, "--source", "file:"+dsbulkExport, "--out", out2, "--progress", "never")
	if code != exitRejects {
		t.Fatalf("without escape=: exit %d: %s", code, errs)
	}
	rejects, _ := os.ReadFile(filepath.Join(out2, output.RejectsFile))
	if !strings.Contains(string(rejects), `add escape=\\ to the --source URI`) {
		t.Fatalf("rejects without the hint:\n%s", rejects)
	}
}

// withStdin runs the command line with stdin read from a file.
func withStdin(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return runCLIWithStdin(t, f, args...)
}

// TestMigrateStdin: stdin (file:-?format=csv) migrates what is piped in; a resume of it is refused,
// saying why and what to do (exit 2); a region plan that needs a sample says stdin cannot give one
// and what to do instead.
func TestMigrateStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := ordersCSV(t, dir, "orders.csv", 3000, 5)
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:-?format=csv", "--out", out, "--progress", "never"}
	code, stdout, errs := withStdin(t, in, args...)
	if code != 0 || !strings.Contains(stdout, "rows written   3000") {
		t.Fatalf("exit %d:\n%s%s", code, stdout, errs)
	}
	code, _, errs = withStdin(t, in, append(args, "--resume")...)
	if code != 2 || !strings.Contains(errs, file.ErrStdinResume.Error()) {
		t.Fatalf("resume of a stdin run: exit %d: %s", code, errs)
	}
	// a file run cannot be resumed from stdin either
	out2 := filepath.Join(dir, "out2")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+in, "--out", out2, "--progress", "never")
	if code, _, errs = withStdin(t, in, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:-?format=csv", "--out", out2, "--resume", "--progress", "never"); code != 2 || !strings.Contains(errs, "cannot be resumed") {
		t.Fatalf("resume of a file run from stdin: exit %d: %s", code, errs)
	}

	one := filepath.Join(dsbulkExport, "output-000001.csv")
	quantile := []string{"migrate", "-m", dsbulkMapping, "--source", `file:-?format=csv&escape=\`, "--out", filepath.Join(dir, "q"), "--progress", "never"}
	code, _, errs = withStdin(t, one, quantile...)
	if code != 2 || !strings.Contains(errs, "stdin (file:-) cannot be sampled before it is read") || !strings.Contains(errs, "--regions 1") {
		t.Fatalf("quantile plan on stdin: exit %d: %s", code, errs)
	}
	code, stdout, errs = withStdin(t, one, append(quantile[:len(quantile)-4], "--out", filepath.Join(dir, "q1"), "--regions", "1", "--progress", "never")...)
	if code != 0 || !strings.Contains(stdout, "rows written   12") {
		t.Fatalf("--regions 1 on stdin: exit %d:\n%s%s", code, stdout, errs)
	}
	code, _, errs = runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:-", "--out", filepath.Join(dir, "nf"), "--progress", "never")
	if code != 2 || !strings.Contains(errs, "add ?format=csv") {
		t.Fatalf("stdin without format=: exit %d: %s", code, errs)
	}
}

// TestMigrateLimitSkip: ?limit=N&skip=N try a mapping on the head of a big file: only those rows
// are read (rows_in counts them), and the window is part of what a resume checks.
func TestMigrateLimitSkip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := ordersCSV(t, dir, "orders.csv", 5000, 9)
	out := filepath.Join(dir, "out")
	stdout := mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+in+"?skip=100&limit=250", "--out", out, "--progress", "never")
	if !strings.Contains(stdout, "rows in        250") || !strings.Contains(stdout, "rows written   250") {
		t.Fatalf("summary:\n%s", stdout)
	}
	code, _, errs := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+in+"?skip=100&limit=300", "--out", out, "--resume", "--progress", "never")
	if code != 2 || !strings.Contains(errs, "source limit: 250 then, 300 now") {
		t.Fatalf("resume with another limit: exit %d: %s", code, errs)
	}
	code, report := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "file:"+in+"?limit=1000", "--json", filepath.Join(dir, "r.json"), "--progress", "never", "-q")
	if code != 0 {
		t.Fatalf("report with limit=: exit %d\n%s", code, report)
	}
	var doc struct {
		Totals struct {
			RowsRead int64 `json:"rows_read"`
		} `json:"totals"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(data, &doc); err != nil || doc.Totals.RowsRead != 1000 {
		t.Fatalf("report read %d rows (%v), want 1000", doc.Totals.RowsRead, err)
	}
}

// TestEmptyCSVAndJSONLAgree: before, an empty .jsonl said VERDICT OK while an empty .csv was an
// error. Both now read as 0 rows with a warning naming the file, in report and migrate alike.
func TestEmptyCSVAndJSONLAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"empty.csv", "empty.jsonl"} {
		path := writeFile(t, dir, name, "")
		code, stdout, errs := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+path,
			"--out", filepath.Join(dir, "out-"+name), "--progress", "never")
		if code != 0 || !strings.Contains(stdout, "rows in        0") || !strings.Contains(errs, path) || !strings.Contains(errs, "0 rows read from it") {
			t.Errorf("migrate %s: exit %d\n%s%s", name, code, stdout, errs)
		}
		code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "file:"+path, "--progress", "never")
		if code != 0 || !strings.Contains(out, "0 rows read from it") || !strings.Contains(out, "VERDICT") {
			t.Errorf("report %s: exit %d\n%s", name, code, out)
		}
	}
}

// TestReportOfAFileWindowIsASample: ?limit= (and skip=) try a mapping on the head of a big file;
// the report of such a window judges part of the file, and says so (its sample, the uniqueness
// check not exact) rather than pass its verdict off as the whole file's.
func TestReportOfAFileWindowIsASample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := ordersCSV(t, dir, "orders.csv", 5000, 9)
	read := func(query string) (sampled, exact bool, sample string) {
		js := filepath.Join(dir, "r.json")
		code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "file:"+in+query, "--json", js, "--progress", "never", "-q")
		if code != 0 {
			t.Fatalf("report %s: exit %d\n%s", query, code, out)
		}
		var doc struct {
			Source struct {
				Sampled bool
				Sample  string
			}
			Uniqueness struct{ Exact bool }
		}
		data, _ := os.ReadFile(js)
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Source.Sampled, doc.Uniqueness.Exact, doc.Source.Sample
	}
	if sampled, exact, sample := read("?limit=1000"); !sampled || exact || !strings.Contains(sample, "the first 1,000 of about") {
		t.Errorf("limit=1000 of 5,000 rows: sampled %v, exact %v, sample %q", sampled, exact, sample)
	}
	if sampled, exact, sample := read("?skip=100&limit=250"); !sampled || exact || !strings.Contains(sample, "rows 101 to 350 of about") {
		t.Errorf("skip=100&limit=250 of 5,000 rows: sampled %v, exact %v, sample %q", sampled, exact, sample)
	}
	if sampled, exact, _ := read("?limit=50000"); sampled || !exact {
		t.Errorf("limit= past the file's rows: sampled %v, exact %v", sampled, exact)
	}
}

// TestReportOfAnUnsizedWindowIsASample: a window (limit=) of files whose rows rekey cannot
// estimate (gzip) is judged a sample too, of an input of unknown size: never "exact". Before, the
// unknown estimate read as "the window holds every row": report of orders.csv.gz?limit=1000 (5,000
// rows) said UNIQUENESS ... (exact) and no sample, where orders.csv?limit=1000 said it was one.
func TestReportOfAnUnsizedWindowIsASample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csv, gz bytes.Buffer
	if err := gen.WriteCSV(&csv, "orders", 5000, 9); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(&gz)
	zw.Write(csv.Bytes())
	zw.Close()
	in := writeFile(t, dir, "orders.csv.gz", gz.String())
	for query, want := range map[string]string{
		"?limit=1000":         "the first 1,000 rows of gzip files, whose rows are not known (limit=)",
		"?skip=100&limit=250": "rows 101 to 350 of gzip files, whose rows are not known (skip=, limit=)",
	} {
		js := filepath.Join(dir, "r.json")
		code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "file:"+in+query, "--json", js, "--progress", "never", "-q")
		if code != 0 {
			t.Fatalf("report %s: exit %d\n%s", query, code, out)
		}
		var doc struct {
			Source struct {
				Sampled    bool
				Sample     string
				ScaleKnown bool `json:"scale_known"`
			}
			Uniqueness struct{ Exact bool }
		}
		data, _ := os.ReadFile(js)
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if !doc.Source.Sampled || doc.Uniqueness.Exact || doc.Source.ScaleKnown || !strings.Contains(doc.Source.Sample, want) {
			t.Errorf("%s of a gzip file: sampled %v, exact %v, scale known %v, sample %q; want a sample of unknown scale: %s",
				query, doc.Source.Sampled, doc.Uniqueness.Exact, doc.Source.ScaleKnown, doc.Source.Sample, want)
		}
	}
}
