package parquet

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// dictTable maps a column's distinct values to their dictionary index for one chunk. The values
// themselves live in the column's dvals/dends. Values of up to 16 bytes (most dictionary-worthy
// values: codes, statuses, names) are identified by two machine words loaded from the string,
// which serve both as the hash input and as the key: a lookup touches no byte of the dictionary.
// Longer values are hashed with maphash and compared byte-wise.
// sink/parquet BenchmarkDictTable (CPU per value): 2.5x faster than a Go map[string]int32 on 5
// short values, on par at 1,000 8-byte values; a map is 1.3-2x faster on values over 16 bytes.
type dictTable struct {
	seed  maphash.Seed
	slots []int32 // entry index + 1; 0 is empty
	keys  []dictKey
	mask  int
	hint  int // entries the table held before its last reset: its first growth goes that far
}

type dictKey struct {
	a, b uint64 // the value's words (short values) or its maphash (long ones: a)
	n    int    // length
}

func newDictTable() *dictTable {
	return &dictTable{seed: maphash.MakeSeed(), slots: make([]int32, 64), mask: 63}
}

func (t *dictTable) len() int { return len(t.keys) }

// reset empties the table for the next chunk. A table kept (keep: it is small beside the chunk
// its region just cut) that the chunk filled to at least an eighth of its slots keeps them: the
// next chunk of a busy region needs as many, and cleared memory it already holds is in cache where
// new memory is not (a region's values spread over 16 tables found their entries 1.5-2x slower
// in fresh tables: BenchmarkDictTable's 16-regions cases). Any other table is shrunk back so that
// idle regions, and the many small regions of a large plan, hold little; its next growth past 64
// slots jumps to the size this chunk needed, sparing the rehashes of doubling up to it.
func (t *dictTable) reset(keep bool) {
	if len(t.slots) > 64 && (!keep || 8*len(t.keys) < len(t.slots)) {
		t.release()
		return
	}
	t.hint = len(t.keys)
	clear(t.slots)
	t.keys = t.keys[:0]
}

// mem is the table's memory in bytes.
func (t *dictTable) mem() int64 { return int64(len(t.slots))*4 + int64(cap(t.keys))*24 }

// release empties the table and gives its memory back (a column that gave its dictionary up
// needs none for the rest of its chunk).
func (t *dictTable) release() {
	t.hint = len(t.keys)
	t.slots, t.mask, t.keys = make([]int32, 64), 63, nil
}

func le64(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

func le32(s string, i int) uint64 {
	return uint64(binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s[i:]), 4)))
}

// keyOf returns the key of s. For n <= 16 the words cover every byte of s (first and last 8, 4
// or the first, middle and last byte), so equal keys mean equal strings.
func (t *dictTable) keyOf(s string) dictKey {
	if len(s) > 16 {
		return dictKey{a: maphash.String(t.seed, s), n: len(s)}
	}
	return shortKey(s)
}

// shortKey is the key of a string of at most 16 bytes: words that cover every byte of it.
func shortKey(s string) dictKey {
	n := len(s)
	switch {
	case n >= 8:
		return dictKey{a: le64(s, 0), b: le64(s, n-8), n: n}
	case n >= 4:
		return dictKey{a: le32(s, 0) | le32(s, n-4)<<32, n: n}
	case n > 0:
		return dictKey{a: uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16, n: n}
	}
	return dictKey{}
}

// validText is utf8.ValidString with a shortcut for values of up to 16 bytes (keys, ids, codes):
// the words of shortKey cover every byte, so one test tells an ASCII value, where
// utf8.ValidString walks a value under 8 bytes one byte at a time and costs a call.
func validText(s string) bool {
	if len(s) <= 16 {
		if k := shortKey(s); (k.a|k.b)&0x8080808080808080 == 0 {
			return true
		}
	}
	return utf8.ValidString(s)
}

// hash mixes the key's words (murmur3's 64-bit finalizer: every input bit reaches the low bits
// the table indexes with).
func (k dictKey) hash() uint64 {
	x := k.a ^ bits.RotateLeft64(k.b*0x9e3779b97f4a7c15, 31) ^ uint64(k.n)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// find returns the index of s in the dictionary of column c.
func (t *dictTable) find(s string, c *colData) (idx int32, found bool) {
	var k dictKey
	if len(s) <= 16 { // one call on the common path, not keyOf's two
		k = shortKey(s)
	} else {
		k = t.keyOf(s)
	}
	for i := int(k.hash()) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return -1, false
		}
		if t.keys[e-1] != k {
			continue
		}
		if k.n <= 16 {
			return e - 1, true
		}
		if string(c.entry(e-1)) == s {
			return e - 1, true
		}
	}
}

// insert adds s, already appended to the column's dictionary as its last entry.
func (t *dictTable) insert(s string) {
	t.keys = append(t.keys, t.keyOf(s))
	if 2*len(t.keys) > len(t.slots) {
		t.grow() // re-inserts every entry, the new one included
		return
	}
	t.place(t.keys[len(t.keys)-1].hash(), int32(len(t.keys)))
}

func (t *dictTable) place(h uint64, e int32) {
	for i := int(h) & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i] == 0 {
			t.slots[i] = e
			return
		}
	}
}

func (t *dictTable) grow() {
	n := 2 * len(t.slots)
	for 2*t.hint > n {
		n *= 2
	}
	t.hint = 0
	if n > 2*len(t.slots) && cap(t.keys) < n/2 { // the entries to come, too
		keys := make([]dictKey, len(t.keys), n/2)
		copy(keys, t.keys)
		t.keys = keys
	}
	t.slots = make([]int32, n)
	t.mask = len(t.slots) - 1
	for k := range t.keys {
		t.place(t.keys[k].hash(), int32(k+1))
	}
}
