package collide

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/rekey/rekey/pipeline"
)

// SplitHotFactor cuts the keys (rows in order) into n equal ranges of the full key, as regions
// split by size end up, and measures the write hotspot over them in windows of rows in order.
// Keys are sorted by an order-preserving byte encoding (see appendOrdered), or by comparing
// values when a column holds decimals.
func SplitHotFactor(keys [][]pipeline.Value, types []pipeline.Type, desc []bool, n int) float64 {
	if n <= 1 || len(keys) < 2 {
		return 0
	}
	idx, compare := sortKeys(keys, types, desc)
	// equal keys are one row in Lindorm and no split falls between them: they share the piece
	// of the first
	piece := make([]int, len(keys))
	for rank, i := range idx {
		if rank > 0 && compare(idx[rank-1], i) == 0 {
			piece[i] = piece[idx[rank-1]]
			continue
		}
		piece[i] = rank * n / len(keys)
	}
	w := NewWindows(n, int64(len(keys)), AltWindows, AltWindowsMax)
	for _, p := range piece {
		w.Add(p)
	}
	return Summarize(w.Result(), n, w.Per).HotFactor
}

// sortKeys orders the keys as the table stores them (equal keys by index): it returns their
// indexes in that order and the comparison of two keys it sorted by.
func sortKeys(keys [][]pipeline.Value, types []pipeline.Type, desc []bool) ([]int32, func(a, b int32) int) {
	idx := make([]int32, len(keys))
	buf, off, encoded := encodeKeys(keys, desc)
	// the order of the encodings (a shorter one that is a prefix of another first), or of the
	// values when a column has no encoding
	compare := func(a, b int32) int { return bytes.Compare(buf[off[a]:off[a+1]], buf[off[b]:off[b+1]]) }
	if !encoded {
		compare = func(a, b int32) int {
			ka, kb := keys[a], keys[b]
			for c := range types {
				x := pipeline.Compare(types[c], ka[c], kb[c])
				if desc[c] {
					x = -x
				}
				if x != 0 {
					return x
				}
			}
			return 0
		}
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int {
			if c := compare(a, b); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		return idx, compare
	}
	// by their heads (a radix sort), then the runs of equal heads by the whole encoding
	heads := sortHeads(keyHeads(buf, off), make([]headIndex, len(keys)))
	for i := 0; i < len(heads); {
		j := i + 1
		for j < len(heads) && heads[j].head == heads[i].head {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(heads[i:j], func(a, b headIndex) int {
				if c := compare(a.i, b.i); c != 0 {
					return c
				}
				return cmp.Compare(a.i, b.i)
			})
		}
		i = j
	}
	for k, h := range heads {
		idx[k] = h.i
	}
	return idx, compare
}

// encodeKeys encodes the keys in order-preserving bytes (appendOrdered), one after the other in
// buf, key i's at off[i]:off[i+1]; encoded is false when a column has no such encoding.
func encodeKeys(keys [][]pipeline.Value, desc []bool) (buf []byte, off []int, encoded bool) {
	off = make([]int, len(keys)+1)
	var first []byte
	for c, v := range keys[0] {
		first, _ = appendOrdered(first, v, desc[c])
	}
	buf = make([]byte, 0, (len(first)+8)*len(keys)) // the first key's size, with room
	encoded = true
	for i, k := range keys {
		for c, v := range k {
			var ok bool
			if buf, ok = appendOrdered(buf, v, desc[c]); !ok {
				encoded = false
			}
		}
		off[i+1] = len(buf)
	}
	return buf, off, encoded
}

// keyHeads are the encodings' first 8 bytes after the prefix every encoding shares ("\x01u000"
// of ids like u0001234567), where they tell keys apart, as a big-endian integer: most
// comparisons end there.
func keyHeads(buf []byte, off []int) []headIndex {
	n := len(off) - 1
	heads := make([]headIndex, n)
	first := buf[:off[1]]
	lcp := len(first)
	for i := 1; i < n && lcp > 0; i++ {
		lcp = min(lcp, commonPrefix(first[:lcp], buf[off[i]:off[i+1]]))
	}
	for i := range n {
		var h [8]byte
		copy(h[:], buf[off[i]+lcp:off[i+1]])
		heads[i] = headIndex{binary.BigEndian.Uint64(h[:]), int32(i)}
	}
	return heads
}

// headIndex is a key's first 8 encoded bytes and its index.
type headIndex struct {
	head uint64
	i    int32
}

// sortHeads orders hs by head, ties in index order (an LSD radix sort, 16 bits a pass; tmp is
// scratch of the same length). It returns the sorted slice (hs or tmp).
func sortHeads(hs, tmp []headIndex) []headIndex {
	if len(hs) == 0 {
		return hs
	}
	counts := make([]int, 1<<16)
	for shift := uint(0); shift < 64; shift += 16 {
		clear(counts)
		for _, h := range hs {
			counts[h.head>>shift&0xffff]++
		}
		if counts[hs[0].head>>shift&0xffff] == len(hs) {
			continue // one digit for all: nothing moves
		}
		sum := 0
		for d, c := range counts {
			counts[d] = sum
			sum += c
		}
		for _, h := range hs {
			d := h.head >> shift & 0xffff
			tmp[counts[d]] = h
			counts[d]++
		}
		hs, tmp = tmp, hs
	}
	return hs
}

// appendOrdered appends v so that byte order is the table's order (pipeline.Compare; null
// first), inverted for a DESC column: integers big-endian with the sign bit flipped, floats by
// their sortable bits, text and bytes with 0x00 escaped and a 0x00 0x00 terminator. ok is false
// for a decimal, which has no such encoding here.
func appendOrdered(dst []byte, v pipeline.Value, desc bool) ([]byte, bool) {
	start := len(dst)
	ok := true
	switch v.Kind {
	case pipeline.KindNull:
		dst = append(dst, 0)
	case pipeline.KindInt, pipeline.KindBool:
		dst = binary.BigEndian.AppendUint64(append(dst, 1), uint64(v.Num)^(1<<63))
	case pipeline.KindFloat:
		b := uint64(v.Num)
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		dst = binary.BigEndian.AppendUint64(append(dst, 1), b)
	case pipeline.KindText, pipeline.KindBytes:
		dst = append(dst, 1)
		for i := 0; i < len(v.Str); i++ {
			if v.Str[i] == 0 {
				dst = append(dst, 0, 0xff)
			} else {
				dst = append(dst, v.Str[i])
			}
		}
		dst = append(dst, 0, 0)
	default:
		ok = false
	}
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst, ok
}
