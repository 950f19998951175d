package pipeline

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// Route's fast paths must agree with the general comparison for every value, both orders.
func TestRouteMatchesCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	general := func(p RegionPlan, v Value) int {
		return sort.Search(len(p.Splits), func(i int) bool { return p.compare(p.Splits[i], v) > 0 })
	}
	for _, desc := range []bool{false, true} {
		text := RegionPlan{Type: TypeVarchar, Desc: desc}
		ints := RegionPlan{Type: TypeBigint, Desc: desc}
		for i := 1; i < 16; i++ {
			text.Splits = append(text.Splits, Text(fmt.Sprintf("%x000", i)))
			ints.Splits = append(ints.Splits, Int(int64(i*100-700)))
		}
		if desc {
			for i, j := 0, len(text.Splits)-1; i < j; i, j = i+1, j-1 {
				text.Splits[i], text.Splits[j] = text.Splits[j], text.Splits[i]
				ints.Splits[i], ints.Splits[j] = ints.Splits[j], ints.Splits[i]
			}
		}
		for n := 0; n < 20000; n++ {
			tv := Text(fmt.Sprintf("%04x%d", rng.IntN(1<<16), n))
			if n%50 == 0 {
				tv = text.Splits[rng.IntN(len(text.Splits))] // exactly on a split
			}
			if n%50 == 1 { // empty, shorter than a split, a split's prefix, bytes above 0x7f
				edge := []string{"", "1", "10", "100", "1000\x00", "0fff", "f", "\xff", "\x80", "\x00", "g", "a\xff"}
				tv = Text(edge[rng.IntN(len(edge))])
			}
			if got, want := text.Route(tv), general(text, tv); got != want {
				t.Fatalf("desc=%v text %q: Route %d, compare says %d", desc, tv.Str, got, want)
			}
			iv := Int(rng.Int64N(2000) - 1000)
			if got, want := ints.Route(iv), general(ints, iv); got != want {
				t.Fatalf("desc=%v int %d: Route %d, compare says %d", desc, iv.Num, got, want)
			}
		}
	}
}
