package transform

import (
	"crypto/md5"
	"math/rand/v2"
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

func TestMD5ShortRefusesLongerInput(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("md5Short took 56 bytes: its block has no room for the padding and the length")
		}
	}()
	md5Short(make([]byte, md5ShortMax+1))
}
