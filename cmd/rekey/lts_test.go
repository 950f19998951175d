package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/sink/lindorm"
)

// migrate writes a bulkload.json LTS accepts (form fields src, dst, fileType "Parquet", driverSpec,
// instances; namespace from --namespace; filePath naming data/; the cells' timestamp the run's
// start, kept by --resume) and ends with a "Next steps" block; the DDL does not change with the job
// flags, and --stats-json holds figures only.
func TestMigrateWritesAJobLTSAccepts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 2000, 3)
	plain := filepath.Join(dir, "plain")
	mustRun(t, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", plain, "--progress", "never")

	out := filepath.Join(dir, "out")
	stats := filepath.Join(dir, "stats.json")
	before := time.Now()
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", out, "--progress", "never",
		"--lts-source", "oss_orders", "--lts-target", "lindorm_ld", "--namespace", "shop", "--lts-instances", "6"}
	stdout := mustRun(t, append(args, "--stats-json", stats)...)
	after := time.Now()

	var job lindorm.BulkloadJob
	data, err := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &job); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(out)
	if job.Src != "oss_orders" || job.Dst != "lindorm_ld" || job.FileType != "Parquet" || job.DriverSpec != "large" || job.Instances != 6 ||
		job.WriterConfig.Namespace != "shop" || job.WriterConfig.LindormTable != "orders" ||
		job.ReaderConfig.FilePath != filepath.ToSlash(filepath.Join(abs, "data"))+"/*/" {
		t.Errorf("bulkload.json:\n%s", data)
	}
	if ts := job.WriterConfig.Timestamp; ts == nil || *ts < before.UnixMilli() || *ts > after.UnixMilli() {
		t.Errorf("writerConfig.timestamp %v, want the run's start (between %d and %d)", ts, before.UnixMilli(), after.UnixMilli())
	}
	ddlPlain, _ := os.ReadFile(filepath.Join(plain, output.DDLFile))
	ddl, _ := os.ReadFile(filepath.Join(out, output.DDLFile))
	if len(ddl) == 0 || string(ddl) != string(ddlPlain) {
		t.Errorf("ddl.sql changed with the job flags:\n%s\n---\n%s", ddl, ddlPlain)
	}

	i := strings.Index(stdout, "Next steps")
	if i < 0 || i < strings.Index(stdout, "Migration summary") {
		t.Fatalf("no Next steps block after the summary:\n%s", stdout)
	}
	next := stdout[i:]
	if n := strings.Count(next, "\n"); n > 15 {
		t.Errorf("Next steps has %d lines:\n%s", n, next)
	}
	for _, want := range []string{
		"-D shop < " + filepath.Join(out, "ddl.sql"),
		"Data files: " + strings.TrimSuffix(job.ReaderConfig.FilePath, lindorm.RegionGlob),
		"--data-urlencode src=oss_orders --data-urlencode dst=lindorm_ld --data-urlencode fileType=Parquet",
		"4. Check that shop.orders holds the 2000 rows written, key by key",
		"rekey verify -m ../../mappings/orders.yaml --source file:" + src,
	} {
		if !strings.Contains(next, want) {
			t.Errorf("Next steps lacks %q:\n%s", want, next)
		}
	}
	st, _ := os.ReadFile(stats)
	if strings.Contains(string(st), "Next") || strings.Contains(string(st), "curl") {
		t.Errorf("--stats-json holds the Next block: %s", st)
	}

	// --resume of a run killed before its final files writes the same timestamp (the first
	// attempt's start, from the checkpoint), not the resume's.
	for _, f := range []string{output.ManifestFile, output.DDLFile, output.BulkloadFile} {
		os.Remove(filepath.Join(out, f))
	}
	time.Sleep(5 * time.Millisecond) // the clock moves on: a resume that wrote its own start would show
	mustRun(t, append(args, "--resume")...)
	data2, _ := os.ReadFile(filepath.Join(out, output.BulkloadFile))
	if string(data2) != string(data) {
		t.Errorf("bulkload.json written on resume differs:\n%s\n---\n%s", data2, data)
	}

	// invalid job flags are usage errors
	for _, bad := range [][]string{{"--lts-driver-spec", "huge"}, {"--lts-instances", "-1"}, {"--namespace", " "}} {
		code, _, errs := runCLI(t, append([]string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src,
			"--out", filepath.Join(dir, "bad"), "--progress", "never"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[0]) {
			t.Errorf("%v: exit %d %s", bad, code, errs)
		}
	}
}
