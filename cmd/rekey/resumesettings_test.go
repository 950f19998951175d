package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/sink/sinktest"
)

// A --resume continues the files of its first attempt: --sort and --max-file-size, which shape
// them, are kept from the checkpoint when the resume leaves them out (with a note), and refused
// (exit 2, naming the flag and both values) when it gives them otherwise. Before, the resume took
// the flags as given: `--resume` without the first attempt's --sort wrote the rest of the rows in
// files that are not sorted, and `--resume --sort=false` or another --max-file-size was accepted,
// the output a silent mix of both.
func TestResumeKeepsTheSettingsThatShapeTheFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 60000, 7)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// a bad row early on stops the first attempt (--max-rejects 0) long before the end
	lines := strings.SplitAfter(string(b), "\n")
	bad := "u1,notanumber,taobao,1704067200003,DELIVERED,Shenzhen,1.00\n"
	writeFile(t, dir, "orders.csv", strings.Join(lines[:1001], "")+bad+strings.Join(lines[1001:], ""))
	out := filepath.Join(dir, "out")
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", out, "--progress", "never", "--regions", "4"}
	code, stdout, stderr := runCLI(t, append(args, "--sort", "--max-file-size", "64MiB", "--max-rejects", "0")...)
	if code != exitFailed {
		t.Fatalf("first attempt: exit %d, want 3 (too many rejects)\n%s%s", code, stdout, stderr)
	}
	if cp, err := outputtest.Checkpoint(out); err != nil || cp == nil || cp.Complete {
		t.Fatalf("first attempt: want a checkpoint of a run not read to its end: %+v %v", cp, err)
	}

	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--sort=false"}, "--sort: true then, false now"},
		{[]string{"--sort", "--max-file-size", "1MiB"}, "--max-file-size: 64.0 MiB then, 1.0 MiB now"},
	} {
		resume := append(append(append([]string{}, args...), "--resume", "--max-rejects", "-1"), c.flags...)
		code, stdout, stderr := runCLI(t, resume...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("rekey %s: exit %d, want 2 with %q\n%s%s", strings.Join(resume, " "), code, c.want, stdout, stderr)
		}
	}

	// the same command with --resume and without --sort: the rest of the rows sorted as the first
	code, stdout, stderr = runCLI(t, append(args, "--resume", "--max-rejects", "-1")...)
	if code != exitRejects {
		t.Fatalf("resume: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "--sort") {
		t.Errorf("resume: no note that --sort is kept from the first attempt:\n%s", stderr)
	}
	schema := compileFile(t, "../../mappings/orders.yaml").Target()
	files, _ := filepath.Glob(filepath.Join(out, "data", "*", "*.parquet"))
	if len(files) < 8 {
		t.Fatalf("want the files of both attempts (2 per region at least), got %v", files)
	}
	rows := 0
	for _, p := range files {
		f, err := sinktest.ReadParquet(p, schema)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(f.Values)
		for i := 1; i < len(f.Values); i++ {
			if schema.CompareKeys(f.Values[i-1], f.Values[i]) > 0 {
				t.Errorf("%s: row %d is before row %d in key order: the file is not sorted", p, i, i-1)
				break
			}
		}
	}
	if rows != 60000 {
		t.Errorf("files hold %d rows, want 60000", rows)
	}
}
