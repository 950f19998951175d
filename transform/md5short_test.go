package transform

import (
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"testing"
)

// md5Short must give crypto/md5's digest for every length it takes, whatever the bytes (the
// padding byte and the length land in different words for each length).
func TestMD5ShortMatchesCryptoMD5(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, md5ShortMax)
	for n := 0; n <= md5ShortMax; n++ {
		for trial := 0; trial < 50; trial++ {
			for i := range buf[:n] {
				buf[i] = byte(rng.Uint32())
			}
			if trial == 0 {
				clear(buf[:n]) // zeros, and 0xff next: the extremes of every word
			} else if trial == 1 {
				for i := range buf[:n] {
					buf[i] = 0xff
				}
			}
			if got, want := md5Short(buf[:n]), md5.Sum(buf[:n]); got != want {
				t.Fatalf("md5Short of %d bytes %x = %x, crypto/md5 %x", n, buf[:n], got, want)
			}
		}
	}
}

// md5Hex is the lowercase hex MD5 of s, by crypto/md5: what a test expects of md5(x).
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestMD5ShortRefusesLongerInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("md5Short took 56 bytes: its block has no room for the padding and the length")
		}
	}()
	md5Short(make([]byte, md5ShortMax+1))
}

// BenchmarkMD5Short: md5Short against crypto/md5.Sum (assembly on amd64) on a key column's value
// and on a longer one; read the ns figures on a quiet machine (MD5's steps are one chain, so time
// follows the chain's latency more than the instruction count).
func BenchmarkMD5Short(b *testing.B) {
	for _, n := range []int{11, 40} {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte('a' + i%26)
		}
		var sink byte
		b.Run("md5Short-"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				s := md5Short(in)
				sink ^= s[0]
				in[0] = sink // each digest depends on the last, as rows' do not: no overlap
			}
		})
		b.Run("crypto-md5-"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				s := md5.Sum(in)
				sink ^= s[0]
				in[0] = sink
			}
		})
	}
}
