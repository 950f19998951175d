package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/gen"
)

// TestMigrateTruncatedGzipFails: before, a truncated .csv.gz finished with exit 0: rekey read what
// decompressed, rejected the partial last line (expected 7 fields, got 2) and exited 0 as if the
// file were complete. Cut in the part read while opening the source or later, the run fails with a
// non-zero exit naming the file, and writes no manifest.
func TestMigrateTruncatedGzipFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csv, gz bytes.Buffer
	if err := gen.WriteCSV(&csv, "orders", 60000, 3); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(&gz)
	zw.Write(csv.Bytes())
	zw.Close()
	mapping := writeFile(t, dir, "orders.yaml", strictOrders)
	for _, cut := range []int{gz.Len() / 50, gz.Len() / 2, gz.Len() - 4} {
		path := writeFile(t, dir, fmt.Sprintf("orders-%d.csv.gz", cut), string(gz.Bytes()[:cut]))
		out := filepath.Join(dir, fmt.Sprintf("out-%d", cut))
		code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+path, "--out", out, "--progress", "never")
		if code != exitFailed {
			t.Fatalf("cut at %d of %d bytes: exit %d, want 3 (the run failed)\n%s%s", cut, gz.Len(), code, stdout, stderr)
		}
		if !strings.Contains(stderr, path) || !strings.Contains(stderr, "truncated gzip data at compressed byte") {
			t.Errorf("cut at %d: the error should name the file and the position:\n%s", cut, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
			t.Errorf("cut at %d: a manifest was written for a damaged input", cut)
		}
	}
}

// TestMigrateStrayQuote: before, a quote on line 503 of 1,000 made rows_in 501, the 499 later rows
// inside one reject's raw. Now the quote's line is the one reject and the counts add up to every
// line of the file.
func TestMigrateStrayQuote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csv bytes.Buffer
	if err := gen.WriteCSV(&csv, "orders", 1000, 3); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(csv.String(), "\n")
	lines[502] = strings.Replace(lines[502], ",", `,"`, 1) // line 503: a quote that opens field 2
	path := writeFile(t, dir, "orders.csv", strings.Join(lines, ""))
	mapping := writeFile(t, dir, "orders.yaml", strictOrders)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+path, "--out", out, "--progress", "never")
	if code != exitRejects {
		t.Fatalf("exit %d, want 1 (completed with a reject)\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.RowsIn != 1000 || m.RowsWritten != 999 || m.RowsRejected != 1 {
		t.Fatalf("manifest counts in=%d written=%d rejected=%d, want 1000 = 999 + 1", m.RowsIn, m.RowsWritten, m.RowsRejected)
	}
	rejects := readLines(t, filepath.Join(out, output.RejectsFile))
	var rj output.Reject
	if len(rejects) != 1 || json.Unmarshal([]byte(rejects[0]), &rj) != nil {
		t.Fatalf("rejects: %q", rejects)
	}
	if rj.Position != "orders.csv:503" || rj.Code != pipeline.CodeParse || rj.Raw != strings.TrimSuffix(lines[502], "\n") ||
		!strings.Contains(rj.Message, "is not closed within --max-record-size (16 MiB)") {
		t.Fatalf("reject: %+v", rj)
	}

	// --max-record-size: a quoted field longer than it is cut back to its first line, and its
	// other 600 lines are rejected one by one (one field each, two on the last); 2KiB reads it.
	lines[502] = strings.Replace(lines[502], `,"`, ",", 1)
	lines[10] = `u1,1,taobao,1704067200003,DELIVERED,"` + strings.Repeat("x\n", 600) + "\",79.96\n" // 1,250 bytes
	path = writeFile(t, dir, "long.csv", strings.Join(lines, ""))
	for _, tc := range []struct {
		limit            string
		in, written, rej int64
	}{{"1KiB", 1600, 999, 601}, {"2KiB", 1000, 1000, 0}} {
		out := filepath.Join(dir, "out-"+tc.limit)
		code, stdout, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+path, "--out", out, "--progress", "never", "--max-record-size", tc.limit, "--max-rejects", "-1")
		if want := map[bool]int{true: exitRejects, false: 0}[tc.rej > 0]; code != want {
			t.Fatalf("--max-record-size %s: exit %d\n%s%s", tc.limit, code, stdout, stderr)
		}
		m, err := outputtest.Manifest(out)
		if err != nil {
			t.Fatal(err)
		}
		if m.RowsIn != tc.in || m.RowsWritten != tc.written || m.RowsRejected != tc.rej {
			t.Fatalf("--max-record-size %s: in=%d written=%d rejected=%d, want %d %d %d", tc.limit, m.RowsIn, m.RowsWritten, m.RowsRejected, tc.in, tc.written, tc.rej)
		}
	}
	if code, _, stderr := runCLI(t, "migrate", "-m", mapping, "--source", "file:"+path, "--out", filepath.Join(dir, "bad"), "--max-record-size", "lots"); code != 2 || !strings.Contains(stderr, "--max-record-size") {
		t.Fatalf("bad --max-record-size: exit %d: %s", code, stderr)
	}
}

// TestDuplicateHeaderFailsRun: before, a duplicate header name (amount,amount) silently used the
// first; migrate and report refuse the file, naming both fields.
func TestDuplicateHeaderFailsRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "dup.csv", "userid,orderid,channel,ts,amount,status,location,amount\nu1,1,taobao,0,1.00,PAID,X,2.00\n")
	mapping := writeFile(t, dir, "orders.yaml", strictOrders)
	for _, args := range [][]string{
		{"migrate", "-m", mapping, "--source", "file:" + path, "--out", filepath.Join(dir, "out"), "--progress", "never"},
		{"report", "-m", mapping, "--source", "file:" + path, "--progress", "never"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, `header names column "amount" twice (fields 5 and 8)`) {
			t.Errorf("%s: exit %d: %s", args[0], code, stderr)
		}
	}
}

// --max-record-size is refused beyond what the command's --memory can hold (a record of 2047 MiB
// with --memory 256MiB took the process to 3 GiB before it was rejected), naming both flags and
// the values that would do; 2GiB itself is refused as too large, not as "at most 2GiB".
func TestMaxRecordSizeWithinMemory(t *testing.T) {
	t.Parallel()
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 10, 1)
	for _, c := range []struct {
		cmd           []string
		limit, memory string
		code          int
		says, mustNot string
	}{
		{[]string{"migrate", "--out", filepath.Join(dir, "a")}, "2047MiB", "256MiB", exitUsage, "raise --memory to 16376MiB or more, or lower --max-record-size to 32MiB or less", ""},
		{[]string{"report", "-q"}, "128MiB", "512MiB", exitUsage, "raise --memory to 1024MiB or more, or lower --max-record-size to 64MiB or less", ""},
		{[]string{"verify", "--target", filepath.Join(dir, "b")}, "128MiB", "512MiB", exitVerifyFailed, "lower --max-record-size to 64MiB or less", ""},
		{[]string{"migrate", "--out", filepath.Join(dir, "c")}, "2GiB", "32GiB", exitUsage, "less than 2GiB (2047MiB at most)", "at most 2GiB"},
		{[]string{"migrate", "--out", filepath.Join(dir, "d")}, "32MiB", "256MiB", 0, "", ""},
	} {
		args := append(append([]string{}, c.cmd...), "-m", mapping, "--source", "file:"+src, "--max-record-size", c.limit, "--memory", c.memory, "--progress", "never")
		code, stdout, stderr := runCLI(t, args...)
		if code != c.code || !strings.Contains(stderr, c.says) || c.mustNot != "" && strings.Contains(stderr, c.mustNot) {
			t.Errorf("rekey %s: exit %d, want %d and %q\n%s%s", strings.Join(args, " "), code, c.code, c.says, stdout, stderr)
		}
	}
}
