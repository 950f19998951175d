package verify

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// An example's text value that would read as another value is quoted: the text "NULL" (shown as
// a null was: a row whose v is the text "NULL" in the source and null in the target read
// "source NULL, target NULL"), the empty string (shown as nothing) and text that begins with a
// quote (shown as a quoted value with escapes is). Other values show as they are.
func TestDifferExamplesTellTextFromNull(t *testing.T) {
	p := testProgram(t)
	recs := testRecords(6)
	tbl := migrated(t, p, recs)
	name := p.Target().Index("name")
	key := func(id int64) string { return tbl.keyOf([]pipeline.Value{pipeline.Int(id % 7), pipeline.Int(id)}) }
	recs[0].Values[1] = pipeline.Text("NULL")
	tbl.rows[key(1)][name] = pipeline.Null
	recs[1].Values[1] = pipeline.Text("")
	tbl.rows[key(2)][name] = pipeline.Null
	recs[2].Values[1] = pipeline.Text(`"a\nb"`)
	tbl.rows[key(3)][name] = pipeline.Text("a\nb")
	recs[3].Values[1] = pipeline.Text("plain")
	res := runLookup(t, p, recs, tbl, nil)
	want := map[string]Diff{
		"1": {Column: "name", Source: `"NULL"`, Target: "NULL"},
		"2": {Column: "name", Source: `""`, Target: "NULL"},
		"3": {Column: "name", Source: `"\"a\\nb\""`, Target: "a\nb"},
		"4": {Column: "name", Source: "plain", Target: "name-4"},
	}
	if res.Differ != 4 {
		t.Fatalf("want 4 differ: %+v", res)
	}
	for _, e := range res.Examples.Differ {
		id := e.Key[1].Value
		if len(e.Columns) != 1 || e.Columns[0] != want[id] {
			t.Errorf("key %s: %+v, want %+v", id, e.Columns, want[id])
		}
	}
}
