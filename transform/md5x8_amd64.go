//go:build amd64

package transform

import "golang.org/x/sys/cpu"

// md5x8 computes the MD5 digests of eight padded one-block messages at once, message k in lane k
// of the AVX2 registers, into the first 16 bytes of sums[k]. words is its scratch: the blocks
// transposed, word j of every block side by side (md5x8_amd64.s, written by md5x8_gen.go).
//
//go:noescape
func md5x8(blocks *[8][64]byte, sums *[8][32]byte, words *[16][8]uint32)

// hasMD5x8 says whether this CPU runs md5x8 (AVX2, and an OS that saves its registers).
var hasMD5x8 = cpu.X86.HasAVX2
