package pipeline

import (
	"math/rand/v2"
	"testing"
)

// A Router must put every value where its plan's Route does: its first-byte table is a shortcut,
// whatever the splits (a hex prefix's, several sharing a first byte, bytes above 0x7f, an empty
// split, a descending plan) and whatever the value (shorter than a split, equal to one, empty).
func TestRouterRoutesAsThePlan(t *testing.T) {
	text := func(ss ...string) []Value {
		v := make([]Value, len(ss))
		for i, s := range ss {
			v[i] = Text(s)
		}
		return v
	}
	plans := map[string]RegionPlan{
		"hex prefix":         {Type: TypeVarchar, Splits: text("1000", "2000", "3000", "4000", "5000", "6000", "7000", "8000", "9000", "a000", "b000", "c000", "d000", "e000", "f000")},
		"shared first bytes": {Type: TypeVarchar, Splits: text("a", "ab", "abc", "b", "u1", "u2", "u2x", "u2xxxxxxxxxxxxxxxxxxxxxx", "u3", "\xc3\xa9", "\xff")},
		"an empty split":     {Type: TypeVarchar, Splits: text("", "m")},
		"descending":         {Type: TypeVarchar, Desc: true, Splits: text("m", "c")},
		"varbinary":          {Type: TypeVarbinary, Splits: []Value{Bytes("\x00\x01"), Bytes("\x80"), Bytes("\x80\x00")}},
		"bigint":             {Type: TypeBigint, Splits: []Value{Int(-5), Int(0), Int(100)}},
		"no splits":          {Type: TypeVarchar},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "\x00\x01013abcfmuxz\x7f\x80\xc3\xa9\xff"
	for name, p := range plans {
		r := p.Router()
		values := []Value{Null, Text(""), Int(50), Int(-5)}
		for _, sp := range p.Splits {
			values = append(values, sp, Text(sp.Str+"\x00"))
			if sp.Str != "" {
				values = append(values, Text(sp.Str[:len(sp.Str)-1]))
			}
		}
		for range 2000 {
			b := make([]byte, rng.IntN(6))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			values = append(values, Text(string(b)), Bytes(string(b)))
		}
		for _, v := range values {
			if got, want := r.Route(v), p.Route(v); got != want {
				t.Fatalf("%s: %q (%s) routed to %d, the plan's Route says %d", name, v.Str, v.Kind, got, want)
			}
		}
	}
}
