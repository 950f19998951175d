package libs_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/gen"
)

// BenchmarkCSVFile: rekey's own CSV reader (source/file, one parser goroutine) against
// encoding/csv, each turning a 50,000-row orders export into typed values. Besides speed, the own
// reader exists for what encoding/csv cannot say: an unquoted empty field (null) from a quoted
// one (""), record boundaries for parallel chunks and resume cursors, and a bounded stray quote.
func BenchmarkCSVFile(b *testing.B) {
	var buf bytes.Buffer
	if err := gen.WriteCSV(&buf, "orders", 50000, 1); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "orders.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	schema, err := gen.Columns("orders")
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 0} {
		name := "rekey-source-file-1-parser"
		if workers == 0 {
			name = "rekey-source-file-parallel" // chunks parsed on every core: encoding/csv cannot split a file
		}
		b.Run(name, func(b *testing.B) { readAll(b, path, schema, workers, buf.Len()) })
	}
	b.Run("encoding-csv", func(b *testing.B) {
		if err != nil {
			b.Fatal(err)
		}

		b.SetBytes(int64(buf.Len()))
		types := make([]cqlvalue.Type, len(schema))
		for i, c := range schema {
			if types[i], err = cqlvalue.ParseType(c.Type); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			r := csv.NewReader(f)
			r.ReuseRecord = true
			if _, err := r.Read(); err != nil { // header
				b.Fatal(err)
			}
			vals := make([]pipeline.Value, len(schema))
			for {
				rec, err := r.Read()
				if err != nil {
					break
				}
				for i, s := range rec {
					vals[i], _ = types[i].ParseText(s)
				}
			}
			f.Close()
		}
	})
}

// readAll reads the file with rekey's file source, workers parsers (0: one per core).
func readAll(b *testing.B, path string, schema pipeline.SourceSchema, workers, size int) {
	b.SetBytes(int64(size))
	for b.Loop() {
		src, err := file.New(file.Config{Path: path, Schema: schema, Workers: workers}, nil)
		if err != nil {
			b.Fatal(err)
		}
		out := make(chan pipeline.Batch, 64)
		errc := make(chan error, 1)
		go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
		for range out {
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
