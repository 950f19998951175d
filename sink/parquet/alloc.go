package parquet

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

// arrow's Parquet encoders take their page buffers from a sync.Pool backed by
// memory.DefaultAllocator (not the writer properties' allocator). Every garbage collection empties
// that pool and the buffers are regrown from fresh, zeroed memory: a quarter of the sink's
// allocations. rekey installs a recycling allocator as arrow's default: buffers arrow releases are
// kept on bounded free lists and handed out again, cleared, so they look fresh.
// sink/parquet BenchmarkRecycling: 1/3 fewer bytes allocated and GCs than memory.GoAllocator,
// no CPU saving measurable on 2 shared cores.
func init() {
	memory.DefaultAllocator = recycler
}

var recycler = &recyclingAllocator{maxFree: 64 << 20}

type recyclingAllocator struct {
	mu      sync.Mutex
	free    [40][][]byte // by power-of-two capacity class
	freeB   int64
	maxFree int64
	poison  bool // tests: fill released memory with garbage instead of keeping it clean
}

const minClass = 6 // 64 bytes: also arrow's alignment

func allocClass(size int) int {
	if size <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(size - 1))
}

func (a *recyclingAllocator) Allocate(size int) []byte {
	b, recycled := a.take(size)
	if recycled {
		clear(b[:cap(b)])
	}
	return b
}

// take returns a buffer of size bytes (capacity its class), recycled (and then not cleared) or
// new (zeroed).
func (a *recyclingAllocator) take(size int) (b []byte, recycled bool) {
	c := allocClass(size)
	if c >= len(a.free) {
		return make([]byte, size), false
	}
	a.mu.Lock()
	if n := len(a.free[c]); n > 0 {
		b := a.free[c][n-1]
		a.free[c][n-1] = nil
		a.free[c] = a.free[c][:n-1]
		a.freeB -= int64(cap(b))
		a.mu.Unlock()
		return b[:size], true
	}
	a.mu.Unlock()
	return make([]byte, size, 1<<c), false
}

// Reallocate grows b to size: the old bytes are copied and only the rest is cleared (arrow's
// encoders grow their page buffers this way, value batch after value batch).
func (a *recyclingAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb, recycled := a.take(size)
	n := copy(nb, b)
	if recycled {
		clear(nb[n:cap(nb)])
	}
	a.Free(b)
	return nb
}

func (a *recyclingAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<minClass || c&(c-1) != 0 {
		return // not one of ours (or not a class size): leave it to the GC
	}
	k := bits.Len(uint(c)) - 1
	if k >= len(a.free) {
		return
	}
	if a.poison {
		b = b[:c]
		for i := range b {
			b[i] = 0xA5
		}
	}
	a.mu.Lock()
	if a.freeB+int64(c) <= a.maxFree {
		a.free[k] = append(a.free[k], b[:0])
		a.freeB += int64(c)
	}
	a.mu.Unlock()
}

var _ memory.Allocator = (*recyclingAllocator)(nil)
