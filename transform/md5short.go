package transform

import (
	"encoding/binary"
	"math/bits"
)

// md5Short is crypto/md5.Sum for inputs that fit one block (up to 55 bytes: a key column's
// value, the usual input of a hash prefix). It pads the input into one block on the stack and runs
// the 64 steps on registers: md5.Sum spent about a fifth of its count besides the block itself
// (Write, the padding's second Write, checkSum, their copies). The steps are one chain, each
// waiting for the last, so their time is the chain's: each adds the message word and constant
// to a before the round function of the newest b, as crypto/md5's assembly does.
// BenchmarkMD5Short (this package) runs it next to md5.Sum: on par (95-107 ns vs 97-126 ns, a
// loaded 2-core machine), where with the constants written in the steps it was 1.7x slower.
func md5Short(in []byte) (sum [16]byte) {
	if len(in) > md5ShortMax {
		panic("md5Short: input longer than one block")
	}
	var blk [64]byte
	copy(blk[:], in)
	blk[len(in)] = 0x80
	binary.LittleEndian.PutUint64(blk[56:], uint64(len(in))<<3)
	a, b, c, d := md5Init[0], md5Init[1], md5Init[2], md5Init[3]
	a = b + bits.RotateLeft32(a+le32(&blk, 0)+md5K[0]+(d^(b&(c^d))), 7)
	d = a + bits.RotateLeft32(d+le32(&blk, 1)+md5K[1]+(c^(a&(b^c))), 12)
	c = d + bits.RotateLeft32(c+le32(&blk, 2)+md5K[2]+(b^(d&(a^b))), 17)
	b = c + bits.RotateLeft32(b+le32(&blk, 3)+md5K[3]+(a^(c&(d^a))), 22)
	a = b + bits.RotateLeft32(a+le32(&blk, 4)+md5K[4]+(d^(b&(c^d))), 7)
	d = a + bits.RotateLeft32(d+le32(&blk, 5)+md5K[5]+(c^(a&(b^c))), 12)
	c = d + bits.RotateLeft32(c+le32(&blk, 6)+md5K[6]+(b^(d&(a^b))), 17)
	b = c + bits.RotateLeft32(b+le32(&blk, 7)+md5K[7]+(a^(c&(d^a))), 22)
	a = b + bits.RotateLeft32(a+le32(&blk, 8)+md5K[8]+(d^(b&(c^d))), 7)
	d = a + bits.RotateLeft32(d+le32(&blk, 9)+md5K[9]+(c^(a&(b^c))), 12)
	c = d + bits.RotateLeft32(c+le32(&blk, 10)+md5K[10]+(b^(d&(a^b))), 17)
	b = c + bits.RotateLeft32(b+le32(&blk, 11)+md5K[11]+(a^(c&(d^a))), 22)
	a = b + bits.RotateLeft32(a+le32(&blk, 12)+md5K[12]+(d^(b&(c^d))), 7)
	d = a + bits.RotateLeft32(d+le32(&blk, 13)+md5K[13]+(c^(a&(b^c))), 12)
	c = d + bits.RotateLeft32(c+le32(&blk, 14)+md5K[14]+(b^(d&(a^b))), 17)
	b = c + bits.RotateLeft32(b+le32(&blk, 15)+md5K[15]+(a^(c&(d^a))), 22)
	a = b + bits.RotateLeft32(a+le32(&blk, 1)+md5K[16]+(c^(d&(b^c))), 5)
	d = a + bits.RotateLeft32(d+le32(&blk, 6)+md5K[17]+(b^(c&(a^b))), 9)
	c = d + bits.RotateLeft32(c+le32(&blk, 11)+md5K[18]+(a^(b&(d^a))), 14)
	b = c + bits.RotateLeft32(b+le32(&blk, 0)+md5K[19]+(d^(a&(c^d))), 20)
	a = b + bits.RotateLeft32(a+le32(&blk, 5)+md5K[20]+(c^(d&(b^c))), 5)
	d = a + bits.RotateLeft32(d+le32(&blk, 10)+md5K[21]+(b^(c&(a^b))), 9)
	c = d + bits.RotateLeft32(c+le32(&blk, 15)+md5K[22]+(a^(b&(d^a))), 14)
	b = c + bits.RotateLeft32(b+le32(&blk, 4)+md5K[23]+(d^(a&(c^d))), 20)
	a = b + bits.RotateLeft32(a+le32(&blk, 9)+md5K[24]+(c^(d&(b^c))), 5)
	d = a + bits.RotateLeft32(d+le32(&blk, 14)+md5K[25]+(b^(c&(a^b))), 9)
	c = d + bits.RotateLeft32(c+le32(&blk, 3)+md5K[26]+(a^(b&(d^a))), 14)
	b = c + bits.RotateLeft32(b+le32(&blk, 8)+md5K[27]+(d^(a&(c^d))), 20)
	a = b + bits.RotateLeft32(a+le32(&blk, 13)+md5K[28]+(c^(d&(b^c))), 5)
	d = a + bits.RotateLeft32(d+le32(&blk, 2)+md5K[29]+(b^(c&(a^b))), 9)
	c = d + bits.RotateLeft32(c+le32(&blk, 7)+md5K[30]+(a^(b&(d^a))), 14)
	b = c + bits.RotateLeft32(b+le32(&blk, 12)+md5K[31]+(d^(a&(c^d))), 20)
	a = b + bits.RotateLeft32(a+le32(&blk, 5)+md5K[32]+(b^c^d), 4)
	d = a + bits.RotateLeft32(d+le32(&blk, 8)+md5K[33]+(a^b^c), 11)
	c = d + bits.RotateLeft32(c+le32(&blk, 11)+md5K[34]+(d^a^b), 16)
	b = c + bits.RotateLeft32(b+le32(&blk, 14)+md5K[35]+(c^d^a), 23)
	a = b + bits.RotateLeft32(a+le32(&blk, 1)+md5K[36]+(b^c^d), 4)
	d = a + bits.RotateLeft32(d+le32(&blk, 4)+md5K[37]+(a^b^c), 11)
	c = d + bits.RotateLeft32(c+le32(&blk, 7)+md5K[38]+(d^a^b), 16)
	b = c + bits.RotateLeft32(b+le32(&blk, 10)+md5K[39]+(c^d^a), 23)
	a = b + bits.RotateLeft32(a+le32(&blk, 13)+md5K[40]+(b^c^d), 4)
	d = a + bits.RotateLeft32(d+le32(&blk, 0)+md5K[41]+(a^b^c), 11)
	c = d + bits.RotateLeft32(c+le32(&blk, 3)+md5K[42]+(d^a^b), 16)
	b = c + bits.RotateLeft32(b+le32(&blk, 6)+md5K[43]+(c^d^a), 23)
	a = b + bits.RotateLeft32(a+le32(&blk, 9)+md5K[44]+(b^c^d), 4)
	d = a + bits.RotateLeft32(d+le32(&blk, 12)+md5K[45]+(a^b^c), 11)
	c = d + bits.RotateLeft32(c+le32(&blk, 15)+md5K[46]+(d^a^b), 16)
	b = c + bits.RotateLeft32(b+le32(&blk, 2)+md5K[47]+(c^d^a), 23)
	a = b + bits.RotateLeft32(a+le32(&blk, 0)+md5K[48]+(c^(b|^d)), 6)
	d = a + bits.RotateLeft32(d+le32(&blk, 7)+md5K[49]+(b^(a|^c)), 10)
	c = d + bits.RotateLeft32(c+le32(&blk, 14)+md5K[50]+(a^(d|^b)), 15)
	b = c + bits.RotateLeft32(b+le32(&blk, 5)+md5K[51]+(d^(c|^a)), 21)
	a = b + bits.RotateLeft32(a+le32(&blk, 12)+md5K[52]+(c^(b|^d)), 6)
	d = a + bits.RotateLeft32(d+le32(&blk, 3)+md5K[53]+(b^(a|^c)), 10)
	c = d + bits.RotateLeft32(c+le32(&blk, 10)+md5K[54]+(a^(d|^b)), 15)
	b = c + bits.RotateLeft32(b+le32(&blk, 1)+md5K[55]+(d^(c|^a)), 21)
	a = b + bits.RotateLeft32(a+le32(&blk, 8)+md5K[56]+(c^(b|^d)), 6)
	d = a + bits.RotateLeft32(d+le32(&blk, 15)+md5K[57]+(b^(a|^c)), 10)
	c = d + bits.RotateLeft32(c+le32(&blk, 6)+md5K[58]+(a^(d|^b)), 15)
	b = c + bits.RotateLeft32(b+le32(&blk, 13)+md5K[59]+(d^(c|^a)), 21)
	a = b + bits.RotateLeft32(a+le32(&blk, 4)+md5K[60]+(c^(b|^d)), 6)
	d = a + bits.RotateLeft32(d+le32(&blk, 11)+md5K[61]+(b^(a|^c)), 10)
	c = d + bits.RotateLeft32(c+le32(&blk, 2)+md5K[62]+(a^(d|^b)), 15)
	b = c + bits.RotateLeft32(b+le32(&blk, 9)+md5K[63]+(d^(c|^a)), 21)
	binary.LittleEndian.PutUint32(sum[0:], a+md5Init[0])
	binary.LittleEndian.PutUint32(sum[4:], b+md5Init[1])
	binary.LittleEndian.PutUint32(sum[8:], c+md5Init[2])
	binary.LittleEndian.PutUint32(sum[12:], d+md5Init[3])
	return sum
}

// md5Init is MD5's initial state, read from memory like md5K: as constants the compiler carried
// them through the steps as an extra addition in each.
var md5Init = [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}

// md5K are MD5's constants, read from memory: as constants in the expressions the compiler
// added them last, on the chain of dependent steps, where read they are added with the message
// word while the previous step still runs.
var md5K = [64]uint32{
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
	0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
	0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
	0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
	0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
}

// le32 is word i of a block: read where a step adds it, since sixteen words kept in locals do not
// fit the registers and were copied to the stack and back.
func le32(blk *[64]byte, i int) uint32 { return binary.LittleEndian.Uint32(blk[4*i:]) }

// md5ShortMax is the longest input md5Short takes: a block's 64 bytes less the padding's first
// byte and the 8 bytes of the length.
const md5ShortMax = 55
