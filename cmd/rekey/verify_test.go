package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/verify"
)

// migrateForVerify migrates an orders CSV with one planted bad row into dir/out.
func migrateForVerify(t *testing.T, dir, format string) (csvPath, out string) {
	t.Helper()
	csvPath = ordersCSV(t, dir, "orders.csv", 3000, 7)
	f, err := os.OpenFile(csvPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("u1,notanumber,taobao,1700000000000,PAID,X,1.00\n") // rejected by both
	f.Close()
	out = filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--out", out,
		"--format", format, "--progress", "never")
	if code != exitRejects {
		t.Fatalf("migrate: exit %d\n%s%s", code, stdout, stderr)
	}
	return csvPath, out
}

func readVerifyJSON(t *testing.T, path string) verify.Result {
	t.Helper()
	return readJSON[verify.Result](t, path)
}

// readJSON reads the JSON file a command wrote (--json).
func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var r T
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A migrate to a folder, then verify: equal (exit 0). Then one Parquet file is rewritten with a
// row deleted, a value changed and a row added: missing 1, differ 1 (in status), extra 1, exit 2,
// all in --json with examples.
func TestVerifyAfterMigrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	args := []string{"verify", "-m", "../../mappings/orders.yaml", "--source", "file:" + csvPath, "--target", out, "--progress", "never"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, "EQUAL: the target holds all 3000 keys checked and nothing else") ||
		!strings.Contains(stdout, "rows rejected  1") {
		t.Fatalf("verify after migrate: exit %d\n%s%s", code, stdout, stderr)
	}

	file := fileWithRows(t, out, 4)
	schema := compileFile(t, "../../mappings/orders.yaml").Target()
	pf, err := sinktest.ReadParquet(file, schema)
	if err != nil {
		t.Fatal(err)
	}
	rows := pf.Values
	status := schema.Index("status")
	deleted, changed := rows[0], rows[1]
	extra := append([]pipeline.Value(nil), rows[2]...)
	extra[1] = pipeline.Int(-42) // an orderid no source row has
	rows[1][status] = pipeline.Text("TAMPERED")
	rewriteParquet(t, file, schema, append(rows[1:], extra))

	jsonPath := filepath.Join(dir, "verify.json")
	code, stdout, stderr = runCLI(t, append(args, "--json", jsonPath)...)
	if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 missing, 1 differ, 1 extra (of 3000 keys checked)") {
		t.Fatalf("verify of a changed file: exit %d\n%s%s", code, stdout, stderr)
	}
	r := readVerifyJSON(t, jsonPath)
	if r.Equal || r.Missing != 1 || r.Differ != 1 || r.Extra == nil || *r.Extra != 1 || r.RowsRead != 3001 || r.RowsRejected != 1 ||
		r.KeysChecked != 3000 || r.TargetRows != 3000 || len(r.DifferColumns) != 1 || r.DifferColumns[0] != (verify.ColumnCount{Column: "status", Rows: 1}) {
		t.Fatalf("--json: %+v", r)
	}
	key := func(vals []pipeline.Value) string { return vals[0].Str + "/" + vals[1].String() }
	exKey := func(e verify.Example) string { return e.Key[0].Value + "/" + e.Key[1].Value }
	if len(r.Examples.Missing) != 1 || exKey(r.Examples.Missing[0]) != key(deleted) {
		t.Fatalf("missing example %+v, want key %s", r.Examples.Missing, key(deleted))
	}
	if d := r.Examples.Differ; len(d) != 1 || exKey(d[0]) != key(changed) || len(d[0].Columns) != 1 ||
		d[0].Columns[0].Column != "status" || d[0].Columns[0].Target != "TAMPERED" || d[0].Columns[0].Source == "TAMPERED" {
		t.Fatalf("differ example %+v", d)
	}
	if e := r.Examples.Extra; len(e) != 1 || exKey(e[0]) != key(extra) || !strings.HasSuffix(e[0].Where, fmt.Sprintf("part-00000.parquet row %d", len(rows))) {
		t.Fatalf("extra example %+v", e)
	}
	if len(r.Notes) != 0 {
		t.Fatalf("notes %v: the rewritten file has as many rows as the manifest says", r.Notes)
	}
	// the examples are rows of the source and the target (personal data, perhaps), as the
	// repair file's and the rejects are: the owner's only
	if fi, err := os.Stat(jsonPath); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Fatalf("--json %s: mode %v, want 0600", jsonPath, fi.Mode().Perm())
	}

	// a --memory so small that both sides spill nearly every bucket: the buckets are read back
	// into buffers reused from bucket to bucket, and the result is the same
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // --memory sets the process's limits
	runCLI(t, append(args, "--json", jsonPath, "--memory", "256KiB")...)
	spilled := readVerifyJSON(t, jsonPath)
	r.Seconds, r.RowsPerSec, spilled.Seconds, spilled.RowsPerSec = 0, 0, 0, 0
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(spilled)
	if !bytes.Equal(a, b) {
		t.Fatalf("spilled to temp files:\n%s\nin memory:\n%s", b, a)
	}

	// --sample: a share of the keys, the same on every run
	code, _, _ = runCLI(t, append(args, "--sample", "20%", "--json", jsonPath)...)
	s1 := readVerifyJSON(t, jsonPath)
	runCLI(t, append(args, "--sample", "20%", "--json", jsonPath, "--workers", "1")...)
	s2 := readVerifyJSON(t, jsonPath)
	if s1.Sample != "20%" || s1.KeysChecked < 400 || s1.KeysChecked > 800 || s1.KeysChecked != s2.KeysChecked ||
		s1.Missing != s2.Missing || *s1.Extra != *s2.Extra || (code == 0) != s1.Equal {
		t.Fatalf("--sample 20%%: %+v then %+v (exit %d)", s1, s2, code)
	}
	runCLI(t, append(args, "--sample", "100", "--json", jsonPath)...)
	if s := readVerifyJSON(t, jsonPath); s.RowsChecked != 100 || s.Sample != "100 rows" {
		t.Fatalf("--sample 100: %+v", s)
	}
}

// fileWithRows is the path of the first data file of an output, in region order, that holds at
// least min rows.
func fileWithRows(t *testing.T, out string, min int64) string {
	t.Helper()
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Regions {
		if len(r.Files) > 0 && r.Files[0].Rows >= min {
			return filepath.Join(out, filepath.FromSlash(r.Files[0].Path))
		}
	}
	t.Fatalf("%s has no data file of %d rows or more", out, min)
	return ""
}

func rewriteParquet(t *testing.T, path string, schema pipeline.TargetSchema, rows [][]pipeline.Value) {
	t.Helper()
	if err := sinktest.WriteParquet(path, schema, rows); err != nil {
		t.Fatal(err)
	}
}

// A CSV output: equal, then a line deleted from a data file is one missing row, and the note
// names the file whose row count no longer matches the manifest.
func TestVerifyCSVOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "csv")
	args := []string{"verify", "-m", "../../mappings/orders.yaml", "--source", "file:" + csvPath, "--target", out, "--progress", "never", "-q"}
	if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "EQUAL") {
		t.Fatalf("verify csv output: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	rel := m.Regions[3].Files[0].Path
	path := filepath.Join(out, filepath.FromSlash(rel))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(path, []byte(strings.Join(append(lines[:2], lines[3:]...), "")), 0o644) // the second data row
	jsonPath := filepath.Join(dir, "v.json")
	code, stdout, stderr := runCLI(t, append(args, "--json", jsonPath)...)
	if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 missing, 1 data file not as listed (of 3000 keys checked)") {
		t.Fatalf("verify after deleting a CSV line: exit %d\n%s%s", code, stdout, stderr)
	}
	r := readVerifyJSON(t, jsonPath)
	if len(r.Files) != 1 || r.Files[0].Path != rel || r.Files[0].ListedRows == nil || *r.Files[0].ListedRows != r.Files[0].Rows+1 {
		t.Fatalf("files %+v", r.Files)
	}
}

// verify never runs against what is not the mapping's table: exit 3, naming why.
func TestVerifyRefusesAnotherTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	other := strings.Replace(strictOrders, "amount: \"amount :: DECIMAL(18,2)\"", "amount: \"amount :: DECIMAL(20,2)\"", 1)
	mapping := writeFile(t, dir, "other.yaml", other)
	code, _, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+csvPath, "--target", out, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "does not hold the mapping's table") || !strings.Contains(stderr, "amount DECIMAL(18,2)") {
		t.Fatalf("verify with another table's mapping: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--target", dir, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "is not a rekey output") {
		t.Fatalf("verify of a folder that is no output: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--target", "ftp://x/y", "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "unknown kind of target") || !strings.Contains(stderr, "(this build reads lindorm://, mysql://)") {
		t.Fatalf("verify of an unknown target: exit %d: %s", code, stderr)
	}
}

// --lookups says how many key lookups a table target serves at once (each on its own connection):
// a folder target is read whole, and --lookups there was silently ignored, as --lookups 0 was
// (verify then ran 4).
func TestVerifyLookupsRefusedWhereTheyDoNotApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	code, _, stderr := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--target", out, "--lookups", "8", "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "--lookups applies to a table target") {
		t.Fatalf("verify of a folder with --lookups: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+csvPath, "--target", "mysql://u@127.0.0.1:1/db", "--lookups", "0", "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "--lookups 0: want at least 1") {
		t.Fatalf("verify with --lookups 0: exit %d: %s", code, stderr)
	}
}

// A source on stdin (file:-) can be read only once, and a folder target with a difference made
// verify read it again for the value-by-value pass: it failed with "compare the differences (1
// keys): read the source: stdin can be read only once" (exit 3) instead of reporting the
// missing row. Such a source is compared value by value in one pass.
func TestVerifyStdinSourceFolderDifferent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "csv")
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, filepath.FromSlash(m.Regions[3].Files[0].Path))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(path, []byte(strings.Join(append(lines[:2], lines[3:]...), "")), 0o644) // the second data row
	in, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	code, stdout, stderr := runCLIWithStdin(t, in, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:-?format=csv", "--target", out, "--progress", "never", "-q")
	if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 missing, 1 data file not as listed (of 3000 keys checked)") {
		t.Fatalf("verify of stdin against a folder with a row deleted: exit %d\n%s%s", code, stdout, stderr)
	}
}

// The bulk load reads every file under data/ except names starting with _ or ., listed or not:
// verify reads them too. A copy of a data file beside it shows as extra rows, naming the file;
// a manifest whose rows count was edited is named too; _SUCCESS and dot files are passed over.
func TestVerifyUnlistedAndMiscountedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, out := migrateForVerify(t, dir, "parquet")
	args := []string{"verify", "-m", "../../mappings/orders.yaml", "--source", "file:" + csvPath, "--target", out, "--progress", "never"}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	listed := m.Regions[0].Files[0]
	data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(listed.Path)))
	if err != nil {
		t.Fatal(err)
	}
	region := filepath.Join(out, filepath.FromSlash(path.Dir(listed.Path)))
	writeFile(t, region, "_SUCCESS", "")
	writeFile(t, region, ".part-00000.parquet.crc", "x")
	if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "EQUAL") {
		t.Fatalf("verify with files Spark passes over: exit %d\n%s%s", code, stdout, stderr)
	}

	copyName := path.Dir(listed.Path) + "/part-copy.parquet"
	writeFile(t, region, "part-copy.parquet", string(data))
	jsonPath := filepath.Join(dir, "v.json")
	code, stdout, stderr := runCLI(t, append(args, "--json", jsonPath)...)
	want := fmt.Sprintf("DIFFERENT: %d extra, 1 data file not as listed", listed.Rows)
	if code != exitDifferent || !strings.Contains(stdout, want) || !strings.Contains(stdout, copyName) {
		t.Fatalf("verify with a copy of a data file: exit %d, want %d and %q naming %s\n%s%s", code, exitDifferent, want, copyName, stdout, stderr)
	}
	r := readVerifyJSON(t, jsonPath)
	if *r.Extra != listed.Rows || r.Missing != 0 || r.Differ != 0 ||
		len(r.Files) != 1 || r.Files[0].Path != copyName || !r.Files[0].Unlisted || r.Files[0].Rows != listed.Rows {
		t.Fatalf("--json: extra %d missing %d differ %d files %+v", *r.Extra, r.Missing, r.Differ, r.Files)
	}
	os.Remove(filepath.Join(region, "part-copy.parquet"))

	// the manifest's rows count of a file edited: the rows are all there, the listing is wrong
	manifest := filepath.Join(out, output.ManifestFile)
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["regions"].([]any)[0].(map[string]any)["files"].([]any)[0].(map[string]any)["rows"] = listed.Rows + 5
	raw, _ = json.Marshal(doc)
	writeFile(t, out, output.ManifestFile, string(raw))
	code, stdout, stderr = runCLI(t, append(args, "--json", jsonPath)...)
	if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 1 data file not as listed") ||
		!strings.Contains(stdout, fmt.Sprintf("%s  %d rows, listed as %d", listed.Path, listed.Rows, listed.Rows+5)) {
		t.Fatalf("verify with an edited rows count: exit %d\n%s%s", code, stdout, stderr)
	}
	r = readVerifyJSON(t, jsonPath)
	if len(r.Files) != 1 || r.Files[0].Unlisted || r.Files[0].ListedRows == nil || *r.Files[0].ListedRows != listed.Rows+5 {
		t.Fatalf("--json files %+v", r.Files)
	}
}

// Data cannot drive the terminal through verify's examples or an error: values and names holding
// escape sequences are shown escaped (as strconv.Quote writes them), never raw.
func TestVerifyAndErrorsEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", "version: 1\nsource:\n  columns: {id: text, s: text}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n")
	in := writeFile(t, dir, "in.csv", "id,s\n\"k\x1b]0;retitled\x07\",\"\x1b[31mred\"\n")
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", m, "--source", "file:"+in, "--out", out, "--progress", "never")
	man, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	schema := compileFile(t, m).Target()
	file := filepath.Join(out, filepath.FromSlash(man.Regions[0].Files[0].Path))
	rewriteParquet(t, file, schema, [][]pipeline.Value{{pipeline.Text("k\x1b]0;retitled\x07"), pipeline.Text("\x1b[2Jcleared")}})
	code, stdout, stderr := runCLI(t, "verify", "-m", m, "--source", "file:"+in, "--target", out, "--progress", "never")
	raw := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return r != '\n' && !strconv.IsPrint(r) }) >= 0
	}
	if code != exitDifferent || raw(stdout) || raw(stderr) ||
		!strings.Contains(stdout, `key id="k\x1b]0;retitled\a"`) || !strings.Contains(stdout, `s: source "\x1b[31mred", target "\x1b[2Jcleared"`) {
		t.Fatalf("verify of values with escape sequences: exit %d\n%q\n%q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "verify", "-m", m, "--source", "file:"+filepath.Join(dir, "no\x1b[2Jsuch.csv"), "--target", out, "--progress", "never")
	if code == 0 || raw(stderr) || !strings.Contains(stderr, `no\x1b[2Jsuch.csv`) {
		t.Fatalf("an error naming a file with an escape sequence: exit %d\n%q", code, stderr)
	}
}

// verify names a source row as rejects do: the file and the line a text editor shows, also
// when a quoted CSV field spans lines (the row is then not line - 1).
func TestVerifyNamesSourceRowsByLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := writeFile(t, dir, "m.yaml", "version: 1\nsource:\n  columns: {id: bigint, s: text}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n")
	in := writeFile(t, dir, "in.csv", "id,s\n1,a\n2,\"two\nlines\"\nbad,x\n3,b\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", m, "--source", "file:"+in, "--out", out, "--progress", "never")
	if code != exitRejects {
		t.Fatalf("migrate: exit %d\n%s%s", code, stdout, stderr)
	}
	var rj output.Reject
	if err := json.Unmarshal([]byte(readLines(t, filepath.Join(out, output.RejectsFile))[0]), &rj); err != nil {
		t.Fatal(err)
	}
	if rj.Position != "in.csv:5" {
		t.Fatalf("reject at %s, want in.csv:5", rj.Position)
	}
	man, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	schema := compileFile(t, m).Target()
	rewriteParquet(t, filepath.Join(out, filepath.FromSlash(man.Regions[0].Files[0].Path)), schema,
		[][]pipeline.Value{{pipeline.Int(1), pipeline.Text("a")}, {pipeline.Int(2), pipeline.Text("changed")}}) // 3 missing
	jsonPath := filepath.Join(dir, "v.json")
	code, stdout, stderr = runCLI(t, "verify", "-m", m, "--source", "file:"+in, "--target", out, "--progress", "never", "--json", jsonPath)
	r := readVerifyJSON(t, jsonPath)
	if code != exitDifferent || len(r.Examples.Missing) != 1 || r.Examples.Missing[0].Where != "in.csv:6" ||
		len(r.Examples.Differ) != 1 || !strings.HasPrefix(r.Examples.Differ[0].Where, "in.csv:3; target ") {
		t.Fatalf("verify: exit %d, examples %+v\n%s%s", code, r.Examples, stdout, stderr)
	}

	// a CSV output: its rows are named by line too; the row spanning two lines is a reject there
	// (Spark's CSV reader, Lindorm's bulkload, reads a line per row), which verify leaves out too
	csvOut := filepath.Join(dir, "csvout")
	runCLI(t, "migrate", "-m", m, "--source", "file:"+in, "--out", csvOut, "--format", "csv", "--progress", "never")
	if man, err = outputtest.Manifest(csvOut); err != nil {
		t.Fatal(err)
	}
	rel := man.Regions[0].Files[0].Path
	path := filepath.Join(csvOut, filepath.FromSlash(rel))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "id,s\n1,a\n3,b\n"; string(data) != want || man.RowsRejected != 2 {
		t.Fatalf("%s holds %q, want %q; %d rejected, want the line break's and bad's", rel, data, want, man.RowsRejected)
	}
	code, stdout, stderr = runCLI(t, "verify", "-m", m, "--source", "file:"+in, "--target", csvOut, "--progress", "never")
	if code != 0 {
		t.Fatalf("verify of the CSV output as written: exit %d\n%s%s", code, stdout, stderr)
	}
	writeFile(t, filepath.Dir(path), filepath.Base(path), strings.Replace(string(data), "3,b", "3,c", 1))
	code, stdout, stderr = runCLI(t, "verify", "-m", m, "--source", "file:"+in, "--target", csvOut, "--progress", "never", "--json", jsonPath)
	r = readVerifyJSON(t, jsonPath)
	if code != exitDifferent || len(r.Examples.Differ) != 1 || r.Examples.Differ[0].Where != "in.csv:6; target "+rel+":3" || len(r.Examples.Missing) != 0 {
		t.Fatalf("verify of a CSV output: exit %d, examples %+v\n%s%s", code, r.Examples, stdout, stderr)
	}
}

// An output the shards of a migration write together (--shared-out) has no manifest until
// merge finishes it: verify says to run the merge, not that the folder is no rekey output.
func TestVerifySharedOutputBeforeTheMerge(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	mapping := "../../mappings/orders.yaml"
	src := "gen:orders?rows=200&seed=3"
	mustRun(t, "migrate", "-m", mapping, "--source", src, "--shard", "0/2", "--shared-out", "--regions", "2", "--out", out, "--progress", "never")
	code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", src, "--target", out, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "finish it with rekey merge --out "+out+", then verify it") || strings.Contains(stderr, "is not a rekey output") {
		t.Fatalf("verify of a shared output before the merge: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A table read whole holds rows of keys the source has not: they are extra, counted in the
// target rows, wherever they were read. verify used to pass them over, print "extra not
// checked" and EQUAL. A replication with nothing committed yet checks no key: that is not
// EQUAL either (it used to say "all 0 keys checked and nothing else" of a table holding rows).
func TestVerifyTableReadWholeReportsExtraRows(t *testing.T) {
	mapping, _ := filepath.Abs("../../mappings/orders.yaml")
	for name, start := range sqlServers(t) {
		t.Run(name, func(t *testing.T) {
			srv, conns := start(t)
			srv.Exec(t, mustRun(t, "ddl", "-m", mapping, "--dialect", srv.DDLDialect()))
			mustRun(t, "migrate", "-m", mapping, "--source", "gen:orders?rows=3002&seed=5", "--out", srv.URI(""),
				"--sql-conns", conns, "--state", filepath.Join(t.TempDir(), "state"), "--progress", "never")
			code, stdout, stderr := runCLI(t, "verify", "-m", mapping, "--source", "gen:orders?rows=3000&seed=5", "--target", srv.URI(""), "--progress", "never")
			if code != exitDifferent || !strings.Contains(stdout, "DIFFERENT: 2 extra (of 3000 keys checked)") ||
				!regexp.MustCompile(`target rows +3002\n`).MatchString(stdout) || !regexp.MustCompile(`extra +2\n`).MatchString(stdout) ||
				!strings.Contains(stdout, "(the table, read by key range)") {
				t.Fatalf("verify of a table holding 2 rows the source has not: exit %d\n%s%s", code, stdout, stderr)
			}

			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders", 1)
			src := "kafka://" + strings.Join(c.Brokers, ",") + "/" + topic + "?group=never-ran&format=debezium"
			code, stdout, stderr = runCLI(t, "verify", "-m", mapping, "--source", src, "--target", srv.URI(""), "--progress", "never")
			if code != exitDifferent || !strings.Contains(stdout, "NOT VERIFIED: 0 keys checked") || strings.Contains(stdout, "EQUAL") ||
				strings.Contains(stdout, "nothing else") || !strings.Contains(stdout, "nothing committed yet") {
				t.Fatalf("verify of a replication that committed nothing: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// A sampled verify's --stats-json counted every row read in rows_in but only the sample's rows as
// checked (rows_written), so its figures did not add up. The rows the sample left out are its
// rows_skipped, as report's are: rows_in = rows_written + rows_rejected + rows_skipped.
func TestVerifySampleStatsAddUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--out", out, "--progress", "never")
	stats := filepath.Join(dir, "stats.json")
	if code, o, e := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--target", out,
		"--sample", "1000", "--stats-json", stats, "--progress", "never"); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, o, e)
	}
	var st runStats
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats: %v %s", err, data)
	}
	if st.RowsIn != 20000 || st.RowsWritten != 1000 || st.RowsWritten+st.RowsRejected+st.RowsSkipped != st.RowsIn {
		t.Fatalf("a sample of 1000 of 20000 rows: %+v, want rows_in = rows_written + rows_rejected + rows_skipped", st)
	}
}

// A --target folder that does not exist says what --target takes. Before, the error was the
// operating system's alone: `--target out/nope: stat out/nope: no such file or directory`.
func TestVerifyMissingTargetSaysWhatItTakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 10, 1)
	missing := filepath.Join(dir, "nope")
	code, _, stderr := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--target", missing, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "give --target the --out of the migration") {
		t.Errorf("exit %d, want %d naming %s and what --target takes:\n%s", code, exitVerifyFailed, missing, stderr)
	}
}

// A data file the manifest lists but the folder lacks fails the verify (it cannot say what the
// target holds) with what to do: point --target at the whole output, or migrate again. Before,
// the error ended in a question, "was the output moved or cleaned up?", with no next step.
func TestVerifyMissingDataFileSaysWhatToDo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 200, 1)
	out := filepath.Join(dir, "out")
	mapping := "../../mappings/orders.yaml"
	if code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", out, "--progress", "never"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, stdout, stderr)
	}
	files, err := filepath.Glob(filepath.Join(out, "data", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data file: %v", err)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "verify", "-m", mapping, "--source", "file:"+src, "--target", out, "--progress", "never")
	if code != exitVerifyFailed || !strings.Contains(stderr, "which is not there") || !strings.Contains(stderr, "migrate again") {
		t.Errorf("exit %d, want %d naming the missing file and what to do:\n%s", code, exitVerifyFailed, stderr)
	}
}

// verify's --stats-json gives the time and rate its summary and --json give: the verify's own.
// Before, its time ran until the summary, --json and --repair's file had been written (and from
// before the temp folder was made), so its seconds and rows_per_sec disagreed with the summary's
// for the same run.
func TestVerifyStatsTimeIsTheSummarys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=2000", "--out", out, "--progress", "never")
	stats, jsonOut := filepath.Join(dir, "stats.json"), filepath.Join(dir, "verify.json")
	if code, o, e := runCLI(t, "verify", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=2000", "--target", out,
		"--json", jsonOut, "--stats-json", stats, "--progress", "never"); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, o, e)
	}
	var st runStats
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats: %v %s", err, data)
	}
	var res struct {
		Seconds    float64 `json:"seconds"`
		RowsPerSec float64 `json:"rows_per_sec"`
	}
	if data, err := os.ReadFile(jsonOut); err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("--json: %v %s", err, data)
	}
	if st.Seconds != res.Seconds || st.RowsPerSec != res.RowsPerSec {
		t.Fatalf("--stats-json: %g s, %g rows/s; --json and the summary: %g s, %g rows/s", st.Seconds, st.RowsPerSec, res.Seconds, res.RowsPerSec)
	}
}
