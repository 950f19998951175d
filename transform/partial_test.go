package transform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

const partialSource = `version: 1
source:
  name: ks.tb
  columns:
    a: int
    b: int
    name: text
    city: text
target:
  table: tb
`

// A partial record sets the target columns whose source columns it sets, leaves the others
// unset, and is refused when a key column (unset_key) or a column (unset_input) reads a column it
// does not set; Apply refuses it whole (partial_update).
func TestApplyPartial(t *testing.T) {
	p := compileYAML(t, partialSource+`  primary_key: "[a][b]"
  columns:
    label: name + '/' + city
`)
	ev := p.NewEvaluator()
	b := &pipeline.Batch{Stream: "s"}
	n := len(p.Target().Columns)
	names := func(set []bool) string {
		var s []string
		for i, ok := range set {
			if ok {
				s = append(s, p.Target().Columns[i].Name)
			}
		}
		return strings.Join(s, ",")
	}
	rec := func(set ...bool) *pipeline.Record {
		return &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(2), pipeline.Text("Ann"), pipeline.Null}, Set: set}
	}
	out, set := make([]pipeline.Value, n), make([]bool, n)
	if rerr := ev.ApplyPartial(b, rec(true, true, false, false), out, set); rerr != nil || names(set) != "a,b" {
		t.Errorf("keys only: %v %s", rerr, names(set))
	}
	if rerr := ev.ApplyPartial(b, rec(true, true, true, true), out, set); rerr != nil || names(set) != "a,b,label,name,city" || !out[len(out)-1].IsNull() {
		t.Errorf("every column, city deleted: %v %s %v", rerr, names(set), out)
	}
	if rerr := ev.ApplyPartial(b, rec(true, false, true, false), out, set); rerr == nil || rerr.Code != pipeline.CodeUnsetKey || rerr.Field != "b" {
		t.Errorf("key column unset: %v", rerr)
	}
	if rerr := ev.ApplyPartial(b, rec(true, true, true, false), out, set); rerr == nil || rerr.Code != pipeline.CodeUnsetInput || rerr.Field != "city" {
		t.Errorf("label from name (set) and city (unset): %v", rerr)
	}
	if rerr := ev.Apply(b, rec(true, true, true, false), out); rerr == nil || rerr.Code != pipeline.CodePartialUpdate {
		t.Errorf("Apply of a partial record: %v", rerr)
	}
}

// A clustering range becomes a key range when the key is the partition key (maybe after a hash
// prefix of it) then the clustering columns as they are; any other key is refused, also one
// holding a partition key column after a clustering column. Before, [crc32(a) % 16 AS h][b][a]
// took the range as h = 7 AND b >= 5, and deleted the rows of every partition of that h.
func TestKeyRange(t *testing.T) {
	rng := &pipeline.ClusteringRange{
		Start: pipeline.ClusteringBound{Cols: []int{1}, Vals: []pipeline.Value{pipeline.Int(5)}, Inclusive: true}}
	rec := &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null, pipeline.Null}, Set: []bool{true, false, false, false}}
	for _, tc := range []struct{ key, want string }{
		{"[a][b]", "prefix [1] start [5] true"},
		{"[crc32(a) % 16 AS h][a][b]", "prefix [7 1] start [5] true"},
		{"[a][name][b]", "range_tombstone"},
		{"[b][a]", "range_tombstone"},
		{"[crc32(a) % 16 AS h][b]", "prefix [7] start [5] true"}, // the key already merges partitions of one h
		// a keeps the partitions of one h apart, after b: h = 7 AND b >= 5 holds other
		// partitions' rows, which the delete would remove
		{"[crc32(a) % 16 AS h][b][a]", "range_tombstone"},
	} {
		p := compileYAML(t, partialSource+"  primary_key: \""+tc.key+"\"\n")
		kr, rerr := p.NewEvaluator().KeyRange(&pipeline.Batch{}, rec, rng, make([]pipeline.Value, len(p.Target().Columns)))
		got := ""
		if rerr != nil {
			got = rerr.Code
		} else {
			var prefix []string
			for _, v := range kr.Prefix {
				prefix = append(prefix, v.String())
			}
			got = "prefix [" + strings.Join(prefix, " ") + "] start [" + kr.Start.Vals[0].String() + "] " + map[bool]string{true: "true", false: "false"}[kr.Start.Inclusive]
		}
		if tc.want == "range_tombstone" && strings.HasPrefix(got, "prefix") || tc.want != "range_tombstone" && !strings.HasPrefix(got, "prefix") {
			t.Errorf("%s: got %s, want %s", tc.key, got, tc.want)
		}
	}
}

// A range tombstone's bounds come in Cassandra's clustering order, a column's DESC named by its
// bound (the connector's ReversedType): where the key orders a column the other way the bounds
// change ends, and a range whose columns differ in how they are reversed is refused.
func TestKeyRangeInTheKeysOrder(t *testing.T) {
	const src = `version: 1
source:
  name: ks.tb
  columns:
    a: int
    b: int
    c: int
    x: text
target:
  table: tb
`
	bound := func(incl bool, desc []bool, vals ...int64) pipeline.ClusteringBound {
		b := pipeline.ClusteringBound{Inclusive: incl}
		for i, v := range vals {
			b.Cols, b.Vals, b.Desc = append(b.Cols, 1+i), append(b.Vals, pipeline.Int(v)), append(b.Desc, desc[i])
		}
		return b
	}
	show := func(b pipeline.KeyBound) string {
		var s []string
		for _, v := range b.Vals {
			s = append(s, v.String())
		}
		return "[" + strings.Join(s, " ") + "]" + map[bool]string{true: "incl", false: "excl"}[b.Inclusive]
	}
	asc, desc := []bool{false, false}, []bool{true, false}
	rec := &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null, pipeline.Null}, Set: []bool{true, false, false, false}}
	for _, tc := range []struct {
		name, key  string
		start, end pipeline.ClusteringBound
		want       string
	}{
		// b >= 3 on a table clustered b ASC: from 3 to the partition's end
		{"same order", "[a][b][c]", bound(true, asc, 3), bound(true, asc), "[3]incl..[]incl"},
		{"key DESC, table ASC", "[a][b DESC][c]", bound(true, asc, 3), bound(true, asc), "[]incl..[3]incl"},
		// b >= 3 on a table clustered b DESC: from the partition's start down to 3 (as captured)
		{"key ASC, table DESC", "[a][b][c]", bound(true, desc), bound(true, desc, 3), "[3]incl..[]incl"},
		{"both DESC", "[a][b DESC][c]", bound(true, desc), bound(true, desc, 3), "[]incl..[3]incl"},
		// b = 2 AND c >= 1, b DESC in the table only: b is fixed, c decides
		{"fixed reversed column", "[a][b][c]", bound(true, desc, 2, 1), bound(true, desc, 2), "[2 1]incl..[2]incl"},
		// (b, c) from (5, 1) to (2, end) with b reversed and c not: not one range of the key
		{"mixed", "[a][b][c]", bound(true, desc, 5, 1), bound(true, desc, 2), "range_tombstone"},
	} {
		p := compileYAML(t, src+"  primary_key: \""+tc.key+"\"\n")
		rng := &pipeline.ClusteringRange{Start: tc.start, End: tc.end}
		kr, rerr := p.NewEvaluator().KeyRange(&pipeline.Batch{}, rec, rng, make([]pipeline.Value, len(p.Target().Columns)))
		got := ""
		if rerr != nil {
			got = rerr.Code
		} else {
			got = show(kr.Start) + ".." + show(kr.End)
		}
		if got != tc.want {
			t.Errorf("%s, key %s: got %s, want %s", tc.name, tc.key, got, tc.want)
		}
	}
}

// A range over a clustering column that Cassandra orders otherwise than the text the key holds
// it as (a timeuuid by its time, a uuid by version then time or bytes, an inet by its bytes, a
// collection by its elements) is not a range of the key: refused. Before, `c < maxTimeuuid(...)`
// became a range of the VARCHAR's text, whose first characters are the time's low bits, and the
// delete removed rows of other times and left rows of the range. A column both bounds fix to
// one value keeps its rows whatever its order; a range of a column in the same order is applied.
func TestKeyRangeRefusesAColumnOrderedOtherwise(t *testing.T) {
	const src = `version: 1
source:
  name: ks.tb
  columns:
    a: int
    c: %s
    d: int
    x: text
target:
  table: tb
  primary_key: "[a][c][d]"
`
	rec := &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null, pipeline.Null}, Set: []bool{true, false, false, false}}
	for _, tc := range []struct {
		typ        string
		start, end []pipeline.Value // of c, then d
		want       string           // the reject's code, or "" when applied
	}{
		{"timeuuid", nil, []pipeline.Value{pipeline.Text("50554d6e-29bb-11e5-b345-feff819cdc9f")}, pipeline.CodeRangeTombstone},
		{"uuid", []pipeline.Value{pipeline.Text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")}, nil, pipeline.CodeRangeTombstone},
		{"inet", []pipeline.Value{pipeline.Text("10.0.0.2")}, []pipeline.Value{pipeline.Text("10.0.0.10")}, pipeline.CodeRangeTombstone},
		{"frozen<list<int>>", []pipeline.Value{pipeline.Text("[9]")}, nil, pipeline.CodeRangeTombstone},
		// c fixed by both bounds, d ranges: one range of the key
		{"timeuuid", []pipeline.Value{pipeline.Text("50554d6e-29bb-11e5-b345-feff819cdc9f"), pipeline.Int(3)},
			[]pipeline.Value{pipeline.Text("50554d6e-29bb-11e5-b345-feff819cdc9f")}, ""},
		{"text", []pipeline.Value{pipeline.Text("b")}, []pipeline.Value{pipeline.Text("m")}, ""},
		{"bigint", []pipeline.Value{pipeline.Int(-5)}, nil, ""},
	} {
		bound := func(vals []pipeline.Value) pipeline.ClusteringBound {
			b := pipeline.ClusteringBound{Inclusive: true}
			for i, v := range vals {
				b.Cols, b.Vals, b.Desc = append(b.Cols, 1+i), append(b.Vals, v), append(b.Desc, false)
			}
			return b
		}
		p := compileYAML(t, fmt.Sprintf(src, tc.typ))
		rng := &pipeline.ClusteringRange{Start: bound(tc.start), End: bound(tc.end)}
		_, rerr := p.NewEvaluator().KeyRange(&pipeline.Batch{}, rec, rng, make([]pipeline.Value, len(p.Target().Columns)))
		got := ""
		if rerr != nil {
			got = rerr.Code
		}
		if got != tc.want {
			t.Errorf("c %s, %v..%v: got %q (%v), want %q", tc.typ, tc.start, tc.end, got, rerr, tc.want)
		}
	}
}
