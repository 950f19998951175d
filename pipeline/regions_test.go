package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
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

// A FLOAT or DOUBLE key may hold NaN (a source's "NaN"): Compare must still be an order, NaN after
// every number as Java's Double.compare and the report's sortable bits have it, or --sort leaves
// a file holding one NaN out of key order, and a DESC plan routes NaN among the lowest values
// while an ascending one routes it among the highest.
func TestCompareOrdersNaNAfterNumbers(t *testing.T) {
	nan := Float(math.NaN())
	s := TargetSchema{KeyLen: 2, Columns: []Column{{Name: "d", Type: TypeDouble, KeyPos: 0}, {Name: "i", Type: TypeBigint, KeyPos: 1}}}
	rows := [][]Value{{Float(3), Int(0)}, {nan, Int(1)}, {Float(1), Int(0)}, {Float(math.Inf(1)), Int(0)},
		{nan, Int(0)}, {Float(-2), Int(0)}, {Int(2), Int(0)}, {Float(math.Inf(-1)), Int(0)}}
	slices.SortStableFunc(rows, s.CompareKeys)
	var got []string
	for _, r := range rows {
		got = append(got, r[0].String()+"/"+r[1].String())
	}
	if want := "-Inf/0 -2/0 1/0 2/0 3/0 +Inf/0 NaN/0 NaN/1"; strings.Join(got, " ") != want {
		t.Errorf("sorted by key: %s, want %s", strings.Join(got, " "), want)
	}
	if Compare(TypeDouble, nan, nan) != 0 {
		t.Error("NaN differs from NaN")
	}
	asc := RegionPlan{Type: TypeDouble, Splits: []Value{Float(0), Float(5)}}
	desc := RegionPlan{Type: TypeDouble, Desc: true, Splits: []Value{Float(5), Float(0)}}
	for _, c := range []struct {
		p    RegionPlan
		want int
	}{{asc, 2}, {desc, 0}} {
		if r := c.p.Route(nan); r != c.want || c.p.Route(Float(math.Inf(1))) != c.want {
			t.Errorf("desc %v: NaN in region %d, +Inf in region %d, want both in %d (the end of the highest values)", c.p.Desc, r, c.p.Route(Float(math.Inf(1))), c.want)
		}
	}
}
