// Package murmur3 computes Cassandra's Murmur3Partitioner token: the first 64 bits (h1) of
// MurmurHash3_x64_128 with seed 0, keeping Cassandra's Java quirks so tokens match a real
// cluster byte for byte: tail bytes are sign-extended (Java bytes are signed) and a result of
// math.MinInt64 is normalised to math.MaxInt64 (MinInt64 is the ring's reserved minimum token).
// Own code: gocql's copy is internal, and the murmur3 libraries hash tail bytes unsigned.
package murmur3

import (
	"encoding/binary"
	"math"
)

const (
	c1 = 0x87c37b91114253d5
	c2 = 0x4cf5ad432745937f
)

// Token returns the Murmur3Partitioner token of a serialized partition key.
func Token(data []byte) int64 {
	h1 := int64(hash64(data))
	if h1 == math.MinInt64 {
		return math.MaxInt64
	}
	return h1
}

// CompositeKey serializes a multi-column partition key the way Cassandra does before hashing:
// each component as [uint16 length][bytes][0x00]. A single-column key is hashed as its bytes.
func CompositeKey(dst []byte, components ...[]byte) []byte {
	if len(components) == 1 {
		return append(dst, components[0]...)
	}
	for _, c := range components {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(c)))
		dst = append(dst, c...)
		dst = append(dst, 0)
	}
	return dst
}

func rotl(x uint64, r uint) uint64 { return x<<r | x>>(64-r) }

func fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// signed sign-extends a byte like Java's (long) cast of a byte.
func signed(b byte) uint64 { return uint64(int64(int8(b))) }

func hash64(data []byte) uint64 {
	var h1, h2 uint64
	n := len(data)
	nblocks := n / 16
	for i := 0; i < nblocks; i++ {
		k1 := binary.LittleEndian.Uint64(data[i*16:])
		k2 := binary.LittleEndian.Uint64(data[i*16+8:])
		k1 *= c1
		k1 = rotl(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = rotl(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729
		k2 *= c2
		k2 = rotl(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = rotl(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	tail := data[nblocks*16:]
	var k1, k2 uint64
	switch n & 15 {
	case 15:
		k2 ^= signed(tail[14]) << 48
		fallthrough
	case 14:
		k2 ^= signed(tail[13]) << 40
		fallthrough
	case 13:
		k2 ^= signed(tail[12]) << 32
		fallthrough
	case 12:
		k2 ^= signed(tail[11]) << 24
		fallthrough
	case 11:
		k2 ^= signed(tail[10]) << 16
		fallthrough
	case 10:
		k2 ^= signed(tail[9]) << 8
		fallthrough
	case 9:
		k2 ^= signed(tail[8])
		k2 *= c2
		k2 = rotl(k2, 33)
		k2 *= c1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= signed(tail[7]) << 56
		fallthrough
	case 7:
		k1 ^= signed(tail[6]) << 48
		fallthrough
	case 6:
		k1 ^= signed(tail[5]) << 40
		fallthrough
	case 5:
		k1 ^= signed(tail[4]) << 32
		fallthrough
	case 4:
		k1 ^= signed(tail[3]) << 24
		fallthrough
	case 3:
		k1 ^= signed(tail[2]) << 16
		fallthrough
	case 2:
		k1 ^= signed(tail[1]) << 8
		fallthrough
	case 1:
		k1 ^= signed(tail[0])
		k1 *= c1
		k1 = rotl(k1, 31)
		k1 *= c2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix(h1)
	h2 = fmix(h2)
	h1 += h2
	return h1
}
