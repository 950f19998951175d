package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/rekey/rekey/source/gen"
)

// TestMigrateTruncatedGzipFails: issue 9 item 1, "a truncated .csv.gz finishes with exit 0: rekey
// reads what decompresses, rejects the partial last line (expected 7 fields, got 2) and exits 0
// as if the file were complete". Cut in the part read while opening the source or later, the run
// fails with a non-zero exit naming the file, and writes no manifest.
func TestMigrateTruncatedGzipFails(t *testing.T) {
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
		if code == 0 {
			t.Fatalf("cut at %d of %d bytes: exit 0\n%s%s", cut, gz.Len(), stdout, stderr)
		}
		if !strings.Contains(stderr, path) || !strings.Contains(stderr, "truncated gzip data at compressed byte") {
			t.Errorf("cut at %d: the error should name the file and the position:\n%s", cut, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
			t.Errorf("cut at %d: a manifest was written for a damaged input", cut)
		}
	}
}

// TestDuplicateHeaderFailsRun: issue 9 item 7, "a duplicate header name (amount,amount) silently
// uses the first": migrate and report refuse the file, naming both fields.
func TestDuplicateHeaderFailsRun(t *testing.T) {
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
