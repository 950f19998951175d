package transform

import (
	"encoding/binary"
	"math/bits"
)

// md5Short is crypto/md5.Sum for inputs that fit one block (up to 55 bytes: a key column's
// value, the usual input of a hash prefix). It pads the input into one block on the stack and runs
// the 64 steps on registers: md5.Sum spent about a third of its count besides the block itself
// (Write, the padding's second Write, checkSum, their copies), and a step here is no longer
// than in crypto/md5's assembly. BenchmarkMD5Short in bench/libs runs it next to md5.Sum.
func md5Short(in []byte) (sum [16]byte) {
	if len(in) > md5ShortMax {
		panic("md5Short: input longer than one block")
	}
	var blk [64]byte
	copy(blk[:], in)
	blk[len(in)] = 0x80
	binary.LittleEndian.PutUint64(blk[56:], uint64(len(in))<<3)
	a, b, c, d := uint32(0x67452301), uint32(0xefcdab89), uint32(0x98badcfe), uint32(0x10325476)
	a = b + bits.RotateLeft32((d^(b&(c^d)))+a+le32(&blk, 0)+0xd76aa478, 7)
	d = a + bits.RotateLeft32((c^(a&(b^c)))+d+le32(&blk, 1)+0xe8c7b756, 12)
	c = d + bits.RotateLeft32((b^(d&(a^b)))+c+le32(&blk, 2)+0x242070db, 17)
	b = c + bits.RotateLeft32((a^(c&(d^a)))+b+le32(&blk, 3)+0xc1bdceee, 22)
	a = b + bits.RotateLeft32((d^(b&(c^d)))+a+le32(&blk, 4)+0xf57c0faf, 7)
	d = a + bits.RotateLeft32((c^(a&(b^c)))+d+le32(&blk, 5)+0x4787c62a, 12)
	c = d + bits.RotateLeft32((b^(d&(a^b)))+c+le32(&blk, 6)+0xa8304613, 17)
	b = c + bits.RotateLeft32((a^(c&(d^a)))+b+le32(&blk, 7)+0xfd469501, 22)
	a = b + bits.RotateLeft32((d^(b&(c^d)))+a+le32(&blk, 8)+0x698098d8, 7)
	d = a + bits.RotateLeft32((c^(a&(b^c)))+d+le32(&blk, 9)+0x8b44f7af, 12)
	c = d + bits.RotateLeft32((b^(d&(a^b)))+c+le32(&blk, 10)+0xffff5bb1, 17)
	b = c + bits.RotateLeft32((a^(c&(d^a)))+b+le32(&blk, 11)+0x895cd7be, 22)
	a = b + bits.RotateLeft32((d^(b&(c^d)))+a+le32(&blk, 12)+0x6b901122, 7)
	d = a + bits.RotateLeft32((c^(a&(b^c)))+d+le32(&blk, 13)+0xfd987193, 12)
	c = d + bits.RotateLeft32((b^(d&(a^b)))+c+le32(&blk, 14)+0xa679438e, 17)
	b = c + bits.RotateLeft32((a^(c&(d^a)))+b+le32(&blk, 15)+0x49b40821, 22)
	a = b + bits.RotateLeft32((c^(d&(b^c)))+a+le32(&blk, 1)+0xf61e2562, 5)
	d = a + bits.RotateLeft32((b^(c&(a^b)))+d+le32(&blk, 6)+0xc040b340, 9)
	c = d + bits.RotateLeft32((a^(b&(d^a)))+c+le32(&blk, 11)+0x265e5a51, 14)
	b = c + bits.RotateLeft32((d^(a&(c^d)))+b+le32(&blk, 0)+0xe9b6c7aa, 20)
	a = b + bits.RotateLeft32((c^(d&(b^c)))+a+le32(&blk, 5)+0xd62f105d, 5)
	d = a + bits.RotateLeft32((b^(c&(a^b)))+d+le32(&blk, 10)+0x02441453, 9)
	c = d + bits.RotateLeft32((a^(b&(d^a)))+c+le32(&blk, 15)+0xd8a1e681, 14)
	b = c + bits.RotateLeft32((d^(a&(c^d)))+b+le32(&blk, 4)+0xe7d3fbc8, 20)
	a = b + bits.RotateLeft32((c^(d&(b^c)))+a+le32(&blk, 9)+0x21e1cde6, 5)
	d = a + bits.RotateLeft32((b^(c&(a^b)))+d+le32(&blk, 14)+0xc33707d6, 9)
	c = d + bits.RotateLeft32((a^(b&(d^a)))+c+le32(&blk, 3)+0xf4d50d87, 14)
	b = c + bits.RotateLeft32((d^(a&(c^d)))+b+le32(&blk, 8)+0x455a14ed, 20)
	a = b + bits.RotateLeft32((c^(d&(b^c)))+a+le32(&blk, 13)+0xa9e3e905, 5)
	d = a + bits.RotateLeft32((b^(c&(a^b)))+d+le32(&blk, 2)+0xfcefa3f8, 9)
	c = d + bits.RotateLeft32((a^(b&(d^a)))+c+le32(&blk, 7)+0x676f02d9, 14)
	b = c + bits.RotateLeft32((d^(a&(c^d)))+b+le32(&blk, 12)+0x8d2a4c8a, 20)
	a = b + bits.RotateLeft32((b^c^d)+a+le32(&blk, 5)+0xfffa3942, 4)
	d = a + bits.RotateLeft32((a^b^c)+d+le32(&blk, 8)+0x8771f681, 11)
	c = d + bits.RotateLeft32((d^a^b)+c+le32(&blk, 11)+0x6d9d6122, 16)
	b = c + bits.RotateLeft32((c^d^a)+b+le32(&blk, 14)+0xfde5380c, 23)
	a = b + bits.RotateLeft32((b^c^d)+a+le32(&blk, 1)+0xa4beea44, 4)
	d = a + bits.RotateLeft32((a^b^c)+d+le32(&blk, 4)+0x4bdecfa9, 11)
	c = d + bits.RotateLeft32((d^a^b)+c+le32(&blk, 7)+0xf6bb4b60, 16)
	b = c + bits.RotateLeft32((c^d^a)+b+le32(&blk, 10)+0xbebfbc70, 23)
	a = b + bits.RotateLeft32((b^c^d)+a+le32(&blk, 13)+0x289b7ec6, 4)
	d = a + bits.RotateLeft32((a^b^c)+d+le32(&blk, 0)+0xeaa127fa, 11)
	c = d + bits.RotateLeft32((d^a^b)+c+le32(&blk, 3)+0xd4ef3085, 16)
	b = c + bits.RotateLeft32((c^d^a)+b+le32(&blk, 6)+0x04881d05, 23)
	a = b + bits.RotateLeft32((b^c^d)+a+le32(&blk, 9)+0xd9d4d039, 4)
	d = a + bits.RotateLeft32((a^b^c)+d+le32(&blk, 12)+0xe6db99e5, 11)
	c = d + bits.RotateLeft32((d^a^b)+c+le32(&blk, 15)+0x1fa27cf8, 16)
	b = c + bits.RotateLeft32((c^d^a)+b+le32(&blk, 2)+0xc4ac5665, 23)
	a = b + bits.RotateLeft32((c^(b|^d))+a+le32(&blk, 0)+0xf4292244, 6)
	d = a + bits.RotateLeft32((b^(a|^c))+d+le32(&blk, 7)+0x432aff97, 10)
	c = d + bits.RotateLeft32((a^(d|^b))+c+le32(&blk, 14)+0xab9423a7, 15)
	b = c + bits.RotateLeft32((d^(c|^a))+b+le32(&blk, 5)+0xfc93a039, 21)
	a = b + bits.RotateLeft32((c^(b|^d))+a+le32(&blk, 12)+0x655b59c3, 6)
	d = a + bits.RotateLeft32((b^(a|^c))+d+le32(&blk, 3)+0x8f0ccc92, 10)
	c = d + bits.RotateLeft32((a^(d|^b))+c+le32(&blk, 10)+0xffeff47d, 15)
	b = c + bits.RotateLeft32((d^(c|^a))+b+le32(&blk, 1)+0x85845dd1, 21)
	a = b + bits.RotateLeft32((c^(b|^d))+a+le32(&blk, 8)+0x6fa87e4f, 6)
	d = a + bits.RotateLeft32((b^(a|^c))+d+le32(&blk, 15)+0xfe2ce6e0, 10)
	c = d + bits.RotateLeft32((a^(d|^b))+c+le32(&blk, 6)+0xa3014314, 15)
	b = c + bits.RotateLeft32((d^(c|^a))+b+le32(&blk, 13)+0x4e0811a1, 21)
	a = b + bits.RotateLeft32((c^(b|^d))+a+le32(&blk, 4)+0xf7537e82, 6)
	d = a + bits.RotateLeft32((b^(a|^c))+d+le32(&blk, 11)+0xbd3af235, 10)
	c = d + bits.RotateLeft32((a^(d|^b))+c+le32(&blk, 2)+0x2ad7d2bb, 15)
	b = c + bits.RotateLeft32((d^(c|^a))+b+le32(&blk, 9)+0xeb86d391, 21)
	binary.LittleEndian.PutUint32(sum[0:], a+0x67452301)
	binary.LittleEndian.PutUint32(sum[4:], b+0xefcdab89)
	binary.LittleEndian.PutUint32(sum[8:], c+0x98badcfe)
	binary.LittleEndian.PutUint32(sum[12:], d+0x10325476)
	return sum
}

// le32 is word i of a block: read where a step adds it, since sixteen words kept in locals do not
// fit the registers and were copied to the stack and back.
func le32(blk *[64]byte, i int) uint32 { return binary.LittleEndian.Uint32(blk[4*i:]) }

// md5ShortMax is the longest input md5Short takes: a block's 64 bytes less the padding's first
// byte and the 8 bytes of the length.
const md5ShortMax = 55
