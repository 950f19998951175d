package collide

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/rekey/rekey/pipeline"
)

// Fast, deterministic 64-bit hashes: the same bytes hash the same on every run and machine, so
// distinct counts and collision counts are reproducible. Strings go through xxh3; integers and
// the chaining of fields use wyhash's multiply-fold (mum). Not cryptographic: the report only
// needs them well mixed.

const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
	wyp2 = 0x8ebc6af09c88c6e3
	wyp3 = 0x589965cc75374cc3
)

func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hashString hashes s with a seed (xxh3: as fast as the wyhash rekey had here, see
// BenchmarkHashString); chaining seeds hashes a sequence of fields.
func hashString(s string, seed uint64) uint64 { return xxh3.HashStringSeed(s, seed) }

// Mix64 hashes an integer with a seed (two multiply-fold rounds: one is not enough for
// sequential integers, whose HyperLogLog estimate it would bias).
func Mix64(x, seed uint64) uint64 {
	return mum(mum(x^wyp0, seed^wyp1)^wyp2, x^wyp3^bits.RotateLeft64(seed, 23))
}

// HashValue hashes a value by its kind and content: equal values hash equal, and an integer
// never hashes like the text of its digits.
func HashValue(v pipeline.Value, seed uint64) uint64 {
	seed ^= uint64(v.Kind) * wyp2
	switch v.Kind {
	case pipeline.KindText, pipeline.KindBytes:
		return hashString(v.Str, seed)
	case pipeline.KindDecimal:
		return hashString(decimalNumber(v.Str), seed)
	case pipeline.KindNull:
		return Mix64(0, seed)
	}
	return Mix64(uint64(v.Num), seed)
}

// decimalNumber is canonical decimal text without the zeros that end its fraction: a DECIMAL
// column holds every value at its own scale, so 1.5 and 1.50 are one value, and one key.
func decimalNumber(s string) string {
	if strings.IndexByte(s, '.') < 0 {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// HashValues hashes a sequence of values.
func HashValues(vs []pipeline.Value) uint64 {
	h := uint64(len(vs))
	for _, v := range vs {
		h = HashValue(v, h)
	}
	return h
}

// HashRecord hashes a source record's values for the collision check: equal values hash equal,
// integers with one multiply-fold each (cheaper than hashValue; the chain mixes them).
func HashRecord(vs []pipeline.Value) uint64 {
	h := uint64(len(vs)) ^ wyp3
	for _, v := range vs {
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			h = hashString(v.Str, h^uint64(v.Kind))
		default:
			h = mum(h^uint64(v.Num)^wyp0, uint64(v.Kind)<<56^wyp1)
		}
	}
	return mum(h^wyp2, wyp3)
}

// HashColumns hashes each source value (64 bits each, into cols) and returns the record's hash:
// the collision check's source hash (equal values hash equal) and per-column hashes that tell in
// which columns two rows differ.
func HashColumns(vs []pipeline.Value, cols []uint64) ([]uint64, uint64) {
	cols = slices.Grow(cols[:0], len(vs))[:len(vs)]
	h := uint64(len(vs)) ^ wyp3
	for i := range vs {
		// hashValue(vs[i], 0), inlined: this runs for every column of every row
		v := &vs[i]
		seed := uint64(v.Kind) * wyp2
		var c uint64
		switch v.Kind {
		case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
			c = hashString(v.Str, seed)
		case pipeline.KindNull:
			c = Mix64(0, seed)
		default:
			c = Mix64(uint64(v.Num), seed)
		}
		cols[i] = c
		h = mum(h^c^wyp0, uint64(i)^wyp1)
	}
	return cols, mum(h^wyp2, wyp3)
}

// HashSubset hashes the column hashes of the columns idx (a source key).
func HashSubset(cols []uint64, idx []int) uint64 {
	h := uint64(len(idx)) ^ wyp2
	for _, i := range idx {
		h = mum(h^cols[i]^wyp0, uint64(i)^wyp3)
	}
	return h
}

// appendValue encodes a value compactly (kind, then a varint, or bytes after a varint of their
// length << 1 | 1 when they were cut to maxText bytes); decodeValue reads it back.
func appendValue(dst []byte, v pipeline.Value, maxText int) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case pipeline.KindNull:
	case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
		s := v.Str
		trunc := uint64(0)
		if len(s) > maxText {
			s, trunc = s[:maxText], 1
		}
		dst = binary.AppendUvarint(dst, uint64(len(s))<<1|trunc)
		dst = append(dst, s...)
	default:
		dst = binary.AppendVarint(dst, v.Num)
	}
	return dst
}

func decodeValue(b []byte) (v pipeline.Value, truncated bool, rest []byte, ok bool) {
	if len(b) == 0 {
		return v, false, nil, false
	}
	v.Kind = pipeline.Kind(b[0])
	b = b[1:]
	switch v.Kind {
	case pipeline.KindNull:
		return v, false, b, true
	case pipeline.KindText, pipeline.KindBytes, pipeline.KindDecimal:
		n, k := binary.Uvarint(b)
		truncated, n = n&1 == 1, n>>1
		if k <= 0 || uint64(len(b)-k) < n {
			return v, false, nil, false
		}
		v.Str = string(b[k : k+int(n)])
		return v, truncated, b[k+int(n):], true
	default:
		i, k := binary.Varint(b)
		if k <= 0 {
			return v, false, nil, false
		}
		v.Num = i
		return v, false, b[k:], true
	}
}
