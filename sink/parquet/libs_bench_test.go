package parquet_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow/memory"
	pq "github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// Benchmarks of sink/parquet's own code next to what arrow does by itself (named in
// bench/libs/doc.go). BenchmarkDictTable (libs_dict_test.go) is the lookup structure alone.

const columnRows = 64 << 10

// BenchmarkDictColumn: one 65,536-row chunk of a VARCHAR column written as a dictionary-encoded
// Parquet column chunk (zstd level 1, rekey's codec on both sides). rekey: Buffer.Append (its
// own dictionary, dictTable) and the writer's WriteDictIndices; arrow: the values copied into a
// column buffer (the input's memory is reused, as the sink's plain path does) and
// ByteArrayColumnChunkWriter.WriteBatch with dictionary encoding on, arrow's own memo table
// hashing every value. Both files are checked to hold the column dictionary-encoded.
func BenchmarkDictColumn(b *testing.B) {
	schema := pipeline.TargetSchema{Table: "t", Columns: []pipeline.Column{{Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	rng := rand.New(rand.NewPCG(3, 5))
	channels := []string{"web", "app", "store", "phone", "partner"}
	cols := []struct {
		name string
		gen  func() string
	}{
		{"channel-5", func() string { return channels[rng.IntN(len(channels))] }},
		{"location-1000", func() string { return fmt.Sprintf("city-%03d", rng.IntN(1000)) }},
		{"product-2000", func() string { n := rng.IntN(2000); return fmt.Sprintf("category-%02d/product-%d", n%40, n) }},
	}
	for _, col := range cols {
		var arena []byte
		ends := make([]int, columnRows)
		for i := range ends {
			arena = append(arena, col.gen()...)
			ends[i] = len(arena)
		}
		vals := make([]string, columnRows)
		for i, start := 0, 0; i < columnRows; i++ {
			vals[i] = unsafe.String(&arena[start], ends[i]-start)
			start = ends[i]
		}
		b.Run(col.name+"/rekey-buffer-WriteDictIndices", func(b *testing.B) {
			b.ReportAllocs()
			f := parquet.New()
			buf, err := f.NewBuffer(schema)
			if err != nil {
				b.Fatal(err)
			}
			var out bytes.Buffer
			row := make([]pipeline.Value, 1)
			cpu0 := cpuTime()
			for b.Loop() {
				out.Reset()
				for _, s := range vals {
					row[0] = pipeline.Text(s)
					if err := buf.Append(row); err != nil {
						b.Fatal(err)
					}
				}
				ch := buf.Cut()
				w, err := f.NewWriter(&out, schema)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Write(ch); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				ch.Release()
			}
			reportColumn(b, out.Bytes(), cpu0)
		})
		b.Run(col.name+"/arrow-WriteBatch-dictionary", func(b *testing.B) {
			b.ReportAllocs()
			// the properties of sink/parquet's writer, dictionary on for the column
			props := pq.NewWriterProperties(pq.WithCompression(compress.Codecs.Zstd), pq.WithCompressionLevel(1),
				pq.WithDictionaryDefault(false), pq.WithDictionaryFor("v", true), pq.WithDataPageSize(1<<20),
				pq.WithStats(false), pq.WithVersion(pq.V2_LATEST), pq.WithDataPageVersion(pq.DataPageV1), pq.WithCreatedBy("rekey"))
			sc, err := parquet.Schema(schema, props)
			if err != nil {
				b.Fatal(err)
			}
			var out bytes.Buffer
			var data []byte
			var ends []int
			var ba []pq.ByteArray
			def := make([]int16, columnRows)
			for i := range def {
				def[i] = 1
			}
			cpu0 := cpuTime()
			for b.Loop() {
				out.Reset()
				data, ends, ba = data[:0], ends[:0], ba[:0]
				for _, s := range vals {
					data = append(data, s...)
					ends = append(ends, len(data))
				}
				start := 0
				for _, e := range ends {
					ba = append(ba, data[start:e:e])
					start = e
				}
				fw := file.NewParquetWriter(&out, sc.Root(), file.WithWriterProps(props))
				rgw := fw.AppendRowGroup()
				cw, err := rgw.NextColumn()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(ba, def, nil); err != nil {
					b.Fatal(err)
				}
				if err := rgw.Close(); err != nil {
					b.Fatal(err)
				}
				if err := fw.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportColumn(b, out.Bytes(), cpu0)
		})
	}
}

// reportColumn checks that the one-column file holds a dictionary-encoded chunk and reports
// the wall and CPU time per row and the file size.
func reportColumn(b *testing.B, data []byte, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cc, err := r.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		b.Fatal(err)
	}
	if !cc.HasDictionaryPage() || r.NumRows() != columnRows {
		b.Fatalf("the column is not dictionary-encoded (%v), or %d rows", cc.Encodings(), r.NumRows())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/columnRows, "ns/row")
	b.ReportMetric(float64(cpu)/float64(b.N)/columnRows, "cpu-ns/row")
	b.ReportMetric(float64(len(data)), "file-B")
}

// BenchmarkRecycling: a region's chunk cycle (Append 8 chunks of 65,536 orders rows, Cut, Write
// each as a row group of one file, Release) with and without sink/parquet's two recyclers:
// alloc.go's recycling allocator installed as arrow's memory.DefaultAllocator (against arrow's
// own memory.GoAllocator) and pool.go's slice pools for the chunks' column slices (against
// allocating every chunk's slices anew, as plain make and append do).
func BenchmarkRecycling(b *testing.B) {
	const chunks = 8
	schema := sinktest.Orders()
	rekeyAlloc := memory.DefaultAllocator // sink/parquet's init installed it
	defer func() { memory.DefaultAllocator = rekeyAlloc }()
	for _, v := range []struct {
		name             string
		goAlloc, noPools bool
	}{
		{"rekey-recycler+slicePool", false, false},
		{"arrow-GoAllocator+slicePool", true, false},
		{"recycler+no-slicePool", false, true},
		{"arrow-GoAllocator+no-slicePool", true, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			memory.DefaultAllocator = rekeyAlloc
			if v.goAlloc {
				memory.DefaultAllocator = memory.NewGoAllocator()
			}
			runtime.GC() // empty arrow's buffer pool: its buffers come from the allocator under test
			f := parquet.New()
			buf, err := f.NewBuffer(schema)
			if err != nil {
				b.Fatal(err)
			}
			g := newOrderGen(sinktest.HexPlan(16))
			var out countWriter
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime()
			b.ReportAllocs()
			for b.Loop() {
				w, err := f.NewWriter(&out, schema)
				if err != nil {
					b.Fatal(err)
				}
				for c := 0; c < chunks; c++ {
					if v.noPools {
						parquet.FreshPools(f)
					}
					for i := 0; i < columnRows; i += benchBatch {
						rows := g.batch(c*columnRows + i)
						for k := range rows {
							if err := buf.Append(rows[k].Values); err != nil {
								b.Fatal(err)
							}
						}
					}
					ch := buf.Cut()
					if err := w.Write(ch); err != nil {
						b.Fatal(err)
					}
					ch.Release()
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms1)
			// CPU time counts the garbage collector's work on the other cores, which wall time hides
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/(chunks*columnRows), "cpu-ns/row")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(chunks*columnRows), "ns/row")
			b.ReportMetric(float64(ms1.NumGC-ms0.NumGC)/float64(b.N), "GCs/op")
		})
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
