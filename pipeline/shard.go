package pipeline

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is the part of a source one run reads when a migration is split across machines
// (--shard i/N): Index in 0..Count-1. Each source divides itself: Cassandra by token ranges,
// files by file, a generator by row range. The zero Shard, and 0/1, is the whole source.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N", written as Shard.String writes it: decimal digits without sign, spaces
// or leading zeros, so that each shard has one spelling (the shards of a --shared-out output
// and merge compare them).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n || a != strconv.Itoa(i) || b != strconv.Itoa(n) {
		return Shard{}, fmt.Errorf("shard %q: want i/N with 0 <= i < N, in digits without spaces, signs or leading zeros, e.g. 0/3 (a Kubernetes Indexed Job passes its completion index as i)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// Whole tells whether the shard is the whole source.
func (s Shard) Whole() bool { return s.Count <= 1 }

func (s Shard) String() string {
	if s.Whole() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}
