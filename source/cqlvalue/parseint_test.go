package cqlvalue

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// parseInt reads eight digits at a time: every digit position, every byte just outside '0'..'9'
// at every position, and every length must read as strconv reads it.
func TestParseIntMatchesStrconv(t *testing.T) {
	check := func(s string) {
		t.Helper()
		n, ok, overflow := parseInt(s)
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil
		wantOverflow := err != nil && err.(*strconv.NumError).Err == strconv.ErrRange
		if ok != wantOK || overflow != wantOverflow || (ok && n != want) {
			t.Fatalf("parseInt(%q) = %d, %v, %v; strconv %d, %v", s, n, ok, overflow, want, err)
		}
	}
	for _, s := range []string{"", "-", "+", "0", "-0", "+7", "12345678", "-12345678", "123456789",
		"99999999", "100000000", "1704067200003", "999999999999999999", "-999999999999999999",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"00000000000000000001", "1234567 ", " 12345678"} {
		check(s)
	}
	// a byte just below '0', just above '9', and far off, at every position of every length
	for n := 1; n <= 20; n++ {
		digits := []byte("98765432109876543210")[:n]
		check(string(digits))
		for pos := range n {
			for _, c := range []byte{'/', ':', 0, 0x30 + 0x10, 0xb0, 'a', '0' + 0x80} {
				b := append([]byte(nil), digits...)
				b[pos] = c
				check(string(b))
				check("-" + string(b))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		b := make([]byte, 1+r.IntN(19))
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
			if r.IntN(40) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}
