package pipeline

import (
	"math"
	"math/big"
	"sort"
	"strings"
)

// RegionPlan is a table's pre-split: split values of the FIRST primary-key column (Lindorm's
// SPLITKEYS are typed like that column). N splits make N+1 regions; region i holds rows whose
// first key column lies in [Splits[i-1], Splits[i]) in the column's order, which DESC reverses.
type RegionPlan struct {
	Type   Type    `json:"type"`
	Desc   bool    `json:"desc,omitempty"`
	Splits []Value `json:"-"`
	// Strategy says how the splits were chosen: "hex_prefix", "int_bucket", "quantile",
	// "explicit", "single". Recorded in the manifest.
	Strategy string `json:"strategy"`
}

// Count is the number of regions.
func (p RegionPlan) Count() int { return len(p.Splits) + 1 }

// Route returns the region index for a first-key-column value: the number of splits at or
// below it in the column's order. It runs once per row, so text and integer columns (the usual
// first columns) take a direct binary search instead of the general comparison.
func (p RegionPlan) Route(v Value) int {
	lo, hi := 0, len(p.Splits)
	switch {
	case (v.Kind == KindText || v.Kind == KindBytes) && (p.Type == TypeVarchar || p.Type == TypeVarbinary):
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			// the first bytes decide most comparisons (a hex prefix's splits differ there): a
			// call to strings.Compare only when they are equal
			var c int
			if sp := p.Splits[m].Str; sp != "" && v.Str != "" && sp[0] != v.Str[0] {
				c = int(sp[0]) - int(v.Str[0])
			} else {
				c = strings.Compare(sp, v.Str)
			}
			if c > 0 != p.Desc && c != 0 {
				hi = m
			} else {
				lo = m + 1
			}
		}
		return lo
	case v.Kind == KindInt && p.Type != TypeDecimal:
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if s := p.Splits[m].Num; s != v.Num && (s > v.Num) != p.Desc {
				hi = m
			} else {
				lo = m + 1
			}
		}
		return lo
	}
	return sort.Search(len(p.Splits), func(i int) bool {
		return p.compare(p.Splits[i], v) > 0
	})
}

// Router routes values as its plan's Route does, with a table of the text splits' first bytes
// for an ascending text plan (a hex prefix's): the region of most values is then one lookup and
// at most a comparison or two, where Route's binary search over 16 splits took ~170 instructions
// a row. One router may be used by many goroutines.
type Router struct {
	plan RegionPlan
	// byFirst[b] is the range of splits whose first byte is b: those below it are below every
	// value that starts with b, those above it above (nil: the plan's own Route)
	byFirst *[256][2]int32
}

// Router returns p's router.
func (p RegionPlan) Router() *Router {
	r := &Router{plan: p}
	if p.Desc || (p.Type != TypeVarchar && p.Type != TypeVarbinary) || len(p.Splits) == 0 {
		return r
	}
	t := new([256][2]int32)
	for _, sp := range p.Splits {
		if sp.Kind != KindText && sp.Kind != KindBytes || sp.Str == "" {
			return r // an empty split sorts before every first byte: the general search
		}
	}
	for b := range t {
		lo := sort.Search(len(p.Splits), func(i int) bool { return int(p.Splits[i].Str[0]) >= b })
		hi := sort.Search(len(p.Splits), func(i int) bool { return int(p.Splits[i].Str[0]) > b })
		t[b] = [2]int32{int32(lo), int32(hi)}
	}
	r.byFirst = t
	return r
}

// Route is RegionPlan.Route.
func (r *Router) Route(v Value) int {
	if r.byFirst == nil || v.Kind != KindText && v.Kind != KindBytes || v.Str == "" {
		return r.plan.Route(v)
	}
	e := r.byFirst[v.Str[0]]
	lo, hi := int(e[0]), int(e[1])
	// the splits that start with v's first byte: count those at or below v
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if above(r.plan.Splits[m].Str, v.Str) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// above tells whether split sp sorts after s. A split is short (a hex prefix's four
// characters): a byte loop over it costs less than strings.Compare's call, which took half of a
// row's routing.
func above(sp, s string) bool {
	if len(sp) > 16 {
		return strings.Compare(sp, s) > 0
	}
	for i := 0; i < len(sp); i++ {
		if i == len(s) {
			return true // s is a proper prefix of sp
		}
		if sp[i] != s[i] {
			return sp[i] > s[i]
		}
	}
	return false // sp is s or a prefix of it
}

// Bounds returns region i's start (inclusive) and end (exclusive) split values; ok is false
// for the open end of the first and last region.
func (p RegionPlan) Bounds(i int) (start Value, hasStart bool, end Value, hasEnd bool) {
	if i > 0 {
		start, hasStart = p.Splits[i-1], true
	}
	if i < len(p.Splits) {
		end, hasEnd = p.Splits[i], true
	}
	return
}

// Contains tells whether v belongs to region i.
func (p RegionPlan) Contains(i int, v Value) bool { return p.Route(v) == i }

func (p RegionPlan) compare(a, b Value) int {
	c := Compare(p.Type, a, b)
	if p.Desc {
		return -c
	}
	return c
}

// Compare orders two values of a Lindorm type the way the table stores them ascending: numbers
// numerically (a float NaN after every number), VARCHAR and VARBINARY byte-wise, false before
// true. Null sorts first.
func Compare(t Type, a, b Value) int {
	if a.Kind == KindNull || b.Kind == KindNull {
		switch {
		case a.Kind == b.Kind:
			return 0
		case a.Kind == KindNull:
			return -1
		}
		return 1
	}
	switch {
	case a.Kind == KindInt && b.Kind == KindInt, a.Kind == KindBool && b.Kind == KindBool:
		return cmpInt(a.Num, b.Num)
	case a.Kind == KindFloat && b.Kind == KindFloat:
		return cmpFloat(a.Float(), b.Float())
	case a.Kind == KindDecimal || b.Kind == KindDecimal || t == TypeDecimal:
		return cmpDecimal(a, b)
	case a.Kind == KindInt && b.Kind == KindFloat:
		return cmpFloat(float64(a.Num), b.Float())
	case a.Kind == KindFloat && b.Kind == KindInt:
		return cmpFloat(a.Float(), float64(b.Num))
	}
	return strings.Compare(a.Str, b.Str)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders NaN after every number and equal to NaN (Java's Double.compare, the report's
// sortable bits): compared as equal to everything, one NaN in a key broke --sort's order and
// routed a NaN to opposite ends for ASC and DESC plans.
func cmpFloat(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an || bn:
		return cmpBool(an, bn)
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cmpDecimal(a, b Value) int {
	toRat := func(v Value) *big.Rat {
		r := new(big.Rat)
		switch v.Kind {
		case KindInt:
			r.SetInt64(v.Num)
		case KindFloat:
			r.SetFloat64(v.Float())
		default:
			if _, ok := r.SetString(v.Str); !ok {
				return nil
			}
		}
		return r
	}
	ra, rb := toRat(a), toRat(b)
	if ra == nil || rb == nil {
		return strings.Compare(a.Str, b.Str)
	}
	return ra.Cmp(rb)
}
