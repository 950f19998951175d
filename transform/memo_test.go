package transform

import (
	"strconv"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A digest call site's memo rests after a run of misses (unique keys) and is tried again after
// the rest: the digests stay right in every phase, and rows that repeat their predecessor's input
// after a rest are served by the memo again.
func TestDigestMemoRestsAndComesBack(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {u: text, id: bigint}}\n"+
		"target:\n  table: t\n  primary_key: '[md5(u).substr(0,4) + u AS pk][id]'\n  exclude: [u]\n")
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	apply := func(u string, id int) {
		t.Helper()
		if rerr := e.Apply(nil, &pipeline.Record{Values: []pipeline.Value{pipeline.Text(u), pipeline.Int(int64(id))}}, out); rerr != nil {
			t.Fatal(rerr)
		}
		if want := md5Hex(u)[:4] + u; out[0].Str != want {
			t.Fatalf("row %d: pk %q, want %q", id, out[0].Str, want)
		}
		e.Reset()
	}
	id := 0
	for ; id < memoMisses+memoRest+10; id++ { // unique: misses, the rest, and a miss after it
		apply("u"+strconv.Itoa(id), id)
	}
	m := &e.digests[0]
	if m.rest != 0 || !m.ok {
		t.Fatalf("after the rest: rest %d, ok %v; want the memo in use", m.rest, m.ok)
	}
	for i := range 5 { // a partition's rows: one input repeated
		apply("same", id+i)
	}
	if m.misses != 0 || string(m.in) != "same" {
		t.Errorf("repeated input: misses %d, memo input %q; want hits on %q", m.misses, m.in, "same")
	}
	for i := range memoMisses + 2 { // unique again: into a rest
		apply("v"+strconv.Itoa(i), id+5+i)
	}
	if m.rest == 0 {
		t.Errorf("after %d misses in a row the memo does not rest", memoMisses+2)
	}
}
