package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/gen"
)

func writeOrdersCSV(tb testing.TB, rows int64) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "orders.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := gen.WriteCSV(f, "orders", rows, 7); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

func BenchmarkFileCSV(b *testing.B) {
	const rows = 100000
	path := writeOrdersCSV(b, rows)
	schema, _ := gen.Columns("orders")
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	var total int64
	for i := 0; i < b.N; i++ {
		src, err := New(Config{Path: path, Schema: schema}, nil)
		if err != nil {
			b.Fatal(err)
		}
		out := make(chan pipeline.Batch, 16)
		errc := make(chan error, 1)
		go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
		for batch := range out {
			for _, r := range batch.Records {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			total += int64(len(batch.Records))
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	if total != int64(b.N)*rows {
		b.Fatalf("rows %d, want %d", total, int64(b.N)*rows)
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(total), "cpu-ns/row")
}

// TestLargeCSVThroughput reads a 5M-row orders CSV like the project benchmark's. Opt-in:
// REKEY_LARGE=1 go test -run LargeCSV -v ./source/file/
func TestLargeCSVThroughput(t *testing.T) {
	if os.Getenv("REKEY_LARGE") == "" {
		t.Skip("set REKEY_LARGE=1")
	}
	const rows = 5000000
	path := writeOrdersCSV(t, rows)
	st, _ := os.Stat(path)
	schema, _ := gen.Columns("orders")
	chunk, _ := strconv.Atoi(os.Getenv("REKEY_CHUNK"))
	for round := 0; round < 3; round++ {
		start, cpu0 := time.Now(), cpuTime()
		src, err := New(Config{Path: path, Schema: schema, ChunkSize: chunk}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan pipeline.Batch, 16)
		errc := make(chan error, 1)
		go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
		var n int64
		for b := range out {
			n += int64(len(b.Records))
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		el, cpu := time.Since(start), cpuTime()-cpu0
		t.Logf("%d rows, %d MB in %v: %.2fM rows/s; CPU %v (%.0f ns/row, %.2fM rows per CPU-second)",
			n, st.Size()>>20, el, float64(n)/el.Seconds()/1e6, cpu, float64(cpu.Nanoseconds())/float64(n), float64(n)/cpu.Seconds()/1e6)
		if n != rows {
			t.Fatalf("rows %d", n)
		}
	}
}

// cpuTime is the process's user+system CPU time, a measure that other load on the machine
// does not inflate as much as wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseChunk measures the single-threaded parse of one 4 MiB chunk of orders rows.
func BenchmarkParseChunk(b *testing.B) { benchParseChunk(b, CSVOptions{}) }

// BenchmarkParseChunkDialect parses the same chunk with the general dialect parser (null= set,
// which the RFC 4180 fast path does not read), as a TSV or dsbulk export is parsed.
func BenchmarkParseChunkDialect(b *testing.B) { benchParseChunk(b, CSVOptions{Null: `\N`}) }

func benchParseChunk(b *testing.B, opts CSVOptions) {
	path := writeOrdersCSV(b, 100000)
	schema, _ := gen.Columns("orders")
	src, err := New(Config{Path: path, Schema: schema, CSV: opts}, nil)
	if err != nil {
		b.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	data = data[src.dataStart:]
	data = data[:bytes.LastIndexByte(data[:4<<20], '\n')+1]
	c := &chunk{data: string(data), line: 2, lines: bytes.Count(data, []byte{'\n'})}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		src.parseChunk(c)
	}
	rows := float64(b.N) * float64(c.lines)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/rows, "cpu-ns/row")
}
