package file

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// unquotedEnd tests eight bytes at a time: it must stop where a byte-by-byte scan stops and
// see the same non-ASCII bytes before that, wherever the separator falls in a word.
func TestUnquotedEndMatchesByteScan(t *testing.T) {
	want := func(s string, i int) (int, bool) {
		non := false
		for ; i < len(s); i++ {
			if s[i] == ',' || s[i] == '\n' {
				break
			}
			non = non || s[i] >= utf8.RuneSelf
		}
		return i, non
	}
	alphabet := []byte{'a', 'Z', '0', ',', '\n', '\r', '"', 0x80, 0xff, 0x2c ^ 0x80, 0x0a ^ 0x80, 0x2b, 0x2d, 0x09, 0x0b}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = 'x'
			if r.IntN(6) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		s := string(b)
		i := 0
		if len(s) > 0 {
			i = r.IntN(len(s) + 1)
		}
		gotEnd, gotNon := unquotedEnd(s, i)
		wantEnd, wantNon := want(s, i)
		if gotEnd != wantEnd || gotNon != wantNon {
			t.Fatalf("unquotedEnd(%q, %d) = %d, %v; want %d, %v", s, i, gotEnd, gotNon, wantEnd, wantNon)
		}
	}
}
