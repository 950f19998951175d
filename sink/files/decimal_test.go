package files

import (
	"fmt"
	"math/big"
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

// AppendText must print every 128-bit value exactly, including non-negative values whose low
// word has its top bit set (>= 2^63), which an int64 shortcut gets wrong.
func TestDecimalAppendTextMatchesBig(t *testing.T) {
	edges := []Dec128{
		{Hi: 0, Lo: 1<<63 - 1}, {Hi: 0, Lo: 1 << 63}, {Hi: 0, Lo: 18310000000000000000}, {Hi: 0, Lo: ^uint64(0)},
		{Hi: -1, Lo: 1 << 63}, {Hi: -1, Lo: 1<<63 - 1}, {Hi: -1, Lo: ^uint64(0)}, {Hi: 1, Lo: 0}, {Hi: -2, Lo: 5},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 10000; i++ {
		edges = append(edges, Dec128{Hi: int64(rng.Uint64()) >> rng.IntN(64), Lo: rng.Uint64()})
	}
	for _, d := range edges {
		for _, scale := range []int{0, 2, 18} {
			n := new(big.Int).Lsh(big.NewInt(d.Hi), 64)
			n.Add(n, new(big.Int).SetUint64(d.Lo))
			want := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
			if got := string(d.AppendText(nil, scale)); got != want {
				t.Fatalf("%+v scale %d: AppendText %s, want %s", d, scale, got, want)
			}
		}
	}
}

// A decimal whose number the source cached (pipeline.DecimalUnscaled) converts exactly as its
// text does, accepted or rejected alike.
func TestDecimalCachedMatchesText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		u := int64(rng.Uint64()) >> rng.IntN(64)
		scale := rng.IntN(30)
		precision := 1 + rng.IntN(38)
		colScale := rng.IntN(precision + 1)
		r := new(big.Rat).SetFrac(big.NewInt(u), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		text := r.FloatString(scale)
		col := pipeline.Column{Name: "d", Type: pipeline.TypeDecimal, Precision: precision, Scale: colScale}
		fromText, errText := DecimalValue(col, pipeline.Decimal(text))
		cached, errCached := DecimalValue(col, pipeline.DecimalUnscaled(text, u, scale))
		if (errText == nil) != (errCached == nil) || fromText != cached {
			t.Fatalf("%s (%d scale %d) at DECIMAL(%d,%d): text %v %v, cached %v %v", text, u, scale, precision, colScale, fromText, errText, cached, errCached)
		}
	}
}
