package cassandra

import (
	"github.com/rekey/rekey/pipeline"

	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Murmur3 token bounds. MinToken is never a token of a row (Murmur3Partitioner maps it to
// MaxToken), so (MinToken, x] selects everything up to x.
const (
	MinToken = math.MinInt64
	MaxToken = math.MaxInt64
)

// Range is one token sub-range (Start, End] of the Murmur3 ring that a scan reads with
// `token(pk) > Start AND token(pk) <= End`. Ranges never wrap: the ring's wrap-around range is
// cut at the end of the ring into (t, MaxToken] and (MinToken, t'].
type Range struct {
	Start, End int64
}

// Name is the stream name of the range in batches and checkpoints: "range(-9223372036854775808,-8070450532247928833]".
func (r Range) Name() string {
	b := make([]byte, 0, 48)
	b = append(b, "range("...)
	b = strconv.AppendInt(b, r.Start, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.End, 10)
	return string(append(b, ']'))
}

// String is the range's name.
func (r Range) String() string { return r.Name() }

// ParseRange reads a name written by Range.Name.
func ParseRange(name string) (Range, error) {
	s, ok := strings.CutPrefix(name, "range(")
	if ok {
		s, ok = strings.CutSuffix(s, "]")
	}
	if ok {
		a, b, found := strings.Cut(s, ",")
		x, err1 := strconv.ParseInt(a, 10, 64)
		y, err2 := strconv.ParseInt(b, 10, 64)
		if found && err1 == nil && err2 == nil && x < y {
			return Range{Start: x, End: y}, nil
		}
	}
	return Range{}, fmt.Errorf("%q is not a token range name like range(-9223372036854775808,-8070450532247928833]", name)
}

// off maps a token to its unsigned position on the ring: MinToken is 0, MaxToken is 2^64-1.
func off(t int64) uint64 { return uint64(t) ^ 1<<63 }

// tok is the inverse of off.
func tok(u uint64) int64 { return int64(u ^ 1<<63) }

// span is the number of tokens in the range.
func (r Range) span() uint64 { return off(r.End) - off(r.Start) }

// Contains tells whether token t is in (Start, End].
func (r Range) Contains(t int64) bool { return t > r.Start && t <= r.End }

// SplitRing cuts the ring defined by the nodes' tokens into sub-ranges. Every ring range
// (between two consecutive tokens) is cut into equal parts, about splits in all, in proportion
// to its share of the ring and at least one each, so there are never fewer sub-ranges than ring
// ranges. The wrap-around range is cut at the end of the ring. The result is sorted by start
// token; it depends only on the tokens and splits, so every machine computes the same list.
func SplitRing(tokens []int64, splits int) ([]Range, error) {
	if len(tokens) == 0 {
		return nil, errors.New("the ring has no tokens")
	}
	ts := append([]int64(nil), tokens...)
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	uniq := ts[:1]
	for _, t := range ts[1:] {
		if t != uniq[len(uniq)-1] {
			uniq = append(uniq, t)
		}
	}
	ts = uniq
	ringSize := new(big.Int).Lsh(big.NewInt(1), 64)
	fsplits := new(big.Int).SetInt64(int64(max(splits, 1)))
	var out []Range
	for i, end := range ts {
		start := ts[(i+len(ts)-1)%len(ts)]
		a := off(start)
		sp := new(big.Int).SetUint64(off(end) - a) // (start, end] clockwise
		if len(ts) == 1 {
			sp.Set(ringSize)
		}
		// parts = round(splits * span / 2^64), at least 1, at most span
		parts := new(big.Int).Mul(fsplits, sp)
		parts.Add(parts, new(big.Int).Rsh(ringSize, 1))
		parts.Div(parts, ringSize)
		if parts.Sign() == 0 {
			parts.SetInt64(1)
		}
		if parts.Cmp(sp) > 0 {
			parts.Set(sp)
		}
		n := parts.Int64()
		prev := a
		for k := int64(1); k <= n; k++ {
			// boundary = a + span*k/n (mod 2^64)
			q := new(big.Int).Mul(sp, big.NewInt(k))
			q.Div(q, parts)
			next := a + q.Uint64()
			if k == n {
				next = off(end)
			}
			out = appendPiece(out, prev, next)
			prev = next
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// appendPiece adds the clockwise piece (a, b] of the ring, cut in two where it passes the end.
func appendPiece(out []Range, a, b uint64) []Range {
	if a == b {
		// a full ring (one token, one part): everything; a token at the end of the ring leaves
		// nothing on one side of the cut, and an empty range has no name that parses back
		if tok(a) == MinToken || tok(a) == MaxToken {
			return append(out, Range{MinToken, MaxToken})
		}
		return append(out, Range{tok(a), MaxToken}, Range{MinToken, tok(b)})
	}
	if a < b {
		return append(out, Range{tok(a), tok(b)})
	}
	if tok(a) != MaxToken {
		out = append(out, Range{tok(a), MaxToken})
	}
	if tok(b) != MinToken {
		out = append(out, Range{MinToken, tok(b)})
	}
	return out
}

// CheckTiling verifies that ranges cover the whole ring exactly once: sorted, no gap, no
// overlap. It names the first problem.
func CheckTiling(ranges []Range) error {
	rs := append([]Range(nil), ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	at := int64(MinToken)
	for _, r := range rs {
		switch {
		case r.Start < at:
			return fmt.Errorf("%s overlaps the range before it (which ends at %d)", r.Name(), at)
		case r.Start > at:
			return fmt.Errorf("tokens (%d, %d] are in no range", at, r.Start)
		}
		at = r.End
	}
	if at != MaxToken {
		return fmt.Errorf("tokens (%d, %d] are in no range", at, int64(MaxToken))
	}
	return nil
}

// Shard is one part of a run split across machines: its ranges are takeShard's.
type Shard = pipeline.Shard

// takeShard returns the shard's ranges: every Count-th range starting at Index, so every shard's
// share is spread over the whole ring and the shards together hold each range exactly once.
func takeShard(s Shard, ranges []Range) []Range {
	if s.Count <= 1 {
		return ranges
	}
	var out []Range
	for i := s.Index; i < len(ranges); i += s.Count {
		out = append(out, ranges[i])
	}
	return out
}

// equalSlices cuts the ring into k equal ranges.
func equalSlices(k int) []Range {
	k = max(k, 1)
	step := ^uint64(0) / uint64(k)
	out := make([]Range, 0, k)
	for i := 0; i < k; i++ {
		end := tok(uint64(i+1) * step)
		if i == k-1 {
			end = MaxToken
		}
		out = append(out, Range{Start: tok(uint64(i) * step), End: end})
	}
	return out
}

// ownerEnd returns the ring token that ends the ring range holding token t.
func ownerEnd(ring []int64, t int64) int64 {
	k := sort.Search(len(ring), func(j int) bool { return ring[j] >= t })
	if k == len(ring) {
		k = 0
	}
	return ring[k]
}
