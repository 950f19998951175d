package parquet

import (
	"fmt"
	"testing"
)

// A region's table keeps its slots from chunk to chunk while its chunks fill them, and is
// shrunk back once a chunk barely uses it, when it is large beside its chunk, or when its column
// gives the dictionary up.
func TestDictTableKeepsItsSlotsWhileChunksUseThem(t *testing.T) {
	d := newDictTable()
	var c colData
	fill := func(n int) {
		c.idx, c.dvals, c.dends = c.idx[:0], c.dvals[:0], c.dends[:0]
		for i := range n {
			appendIndex(d, &c, fmt.Sprintf("city-%03d", i))
		}
		for i := range n { // every value found again, at its own index
			if k, ok := d.find(fmt.Sprintf("city-%03d", i), &c); !ok || k != int32(i) {
				t.Fatalf("city-%03d: index %d (found %v), want %d", i, k, ok, i)
			}
		}
	}
	fill(1000)
	busy := len(d.slots)
	d.reset(true)
	if len(d.slots) != busy || d.len() != 0 {
		t.Fatalf("after a busy chunk: %d slots, %d entries; want the %d slots kept, empty", len(d.slots), d.len(), busy)
	}
	if _, ok := d.find("city-000", &c); ok {
		t.Fatal("a reset table still finds the last chunk's value")
	}
	fill(1000) // the next chunk needs the same room: no growth
	if len(d.slots) != busy {
		t.Fatalf("%d slots after the second chunk, want %d", len(d.slots), busy)
	}
	d.reset(true)
	fill(10) // an idle chunk
	d.reset(true)
	if len(d.slots) != 64 {
		t.Fatalf("after a chunk of 10 values: %d slots, want 64", len(d.slots))
	}
	fill(1000)
	d.reset(false) // a chunk the table is large beside
	if len(d.slots) != 64 {
		t.Fatalf("reset without keep: %d slots, want 64", len(d.slots))
	}
	fill(1000)
	d.release() // the column went plain
	if len(d.slots) != 64 || d.len() != 0 {
		t.Fatalf("released: %d slots, %d entries; want 64, empty", len(d.slots), d.len())
	}
	fill(1000)
}
