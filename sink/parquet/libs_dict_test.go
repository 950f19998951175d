package parquet

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/rekey/rekey/internal/benchcpu"
)

// dictChunk is the number of values per chunk in BenchmarkDictTable: rekey's dictionary holds at
// most 32768 entries per chunk.
const dictChunk = 32768

// dictColumns are orders columns of three cardinalities, one chunk's values each, their bytes in
// one arena as the pipeline hands them to the sink (so that nothing may keep a reference):
//
//	channel   5 values of 3-7 bytes (the table's short path: two words, no hashing of bytes)
//	location  1,000 values of 8 bytes (short path)
//	product   2,000 values of 21-24 bytes (maphash and a byte comparison)
//	userid    500,000 users of 11 bytes drawn uniformly: nearly every value is new (inserts)
func dictColumns() []struct {
	name string
	vals []string
} {
	rng := rand.New(rand.NewPCG(7, 11))
	channels := []string{"web", "app", "store", "phone", "partner"}
	gen := []func() string{
		func() string { return channels[rng.IntN(len(channels))] },
		func() string { return fmt.Sprintf("city-%03d", rng.IntN(1000)) },
		func() string { n := rng.IntN(2000); return fmt.Sprintf("category-%02d/product-%d", n%40, n) },
		func() string { return fmt.Sprintf("user%07d", rng.IntN(500000)) },
	}
	names := []string{"channel-5", "location-1000", "product-2000", "userid-500k"}
	out := make([]struct {
		name string
		vals []string
	}, len(gen))
	for c, g := range gen {
		var arena []byte
		ends := make([]int, dictChunk)
		for i := range ends {
			arena = append(arena, g()...)
			ends[i] = len(arena)
		}
		vals := make([]string, dictChunk)
		start := 0
		for i, e := range ends {
			vals[i] = unsafe.String(&arena[start], e-start)
			start = e
		}
		out[c].name, out[c].vals = names[c], vals
	}
	return out
}

// BenchmarkDictTable: a chunk's values to dictionary indices and the dictionary's bytes (what
// buffer.appendDict produces for arrow's WriteDictIndices), with sink/parquet's dictTable,
// with a Go map[string]int32 (keys copied: the input's memory is reused), and with arrow's
// BinaryDictionaryBuilder (arrow's own memo table, internal/hashing, the one arrow's Parquet
// dictionary encoder hashes every value with). Each op is one 32,768-value chunk; the
// table is reset between chunks as the buffer's Cut does.
func BenchmarkDictTable(b *testing.B) {
	for _, col := range dictColumns() {
		vals := col.vals
		var want []int32 // the rekey indices: every variant must produce the same
		b.Run(col.name+"/rekey-dictTable", func(b *testing.B) {
			b.ReportAllocs()
			defer perValue(b, cpuNow())
			t := newDictTable()
			var c colData
			for b.Loop() {
				t.reset(true)
				c.idx, c.dvals, c.dends = c.idx[:0], c.dvals[:0], c.dends[:0]
				for _, s := range vals {
					appendIndex(t, &c, s)
				}
			}
			want = append(want[:0], c.idx...)
			b.ReportMetric(float64(t.len()), "entries")
		})
		// The same values spread over 16 regions, each with its own table, as a sink's regions
		// take a column's values in turn: the tables together outgrow the core's caches sooner.
		b.Run(col.name+"/rekey-dictTable-16-regions", func(b *testing.B) {
			const regions = 16
			b.ReportAllocs()
			defer perValue(b, cpuNow())
			ts, cs := make([]*dictTable, regions), make([]colData, regions)
			for r := range ts {
				ts[r] = newDictTable()
			}
			for b.Loop() {
				for r := range ts {
					ts[r].reset(true)
					cs[r].idx, cs[r].dvals, cs[r].dends = cs[r].idx[:0], cs[r].dvals[:0], cs[r].dends[:0]
				}
				for i, s := range vals {
					r := (i * 7) % regions
					appendIndex(ts[r], &cs[r], s)
				}
			}
		})
		for _, keep := range []bool{true, false} {
			name := "/go-map-clear" // clear keeps the map's memory between chunks
			if !keep {
				name = "/go-map-new" // a new map per chunk: idle regions hold little, as dictTable.reset does
			}
			b.Run(col.name+name, func(b *testing.B) { benchMap(b, vals, keep, want) })
		}
		b.Run(col.name+"/arrow-BinaryDictionaryBuilder", func(b *testing.B) {
			b.ReportAllocs()
			defer perValue(b, cpuNow())
			bld := array.NewDictionaryBuilder(memory.NewGoAllocator(), &arrow.DictionaryType{
				IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
			defer bld.Release()
			var got []int32
			for b.Loop() {
				for _, s := range vals {
					if err := bld.AppendString(s); err != nil {
						b.Fatal(err)
					}
				}
				arr := bld.NewDictionaryArray()
				got = append(got[:0], arr.Indices().(*array.Int32).Int32Values()...)
				arr.Release()
				bld.ResetFull() // a new dictionary per chunk, as arrow's Parquet writer per row group
			}
			checkSame(b, want, got)
		})
	}
}

// appendIndex appends the dictionary index of s to c, adding s to the dictionary when it is new
// (buffer.appendDict without its give-up rules).
func appendIndex(t *dictTable, c *colData, s string) {
	if k, ok := t.find(s, c); ok {
		c.idx = append(c.idx, k)
		return
	}
	k := c.addEntry(s)
	t.insert(s)
	c.idx = append(c.idx, k)
}

// perValue reports the wall and the CPU time per value (the machine is shared: CPU time is the
// steadier figure; it includes the garbage collector's work).
func perValue(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/dictChunk, "ns/value")
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N)/dictChunk, "cpu-ns/value")
}

// cpuNow is the process's user+system CPU time.
var cpuNow = benchcpu.Now

// FreshPools empties the format's slice pools: called before every chunk, the buffer allocates
// every column slice anew, as without slicePool (BenchmarkRecycling).
func FreshPools(f *Format) { f.pools = &pools{} }

func checkSame(b *testing.B, want, got []int32) {
	if want == nil {
		return // the rekey sub-benchmark was filtered out
	}
	if len(got) != len(want) {
		b.Fatalf("%d indices, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			b.Fatalf("index %d: %d, want %d", i, got[i], want[i])
		}
	}
}

func benchMap(b *testing.B, vals []string, keep bool, want []int32) {
	b.ReportAllocs()
	defer perValue(b, cpuNow())
	m := map[string]int32{}
	var c colData
	for b.Loop() {
		if keep {
			clear(m)
		} else {
			m = map[string]int32{}
		}
		c.idx, c.dvals, c.dends = c.idx[:0], c.dvals[:0], c.dends[:0]
		for _, s := range vals {
			if k, ok := m[s]; ok {
				c.idx = append(c.idx, k)
				continue
			}
			k := int32(len(c.dends))
			c.dvals = append(c.dvals, s...)
			c.dends = append(c.dends, uint32(len(c.dvals)))
			m[strings.Clone(s)] = k
			c.idx = append(c.idx, k)
		}
	}
	checkSame(b, want, c.idx)
}
