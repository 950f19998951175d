package parquet

import "testing"

func TestSizeClasses(t *testing.T) {
	for n := 1; n < 1<<20; n += 1 + n/97 {
		c, size := classOf(n)
		if size < n || (n > 64 && size > n+n/4+1) {
			t.Fatalf("classOf(%d) = %d, %d", n, c, size)
		}
		if ci := classIndex(size); ci != c {
			t.Fatalf("classIndex(%d) = %d, want %d (n=%d)", size, ci, c, n)
		}
	}
	var p slicePool[int64]
	s := p.get(1000)
	if cap(s) < 1000 {
		t.Fatal(cap(s))
	}
	p.put(s)
	s = grow(&p, s[:0], 5000)
	if cap(s) < 5000 {
		t.Fatal(cap(s))
	}
}
