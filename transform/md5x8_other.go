//go:build !amd64

package transform

// hasMD5x8 is false where md5x8 has no assembly: digests are computed one at a time.
var hasMD5x8 = false

func md5x8(*[8][64]byte, *[8][32]byte, *[16][8]uint32) {
	panic("transform: md5x8 without its assembly")
}
