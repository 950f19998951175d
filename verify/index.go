package verify

// keyIndex finds a bucket's source entry by key: open addressing with linear probing, the slots
// holding entry indexes. A slot is chosen by the top bits of the key hash times a Fibonacci
// constant: the low bits of a bucket's hashes are all alike (they chose the bucket). It replaced
// a Go map of hash -> chain of entries, which cost the comparison about twice the CPU per row.
// The entries live with the caller: probe and insert ask about them by index.
type keyIndex struct {
	slots []int32 // entry index + 1; 0 is empty
	shift uint    // 64 - log2(len(slots))
	n     int     // entries indexed
}

func (x *keyIndex) start(h uint64) int { return int((h * 0x9E3779B97F4A7C15) >> x.shift) }

func (x *keyIndex) resize(size int) {
	x.slots = make([]int32, size)
	x.shift = 64 - uint(log2(size))
}

// reset empties the index for about n entries (it grows past them).
func (x *keyIndex) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(x.slots) >= size && cap(x.slots) <= 4*size {
		x.slots = x.slots[:size]
		x.shift = 64 - uint(log2(size))
		clear(x.slots)
	} else {
		x.resize(size)
	}
	x.n = 0
}

// probe returns the index of the entry with hash h for which is(i) holds, or -1 and the slot
// where such an entry would be inserted.
func (x *keyIndex) probe(h uint64, is func(i int32) bool) (int32, int) {
	mask := len(x.slots) - 1
	for i := x.start(h); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1, i
		}
		if is(s - 1) {
			return s - 1, i
		}
	}
}

// insert puts entry i in the empty slot probe returned, growing the index past half full
// (hashOf gives an entry's hash).
func (x *keyIndex) insert(slot int, i int32, hashOf func(i int32) uint64) {
	x.slots[slot] = i + 1
	x.n++
	if 2*x.n <= len(x.slots) {
		return
	}
	old := x.slots
	x.resize(2 * len(old))
	mask := len(x.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		j := x.start(hashOf(s - 1))
		for x.slots[j] != 0 {
			j = (j + 1) & mask
		}
		x.slots[j] = s
	}
}
