package pipeline

import (
	"math/big"
	"regexp"
	"strings"
	"testing"
)

// PlainDecimal against its definition: the canonical form -?(0|[1-9][0-9]*)(\.[0-9]+)? without a
// negative zero, and the number read exactly when it has at most 18 digits. The negative zero is
// told by the digits, not by the number read: 2^64 wraps an unsigned accumulator to 0.
func TestPlainDecimalAsDefined(t *testing.T) {
	canonical := regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)
	inputs := []string{"0", "-0", "-0.00", "-0.001", "0.000", "00", "01", "-01", "-", "", "1.", ".5", "1.5.", "+1", "1e5",
		"79.96", "-12.340", "123456789012345678", "1234567890123456789", "12345678901234567.8", "-999999999999999999",
		"18446744073709551616", "-18446744073709551616", "-18446744073709551616.0", "-0000.0", "1 ", " 1", "１"}
	for _, s := range inputs {
		ok, u, scale, num := PlainDecimal(s)
		wantOK := canonical.MatchString(s) && !(strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0.") == "")
		if ok != wantOK {
			t.Errorf("PlainDecimal(%q) ok %v, want %v", s, ok, wantOK)
			continue
		}
		if !ok {
			continue
		}
		digits := len(strings.NewReplacer("-", "", ".", "").Replace(s))
		if num != (digits <= 18) {
			t.Errorf("PlainDecimal(%q) num %v with %d digits", s, num, digits)
		}
		if !num {
			continue
		}
		r, _ := new(big.Rat).SetString(s)
		got := new(big.Rat).SetFrac(big.NewInt(u), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		if r.Cmp(got) != 0 {
			t.Errorf("PlainDecimal(%q) = %d x 10^-%d", s, u, scale)
		}
	}
}
