package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/transform"
)

// reportCLI runs the command line in-process and returns its exit code and output (stdout and
// stderr together).
func reportCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out lockedBuffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &out, os.Getenv)
	return code, out.String()
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonOut, htmlOut, stats := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html"), filepath.Join(dir, "stats.json")
	code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=30000",
		"--json", jsonOut, "--html", htmlOut, "--stats-json", stats, "--nodes", "2", "--progress", "never", "--tmp", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"VERDICT  OK", "FINDINGS", "REGIONS  16 regions, hex_prefix from mapping", "ADVISOR", "WITH (SPLITKEYS='"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Schema  string `json:"schema"`
		Verdict struct {
			ExitCode int `json:"exit_code"`
		} `json:"verdict"`
		Totals struct {
			RowsRead int64 `json:"rows_read"`
		} `json:"totals"`
		Recommendation struct {
			API struct {
				Regions int `json:"regions"`
			} `json:"api"`
		} `json:"recommendation"`
	}
	data, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Schema != "rekey.report/v1" || doc.Totals.RowsRead != 30000 ||
		doc.Recommendation.API.Regions != 8 {
		t.Errorf("json: %v %+v", err, doc)
	}
	if html, err := os.ReadFile(htmlOut); err != nil || !bytes.Contains(html, []byte(`id="heatmap"`)) {
		t.Errorf("html: %v", err)
	}
	var st struct {
		RowsIn  int64 `json:"rows_in"`
		PeakRSS int64 `json:"peak_rss_bytes"`
	}
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil || st.RowsIn != 30000 || st.PeakRSS <= 0 {
		t.Errorf("stats: %v %s", err, data)
	}
	// the collision check's temp files are gone
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("left in --tmp: %v", entries)
	}
}

func TestReportExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// channel has 5 values: warnings, no errors
	const yml = `version: 1
source:
  columns: {userid: text, orderid: bigint, channel: text, ts: timestamp, status: text, location: text, amount: decimal}
target:
  table: orders_by_channel
  primary_key: "[channel][orderid]"
`
	warn := filepath.Join(dir, "by_channel.yaml")
	if err := os.WriteFile(warn, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "gen:orders?rows=20000"
	if code, out := reportCLI(t, "report", "-m", warn, "--source", src, "-q", "--progress", "never"); code != 0 || !strings.Contains(out, "0 errors") {
		t.Errorf("warnings only: exit %d\n%s", code, out)
	}
	if code, out := reportCLI(t, "report", "-m", warn, "--source", src, "-q", "--strict", "--progress", "never"); code != 1 {
		t.Errorf("--strict with warnings: exit %d\n%s", code, out)
	}
	// a key that leaves out what identifies an order: collisions, exit 2
	bad := filepath.Join(dir, "by_user.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(yml, `"[channel][orderid]"`, `"[userid]"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := reportCLI(t, "report", "-m", bad, "--source", src, "--sample", "50%", "--progress", "never")
	if code != 2 || !strings.Contains(out, "ERROR  uniqueness") {
		t.Errorf("collisions: exit %d\n%s", code, out)
	}
	if code, out := reportCLI(t, "report", "-m", bad, "--source", src, "--sample", "nope"); code != 2 || !strings.Contains(out, "--sample") {
		t.Errorf("bad --sample: exit %d\n%s", code, out)
	}
}

// Alternatives are exported as mapping YAML (--write-mapping DIR), ready for rekey check: one file
// per alternative, each loads and compiles, and `rekey check` accepts it.
func TestReportWriteMapping(t *testing.T) {
	t.Parallel()
	dir, tmp := t.TempDir(), t.TempDir()
	out := filepath.Join(dir, "designs")
	code, text := reportCLI(t, "report", "-m", "../../report/testdata/logs_by_time.yaml", "--source", "gen:logs?rows=20000",
		"--query", "ts range", "--query", "hostname=, ts range", "--write-mapping", out, "--json", filepath.Join(dir, "r.json"), "--progress", "never", "--tmp", tmp)
	if code != 2 { // the mapping's key collides: exit 2 as always
		t.Fatalf("exit %d:\n%s", code, text)
	}
	// the next steps name the folder this command wrote, not the flag it already has
	if strings.Contains(text, "--write-mapping DIR") || !strings.Contains(text, "mapping files in "+out) {
		t.Errorf("the next steps tell to add --write-mapping, which the command has:\n%s", text)
	}
	var doc struct {
		Alternatives []struct {
			ID        string `json:"id"`
			IsMapping bool   `json:"is_mapping"`
			Error     string `json:"error"`
			PK        string `json:"primary_key"`
		} `json:"alternatives"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil || json.Unmarshal(data, &doc) != nil {
		t.Fatalf("json: %v", err)
	}
	want := map[string]bool{}
	for _, a := range doc.Alternatives {
		if !a.IsMapping && a.Error == "" {
			want[a.ID+".yaml"] = true
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) || len(want) < 5 {
		t.Fatalf("wrote %d files, want %d: %v", len(entries), len(want), entries)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("unexpected file %s", e.Name())
		}
		path := filepath.Join(out, e.Name())
		if !strings.Contains(text, path) {
			t.Errorf("the output does not list %s", path)
		}
		m, err := transform.Load(path)
		if err == nil {
			_, err = transform.Compile(m, nil)
		}
		if err != nil {
			t.Errorf("%s does not compile: %v", e.Name(), err)
			continue
		}
		if len(m.Queries) != 2 || m.Queries[1].Range != "ts" || m.Target.Options[0][0] != "COMPRESSION" {
			t.Errorf("%s: queries %v, options %v", e.Name(), m.Queries, m.Target.Options)
		}
		// check accepts the file; with --source it also judges the data, whose colliding log
		// rows (every design reads the same columns) are the one error it may find
		if c, out := reportCLI(t, "check", "-m", path, "--source", "gen:logs?rows=2000"); c != 0 &&
			(c != 2 || !strings.Contains(out, "\nRegion plan: ") || !strings.Contains(out, "breaks Lindorm's design rules (uniqueness)")) {
			t.Errorf("rekey check %s: exit %d\n%s", e.Name(), c, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "bucket.yaml"))
	if err != nil || !strings.Contains(string(b), `primary_key: "[ts % 16 AS rk_bucket][ts][hostname][log-event]`) ||
		!strings.HasPrefix(string(b), "# bucket: modulo bucket, derived from ../../report/testdata/logs_by_time.yaml") {
		t.Errorf("bucket.yaml: %v\n%s", err, b)
	}
}

func TestReportQueryFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ q, want string }{
		{"device=, ts range", `"device" is not a source column`},
		{"ts", "is neither COLUMN=, COLUMN range nor newest_first"},
	} {
		code, out := reportCLI(t, "report", "-m", "../../report/testdata/logs_by_time.yaml", "--source", "gen:logs?rows=100", "--query", c.q, "--progress", "never")
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("--query %q: exit %d\n%s", c.q, code, out)
		}
	}
}

// Data cannot drive the terminal through the text report: a key and values holding escape
// sequences (retitle, recolour, clear) and other control characters are shown escaped, as
// strconv.Quote writes them (the region bounds printed them raw).
func TestReportEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const mapping = `version: 1
source:
  columns: {k: text, v: text}
target:
  table: t
  primary_key: "[k]"
`
	m := writeFile(t, dir, "m.yaml", mapping)
	var in strings.Builder
	in.WriteString("k,v\n")
	for i := 0; i < 50; i++ {
		// each key twice, with other values: collisions the report shows as examples
		in.WriteString("\"\x1b]0;retitled\x07key" + strconv.Itoa(i) + "\",\"\x1b[31mred\x1b[2J\"\n")
		in.WriteString("\"\x1b]0;retitled\x07key" + strconv.Itoa(i) + "\",\"\u009b\u202eother\"\n")
	}
	csv := writeFile(t, dir, "in.csv", in.String())
	code, out := reportCLI(t, "report", "-m", m, "--source", "file:"+csv, "--progress", "never")
	if code != 2 || !strings.Contains(out, "ERROR  uniqueness") {
		t.Fatalf("collisions: exit %d\n%s", code, out)
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && !strconv.IsPrint(r) }); i >= 0 {
		t.Fatalf("the report prints the data's control character %q raw: ...%q...", out[i], out[max(0, i-40):min(len(out), i+40)])
	}
	if !strings.Contains(out, `key \x1b]0;retitled\x07key`) { // the colliding keys
		t.Errorf("the report does not show the key escaped:\n%s", out)
	}
	if strings.Contains(out, `\\x1b`) { // a value escaped, then quoted: its backslashes doubled
		t.Errorf("the report escapes a value twice:\n%s", out)
	}
}

// report collects at its own pace (reportGCPercent, not the GOGC=400 of verify and replicate);
// GOGC in the environment still wins.
func TestReportCollectsAtItsPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // --memory sets the process's limits
	run1 := func(gogc string) int {
		getenv := func(k string) string {
			switch k {
			case "GOGC":
				return gogc
			case "GOMEMLIMIT":
				return ""
			}
			return os.Getenv(k)
		}
		var out lockedBuffer
		args := []string{"report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=2000", "--progress", "never", "--tmp", t.TempDir()}
		if code := run(context.Background(), args, strings.NewReader(""), &out, &out, getenv); code != 0 {
			t.Fatalf("exit %d: %s", code, out.String())
		}
		return debug.SetGCPercent(400)
	}
	if got := run1(""); got != 200 {
		t.Fatalf("report ran with GOGC=%d, want 200", got)
	}
	if got := run1("50"); got != 400 {
		t.Fatalf("with GOGC=50 in the environment report set GOGC=%d itself, want it left alone", got)
	}
}

// A sampled report's --stats-json counted every row read in rows_in but only the rows the sample
// analysed as written or rejected, so its figures did not add up (30,000 rows in, some 3,000
// accounted for). The rows the sample left out are its rows_skipped: rows_in = rows_written +
// rows_rejected + rows_skipped, as in every other summary.
func TestReportSampleStatsAddUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats.json")
	code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=30000", "--sample", "10%",
		"--stats-json", stats, "--progress", "never", "--tmp", dir, "-q")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var st runStats
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats: %v %s", err, data)
	}
	if st.RowsIn != 30000 || st.RowsWritten+st.RowsRejected >= st.RowsIn || st.RowsWritten+st.RowsRejected+st.RowsSkipped != st.RowsIn {
		t.Fatalf("a 10%% sample of 30000 rows: %+v, want rows_in = rows_written + rows_rejected + rows_skipped", st)
	}
}

// The next step the report prints for a derived design ranked first runs as printed: its rekey
// check command, given the folder --write-mapping wrote, exits 0. A design whose split keys are
// quantiles of the data (here [userid][orderid DESC]) needs the source to place them.
func TestReportNextStepCheckRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	designs := filepath.Join(dir, "designs")
	code, text := reportCLI(t, "report", "-m", "../../docs/examples/user_orders.yaml", "--source", "gen:orders?rows=20000",
		"--write-mapping", designs, "--progress", "never", "--tmp", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	_, next, ok := strings.Cut(text, "\n  next: ")
	if !ok {
		t.Fatalf("no next step:\n%s", text)
	}
	_, cmd, ok := strings.Cut(next, "rekey check ")
	if ok {
		cmd, _, ok = strings.Cut(cmd, " prints its key and regions")
	}
	if !ok {
		t.Fatalf("the next step names no rekey check command: %s", next)
	}
	args := shellWords(strings.ReplaceAll(cmd, "DIR/", designs+"/"))
	if c, out := reportCLI(t, append([]string{"check"}, args...)...); c != 0 {
		t.Errorf("rekey check %s, as the next step prints it: exit %d\n%s", cmd, c, out)
	}
}

// report --help says what the report judges monotonicity and hotspots in: the order the
// application writes rows in (a declared column, WRITETIME(), Kafka timestamps or offsets, a
// time column), the order it read them in only when nothing tells it, never arrival order as such.
func TestReportHelpJudgesInWriteOrder(t *testing.T) {
	t.Parallel()
	out := mustRun(t, "report", "--help")
	for _, want := range []string{"monotonicity in write order", "the rows in write order cut into windows", "write_order_unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("report --help does not say %q:\n%s", want, out)
		}
	}
}

// report -q prints only its verdict line: on a sample, that line says so, as the full report's
// source line does, so that a verdict on part of the input does not pass for the whole's.
func TestReportQuietSaysItSampled(t *testing.T) {
	t.Parallel()
	code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=20000", "--sample", "50%", "--progress", "never", "-q")
	if code != 0 || !strings.Contains(out, "on a sample: 1 row in 2") {
		t.Errorf("report -q --sample 50%%: exit %d: %s", code, out)
	}
	if _, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=2000", "--progress", "never", "-q"); strings.Contains(out, "sample") {
		t.Errorf("report -q of every row: %s", out)
	}
}

// A gzip file cannot be read from the middle: its sample is its first rows. --sample N of it
// says so ("first N rows", of an input whose size is not known), not "spread over the input",
// which it is not: an export sorted by the key shows only the head of the key space.
func TestReportSampleOfAGzipFileSaysItIsTheFirstRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csv bytes.Buffer
	csv.WriteString("id,note\n")
	for i := range 50000 {
		fmt.Fprintf(&csv, "%d,n%d\n", i, i%7)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(csv.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data, m, js := filepath.Join(dir, "ids.csv.gz"), filepath.Join(dir, "m.yaml"), filepath.Join(dir, "r.json")
	if err := os.WriteFile(data, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const mapping = "version: 1\nsource:\n  name: ids\n  columns:\n    id: bigint\n    note: text\ntarget:\n  table: ids\n  primary_key: \"[md5(id).substr(0,4) + id AS k]\"\n  columns:\n    note: note\nregions:\n  count: 16\n"
	if err := os.WriteFile(m, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := reportCLI(t, "report", "-m", m, "--source", "file:"+data, "--sample", "1000", "--progress", "never", "--tmp", dir, "--json", js)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep struct {
		Source struct {
			Sampled    bool
			Sample     string
			ScaleKnown bool `json:"scale_known"`
		}
		Totals struct {
			RowsRead int64 `json:"rows_read"`
		}
	}
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("json: %v %s", err, b)
	}
	if !rep.Source.Sampled || strings.Contains(rep.Source.Sample, "spread") || !strings.Contains(rep.Source.Sample, "first 1000 rows") || rep.Source.ScaleKnown || rep.Totals.RowsRead != 1000 {
		t.Errorf("--sample 1000 of a gzip file: source %+v, read %d; want the first 1000 rows, named so\n%s", rep.Source, rep.Totals.RowsRead, out)
	}
}

// report's --stats-json gives the time and rate its TOTALS and --json give: the analysis's own.
// Before, its time ran until the text, --json and --html had been written, so its seconds and
// rows_per_sec disagreed with the report's for the same run.
func TestReportStatsTimeIsTheReports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stats, jsonOut := filepath.Join(dir, "stats.json"), filepath.Join(dir, "r.json")
	code, out := reportCLI(t, "report", "-m", "../../mappings/orders.yaml", "--source", "gen:orders?rows=5000", "--json", jsonOut,
		"--html", filepath.Join(dir, "r.html"), "--stats-json", stats, "--progress", "never", "--tmp", dir, "-q")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var st runStats
	if data, err := os.ReadFile(stats); err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("stats: %v %s", err, data)
	}
	var rep struct {
		Totals struct {
			Seconds    float64 `json:"seconds"`
			RowsPerSec float64 `json:"rows_per_sec"`
		} `json:"totals"`
	}
	if data, err := os.ReadFile(jsonOut); err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("--json: %v %s", err, data)
	}
	if st.Seconds != rep.Totals.Seconds || st.RowsPerSec != rep.Totals.RowsPerSec {
		t.Fatalf("--stats-json: %g s, %g rows/s; the report's totals: %g s, %g rows/s", st.Seconds, st.RowsPerSec, rep.Totals.Seconds, rep.Totals.RowsPerSec)
	}
}
