package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/rekey/rekey/pipeline"
)

// gzipOrders returns a CSV of rows order lines and its gzip compression.
func gzipOrders(t *testing.T, rows int) (plain, gz []byte) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("id,name,ts,amount\n")
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&b, "%d,user%d,%d,%d.25\n", i, i*7919%100003, 1700000000000+i, i%1000)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b.Bytes())
	zw.Close()
	return b.Bytes(), z.Bytes()
}

// readWhole opens path and reads it to the end as a run would, returning the rows read and the
// first error (from New or Run).
func readWhole(path string, resume map[string]pipeline.StreamState) (int, error) {
	src, err := New(Config{Path: path, Schema: ordersSchema, Workers: 2, ChunkSize: 64 << 10}, nil)
	if err != nil {
		return 0, err
	}
	out := make(chan pipeline.Batch, 4)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), resume, out); close(out) }()
	rows := 0
	for b := range out {
		rows += len(b.Records)
	}
	return rows, <-errc
}

// TestTruncatedGzipFailsRun: before, a truncated .csv.gz finished with exit 0: rekey read what
// decompressed, rejected the partial last line (expected 7 fields, got 2) and exited 0 as if the
// file were complete. A gzip file cut anywhere (in its header, inside the deflate stream, just
// before or inside its 8-byte trailer) must fail, naming the file and the byte positions, whether
// the cut falls in the part New reads (the header line) or later in Run.
func TestTruncatedGzipFailsRun(t *testing.T) {
	plain, gz := gzipOrders(t, 120000) // about 3.5 MB uncompressed: more than New's first read
	if len(plain) < 3<<20 {
		t.Fatalf("test bug: %d bytes uncompressed", len(plain))
	}
	dir := t.TempDir()
	whole := filepath.Join(dir, "orders.csv.gz")
	if err := os.WriteFile(whole, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	if rows, err := readWhole(whole, nil); err != nil || rows != 120000 {
		t.Fatalf("whole file: %d rows, %v", rows, err)
	}
	n := len(gz)
	cuts := map[string]int{
		"mid-header": 5, "after the gzip header": 10, "first deflate bytes": 40,
		"a quarter": n / 4, "mid-stream": n / 2, "near the end": n - 100,
		"just before the trailer": n - 8, "inside the trailer": n - 4, "last byte missing": n - 1,
	}
	for what, cut := range cuts {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.csv.gz", cut))
		if err := os.WriteFile(path, gz[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := readWhole(path, nil)
		if err == nil {
			t.Errorf("%s (cut at %d of %d bytes): no error, %d rows read", what, cut, n, rows)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path) || !strings.Contains(msg, "truncated") ||
			!strings.Contains(msg, fmt.Sprintf("compressed byte %d", cut)) {
			t.Errorf("%s (cut at %d): error should name the file, say truncated and give the position: %v", what, cut, err)
		}
		if cut > 10 && !strings.Contains(msg, "uncompressed byte") {
			t.Errorf("%s (cut at %d): error should give the uncompressed position: %v", what, cut, err)
		}
	}
}

// TestCorruptGzipFailsRun: flipped bytes in a gzip file (a flate error, or a checksum mismatch
// found at the end of the stream) fail the run with the file and position.
func TestCorruptGzipFailsRun(t *testing.T) {
	_, gz := gzipOrders(t, 120000)
	dir := t.TempDir()
	for _, pos := range []int{30, 2000, len(gz) / 2, len(gz) - 6} {
		d := bytes.Clone(gz)
		d[pos] ^= 0x55
		path := filepath.Join(dir, fmt.Sprintf("flip%d.csv.gz", pos))
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := readWhole(path, nil)
		if err == nil {
			t.Errorf("byte %d flipped: no error, %d rows read", pos, rows)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "corrupt") || !strings.Contains(msg, "compressed byte") {
			t.Errorf("byte %d flipped: error should name the file, say corrupt and give the position: %v", pos, err)
		}
	}
}

// TestTruncatedGzipResumeAndSample: the other readers of a gzip file: a resume that skips to its
// cursor through the cut, the sample a region plan reads, and JSON Lines.
func TestTruncatedGzipResumeAndSample(t *testing.T) {
	_, gz := gzipOrders(t, 120000)
	dir := t.TempDir()
	path := filepath.Join(dir, "cut.csv.gz")
	if err := os.WriteFile(path, gz[:len(gz)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// Resume past the cut: the skip to the cursor reads through it.
	_, err := readWhole(path, map[string]pipeline.StreamState{"cut.csv.gz": {Cursor: "off=3000000,line=90000"}})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("resume past the cut: %v", err)
	}
	src, err := New(Config{Path: path, Schema: ordersSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := src.Sample(context.Background(), 1000000); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("sample of the whole file: %d records, %v", len(recs), err)
	}

	var jb strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&jb, `{"id":%d,"name":"n%d","ts":%d,"amount":1.5}`+"\n", i, i, i)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(jb.String()))
	zw.Close()
	jpath := filepath.Join(dir, "cut.jsonl.gz")
	if err := os.WriteFile(jpath, z.Bytes()[:z.Len()-8], 0o644); err != nil {
		t.Fatal(err)
	}
	if rows, err := readWhole(jpath, nil); err == nil || !strings.Contains(err.Error(), jpath) {
		t.Errorf("JSON Lines without its trailer: %d rows, %v", rows, err)
	}
}

// TestNotGzip: an empty .gz file and a plain file named .gz say so, naming the file.
func TestNotGzip(t *testing.T) {
	dir := t.TempDir()
	for name, want := range map[string]string{
		"":                    "is empty: a .gz file holds at least a gzip header",
		"id,name,ts,amount\n": "not a gzip file (its first bytes are not a gzip header): if it is not compressed, drop the .gz",
	} {
		path := filepath.Join(dir, fmt.Sprintf("x%d.csv.gz", len(name)))
		if err := os.WriteFile(path, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{Path: path, Schema: ordersSchema}, nil); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// TestGzipNotNamedGzip: gzip data in a file not named .gz (orders.csv compressed in place, gzip
// on stdin read with format=csv) is refused when it opens, saying it is gzip and how to read it.
// Before, its compressed bytes were read as text: a header "with no column id" quoting them, and
// with header=false or JSON Lines every row a reject of binary bytes.
func TestGzipNotNamedGzip(t *testing.T) {
	_, gz := gzipOrders(t, 3)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		opts CSVOptions
	}{
		{"orders.csv", CSVOptions{}},
		{"orders2.csv", CSVOptions{NoHeader: true}},
		{"orders.jsonl", CSVOptions{}},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, gz, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := New(Config{Path: path, Schema: ordersSchema, CSV: c.opts}, nil)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is gzip-compressed") {
			t.Errorf("%s: %v, want an error saying it is gzip", c.name, err)
		}
	}
	_, err := New(Config{Path: "stdin", Stdin: bytes.NewReader(gz), Format: "csv", Schema: ordersSchema}, nil)
	if err == nil || !strings.Contains(err.Error(), "format=csv.gz") {
		t.Errorf("gzip on stdin read with format=csv: %v, want an error pointing to format=csv.gz", err)
	}
}
