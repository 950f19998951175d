package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ddl refuses a --source its region plan does not read (exit 2, naming --source and the plan):
// a hex prefix of a fixed count (orders.yaml: 16 regions) or explicit split keys are placed
// without data, and a file source gives no schema. Before, ddl opened the file and printed the
// same statement as without it, the user led to think the split keys came from the data. A plan
// placed from the data (regions.size, quantile split keys) still reads it.
func TestDDLRefusesASourceItsPlanDoesNotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 2000, 1)
	for _, args := range [][]string{
		{"ddl", "-m", "../../mappings/orders.yaml", "--source", "file:" + src},
		{"ddl", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--regions", "64"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--source") || !strings.Contains(stderr, "leave --source out") {
			t.Errorf("rekey %s: exit %d, want 2 refusing --source:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// regions.size: the source's size sets the count; the statement is printed
	mapping := writeFile(t, dir, "sized.yaml", strings.Replace(readText(t, "../../mappings/orders.yaml"), "  count: 16", "  size: 1MiB", 1))
	if out := mustRun(t, "ddl", "-m", mapping, "--source", "file:"+src); !strings.Contains(out, "CREATE TABLE") {
		t.Errorf("ddl of a sized plan with --source:\n%s", out)
	}
}

// regions.size derives the region count from the data size: a run that cannot estimate it (ddl or
// check without --source, a gzip file whose rows are not known) is refused (exit 2), saying to
// give a source or set regions.count. Before, the plan silently had one region: ddl printed a
// CREATE TABLE without SPLITKEYS and migrate of orders.csv.gz wrote every row into one region,
// while the same mapping over orders.csv gave 27.
func TestSizedRegionsWithoutADataSizeRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 20000, 1)
	mapping := writeFile(t, dir, "sized.yaml", strings.Replace(readText(t, "../../mappings/orders.yaml"), "  count: 16", "  size: 256KiB", 1))
	gz := filepath.Join(dir, "gz", "orders.csv.gz")
	if err := os.MkdirAll(filepath.Dir(gz), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(readText(t, src))); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ddl", "-m", mapping},
		{"check", "-m", mapping},
		{"migrate", "-m", mapping, "--source", "file:" + gz, "--out", filepath.Join(dir, "out-gz"), "--progress", "never"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stdout+stderr, "regions.size") || !strings.Contains(stdout+stderr, "regions.count") {
			t.Errorf("rekey %s: exit %d, want 2 saying regions.size needs the data size:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// with a size to go by, the count follows from it
	out := mustRun(t, "migrate", "-m", mapping, "--source", "file:"+src, "--out", filepath.Join(dir, "out"), "--progress", "never")
	if !strings.Contains(out, "hex_prefix") {
		t.Errorf("migrate of the plain file: want a hex_prefix plan of several regions:\n%s", out)
	}
	if out := mustRun(t, "ddl", "-m", mapping, "--source", "file:"+src); !strings.Contains(out, "SPLITKEYS") {
		t.Errorf("ddl with --source: want SPLITKEYS:\n%s", out)
	}
}
