package parquet_test

import (
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
)

// Every typed column writer of a file of every type has the two page buffers the writer lends:
// an arrow upgrade that renames them fails here, instead of silently allocating them again.
func TestEveryColumnWriterLendsItsPageBuffers(t *testing.T) {
	found, err := parquet.ColumnWriterPageBuffers(sinktest.AllTypes(), sinktest.AllTypesRows(10, 1, sinktest.VarcharPlan("m")))
	if err != nil {
		t.Fatal(err)
	}
	for typ, ok := range found {
		if !ok {
			t.Errorf("%s: page buffers not found", typ)
		}
	}
	if len(found) < 7 {
		t.Errorf("only %d typed column writers checked: %v", len(found), found)
	}
}

// Writing a row group does not allocate its pages again: the column writers' page buffers are
// lent from a pool, not made for every column of every row group. The same chunks of 20,000
// orders rows written with arrow's own buffers and with lent ones: lending spares more than half
// the chunk's bytes of values per chunk (measured: 2.3 MB of 2.3 MB; before, nothing).
func TestRowGroupsReusePageBuffers(t *testing.T) {
	schema := sinktest.Orders()
	rows := sinktest.OrdersRows(20000, 7, sinktest.HexPlan(16))
	var valueBytes int64
	for _, r := range rows {
		for _, v := range r.Values {
			valueBytes += int64(len(v.Str)) + 8
		}
	}
	allocated := func(lend bool) int64 {
		parquet.LendPageBuffers(lend)
		defer parquet.LendPageBuffers(true)
		f := parquet.New()
		buf, err := f.NewBuffer(schema)
		if err != nil {
			t.Fatal(err)
		}
		fw, err := f.NewWriter(io.Discard, schema)
		if err != nil {
			t.Fatal(err)
		}
		write := func(n int) {
			for range n {
				for _, r := range rows {
					if err := buf.Append(r.Values); err != nil {
						t.Fatal(err)
					}
				}
				c := buf.Cut()
				if err := fw.Write(c); err != nil {
					t.Fatal(err)
				}
				c.Release()
			}
		}
		write(4)                                         // warm-up: the pools fill
		defer debug.SetGCPercent(debug.SetGCPercent(-1)) // pooled buffers stay for the count
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		write(10)
		runtime.ReadMemStats(&m1)
		return int64(m1.TotalAlloc-m0.TotalAlloc) / 10
	}
	own, lent := allocated(false), allocated(true)
	t.Logf("bytes allocated per chunk of %d rows (%d bytes of values): %d with arrow's buffers, %d lent", len(rows), valueBytes, own, lent)
	if own-lent < valueBytes/2 {
		t.Errorf("lending page buffers spared %d bytes per chunk (%d - %d), want at least %d", own-lent, own, lent, valueBytes/2)
	}
}
