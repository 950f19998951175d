package main

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/transform"
)

// A mapping like orders.yaml, but rejecting unknown channels, so that the test plants every kind
// of bad row.
const strictOrders = `version: 1
source:
  name: shop.orders
  columns: {userid: text, orderid: bigint, channel: text, ts: timestamp, status: text, location: text, amount: decimal}
target:
  table: orders
  primary_key: "[md5(userid).substr(0,4) + userid AS pk1][orderid]"
  columns:
    channel: code(channel, channels)
    amount: "amount :: DECIMAL(18,2)"
  exclude: [userid]
  codes:
    channels: {taobao: tb, alipay: ap, wechat: wx, jd: jd, pdd: pd}
  on_missing_code: reject
regions:
  count: 16
`

var channelCodes = map[string]string{"taobao": "tb", "alipay": "ap", "wechat": "wx", "jd": "jd", "pdd": "pd"}

// expectedRows computes, independently of transform/, the target rows of the good CSV rows:
// pk1 = first 4 hex of md5(userid) + userid, keyed by "pk1/orderid".
func expectedRows(t *testing.T, csvPath string) map[string][]string {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, rec := range recs[1:] {
		if len(rec) != 7 {
			continue
		}
		if _, err := strconv.ParseInt(rec[1], 10, 64); err != nil {
			continue
		}
		code, ok := channelCodes[rec[2]]
		if !ok || len(rec[0]) > 2000 {
			continue
		}
		sum := md5.Sum([]byte(rec[0]))
		pk1 := hex.EncodeToString(sum[:])[:4] + rec[0]
		out[pk1+"/"+rec[1]] = []string{pk1, rec[1], code, rec[6], rec[3], rec[4], rec[5]}
	}
	return out
}

// TestMigrateCSVEndToEnd runs `rekey migrate` on a CSV with planted bad rows and reads every
// Parquet file back with parquet-go: schema, values, region bounds, and counts that add up.
func TestMigrateCSVEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := gen.WriteCSV(&buf, "orders", 20000, 3); err != nil {
		t.Fatal(err)
	}
	// Plant bad rows: a wrong type, an unknown channel, a key over 2 KB, a short line.
	buf.WriteString("u1,notanumber,taobao,1700000000000,PAID,X,1.00\n")
	buf.WriteString("u2,5,paypal,1700000000000,PAID,X,1.00\n")
	buf.WriteString(strings.Repeat("u", 2100) + ",6,taobao,1700000000000,PAID,X,1.00\n")
	buf.WriteString("u4,7\n")
	csvPath := writeFile(t, dir, "orders.csv", buf.String())
	mapping := writeFile(t, dir, "orders.yaml", strictOrders)
	out := filepath.Join(dir, "out")

	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+csvPath, "--out", out, "--progress", "never")
	if code != exitRejects || !strings.Contains(stderr, "4 of 20004 rows were rejected") {
		t.Fatalf("exit %d, want 1: completed with rejects\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.RowsIn != 20004 || m.RowsRejected != 4 || m.RowsWritten != 20000 {
		t.Fatalf("manifest counts in=%d written=%d rejected=%d", m.RowsIn, m.RowsWritten, m.RowsRejected)
	}
	codes := map[string]int{}
	for _, line := range readLines(t, filepath.Join(out, output.RejectsFile)) {
		var rj output.Reject
		if err := json.Unmarshal([]byte(line), &rj); err != nil {
			t.Fatalf("rejects line %q: %v", line, err)
		}
		if rj.Position == "" || rj.Raw == "" || rj.Message == "" {
			t.Errorf("reject lacks position, raw row or message: %+v", rj)
		}
		codes[rj.Code]++
	}
	if codes[pipeline.CodeType] != 1 || codes[pipeline.CodeDictMiss] != 1 || codes[pipeline.CodeKeyTooLong] != 1 || codes[pipeline.CodeParse] != 1 {
		t.Fatalf("reject codes %v", codes)
	}

	prog := compileFile(t, mapping)
	schema := prog.Target()
	plan := pipeline.RegionPlan{Type: pipeline.TypeVarchar, Strategy: m.Plan.Strategy}
	for _, s := range m.Plan.Splits {
		plan.Splits = append(plan.Splits, pipeline.Text(s))
	}
	if plan.Count() != 16 || m.Plan.Strategy != "hex_prefix" {
		t.Fatalf("plan %+v", m.Plan)
	}
	want := expectedRows(t, csvPath)
	if len(want) != 20000 {
		t.Fatalf("test bug: %d expected rows", len(want))
	}
	got := map[string][]string{}
	var manifestRows int64
	for _, r := range m.Regions {
		manifestRows += r.Rows
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"required binary pk1 (STRING)", "required int64 orderid", "optional fixed_len_byte_array(8) amount (DECIMAL(18,2))", "optional int64 ts (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS))"} {
				if !strings.Contains(pf.Schema, want) {
					t.Fatalf("%s: schema lacks %q:\n%s", fe.Path, want, pf.Schema)
				}
			}
			if int64(len(pf.Values)) != fe.Rows {
				t.Fatalf("%s: %d rows, manifest says %d", fe.Path, len(pf.Values), fe.Rows)
			}
			for i, vals := range pf.Values {
				if reg := plan.Route(vals[0]); reg != r.Index {
					t.Fatalf("%s: pk1 %q belongs to region %d", fe.Path, vals[0].Str, reg)
				}
				key := vals[0].Str + "/" + strconv.FormatInt(vals[1].Num, 10)
				if _, dup := got[key]; dup {
					t.Fatalf("row %s written twice", key)
				}
				got[key] = pf.Rows[i]
			}
		}
	}
	if manifestRows != 20000 || len(got) != len(want) {
		t.Fatalf("read %d rows (manifest %d), want %d", len(got), manifestRows, len(want))
	}
	for k, w := range want {
		g := got[k]
		// columns: pk1, orderid, channel, amount, ts, status, location
		if g == nil || g[0] != w[0] || g[1] != w[1] || g[2] != w[2] || !sameDecimal(g[3], w[3]) || g[4] != w[4] || g[5] != w[5] || g[6] != w[6] {
			t.Fatalf("row %s: got %v, want %v", k, g, w)
		}
	}
	ddl, err := os.ReadFile(filepath.Join(out, "ddl.sql"))
	if err != nil || !strings.Contains(string(ddl), "SPLITKEYS='1000,2000,3000,4000,5000,6000,7000,8000,9000,a000,b000,c000,d000,e000,f000'") {
		t.Fatalf("ddl.sql: %s %v", ddl, err)
	}
	checkLayout(t, out, "parquet", output.RejectsFile, output.ReplayPrefix+"csv")
}

// checkLayout asserts the output's layout: the data files alone under data/ (LTS runs Spark, whose
// listing recurses into subfolders and reads anything there as data), everything else beside it;
// bulkload.json reads data/.
func checkLayout(t *testing.T, out, ext string, top ...string) {
	t.Helper()
	checkLayoutFilePath(t, out, filepath.Join(out, "data", "*"), ext, top...)
}

// checkLayoutFilePath is checkLayout for an output whose bulkload filePath is wantFilePath (an
// object store's: relative to the bucket).
func checkLayoutFilePath(t *testing.T, out, wantFilePath, ext string, top ...string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(out, "data"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "data" && !regexp.MustCompile(`^data/region-\d{4}$`).MatchString(rel) {
				t.Errorf("data/ holds a folder that is not a region's: %s", rel)
			}
			return nil
		}
		if !regexp.MustCompile(`^data/region-\d{4}/[^/.][^/]*\.` + ext + `$`).MatchString(rel) {
			t.Errorf("data/ holds %s, which is not a data file: the bulk load would read it as data", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk data/: %v", err)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for _, want := range append([]string{"data", output.ManifestFile, output.DDLFile, output.BulkloadFile, output.CheckpointFile}, top...) {
		if !slices.Contains(names, want) {
			t.Errorf("%s lacks %s beside data/ (holds %q)", out, want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, output.RegionDirPrefix) {
			t.Errorf("%s: a region folder outside data/", n)
		}
	}
	var job lindorm.BulkloadJob
	data, err := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if err == nil {
		err = json.Unmarshal(data, &job)
	}
	if err != nil || filepath.Clean(job.ReaderConfig.FilePath) != filepath.Clean(wantFilePath) {
		t.Errorf("bulkload.json filePath %q, want %s (%v)", job.ReaderConfig.FilePath, wantFilePath, err)
	}
}

func sameDecimal(a, b string) bool {
	fa, err1 := strconv.ParseFloat(a, 64)
	fb, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && fa == fb
}

func compileFile(t *testing.T, path string) *transform.Program {
	t.Helper()
	m, err := transform.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestMigrateInterruptThenResume interrupts a run (Ctrl-C, through the run's signals) once it has
// checkpointed written rows: the run stops with exit 130 and leaves no partial or temporary file;
// --resume then finishes, and the output holds every row exactly once.
func TestMigrateInterruptThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	const rows = 400000
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", fmt.Sprintf("gen:orders?rows=%d&seed=5", rows),
		"--out", out, "--progress", "never", "--checkpoint-interval", "100ms", "--max-file-size", "1MiB"}
	sigs := make(chan os.Signal)
	code, stdout, stderr := cliRun{signals: sigs, wrapOut: atCheckpoint(midRun, func() { interrupt(t, sigs, syscall.SIGINT) })}.run(t, args...)
	if code != 130 {
		t.Fatalf("interrupted run: exit %d, want 130\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--resume") {
		t.Fatalf("the message should say how to finish: %s", stderr)
	}
	cp, err := outputtest.Checkpoint(out)
	if err != nil || cp == nil || cp.Complete || cp.RowsWritten == 0 || cp.RowsWritten >= rows {
		t.Fatalf("checkpoint after the interrupt: %+v %v", cp, err)
	}
	schema := compileFile(t, "../../mappings/orders.yaml").Target()
	// Every file under a final name is whole; nothing temporary is left.
	files := 0
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if atomicfile.IsTemp(p) {
			t.Errorf("temporary file left: %s", p)
		}
		if strings.HasSuffix(p, ".parquet") {
			files++
			if _, err := sinktest.ReadParquet(p, schema); err != nil {
				t.Errorf("partial file under a final name: %v", err)
			}
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no committed files after the interrupt")
	}

	args = append(args, "--resume")
	if code, stdout, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.RowsIn != rows || m.RowsWritten != rows {
		t.Fatalf("after resume: in=%d written=%d, want %d", m.RowsIn, m.RowsWritten, rows)
	}
	seen := make(map[string]bool, rows)
	var keys []string
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			pf, err := sinktest.ReadParquet(filepath.Join(out, filepath.FromSlash(fe.Path)), schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range pf.Values {
				k := v[0].Str + "/" + strconv.FormatInt(v[1].Num, 10)
				if seen[k] {
					t.Fatalf("row %s written twice", k)
				}
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(seen) != rows {
		t.Fatalf("%d distinct rows after resume, want %d", len(seen), rows)
	}
	sort.Strings(keys)
}
