package files

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The 128-bit fast path must agree with the exact math/big path on every value it accepts.
func TestDecimalFastMatchesBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		scale := rng.IntN(39)
		precision := scale + rng.IntN(39-scale)
		if precision == 0 {
			precision = 1
		}
		intDigits, fracDigits := rng.IntN(12), rng.IntN(10)
		s := ""
		if rng.IntN(2) == 0 {
			s = "-"
		}
		digits := fmt.Sprint(rng.Uint64N(1_000_000_000_000))
		s += digits[:max(1, min(intDigits, len(digits)))]
		if fracDigits > 0 {
			s += "." + fmt.Sprintf("%0*d", fracDigits, rng.Uint64N(10_000_000_000)%pow10u64[fracDigits])
		}
		col := pipeline.Column{Name: "d", Type: pipeline.TypeDecimal, Precision: precision, Scale: scale}
		fast, ok := parseDecimalFast(s, precision, scale)
		slow, rerr := parseDecimalBig(col, s)
		if ok && (rerr != nil || fast != slow) {
			t.Fatalf("%q at DECIMAL(%d,%d): fast %v, big %v (%v)", s, precision, scale, fast, slow, rerr)
		}
	}
}
