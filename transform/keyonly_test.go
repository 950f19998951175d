package transform

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A row whose non-key values are all null holds only its key: Lindorm cannot write such a row
// (wide-table design guide), so Apply rejects it with its own code, and ApplyKey (deletes, before
// images) still gives its key.
func TestKeyOnlyRowRejected(t *testing.T) {
	p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {id: bigint, a: text, b: int}
target:
  table: t
  primary_key: "[id]"
`)
	out := make([]pipeline.Value, len(p.Target().Columns))
	e := p.NewEvaluator()
	cases := []struct {
		name   string
		values []pipeline.Value
		code   string
	}{
		{"all values null", []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null}, pipeline.CodeKeyOnlyRow},
		{"one value set", []pipeline.Value{pipeline.Int(2), pipeline.Null, pipeline.Int(7)}, ""},
		{"empty text is a value", []pipeline.Value{pipeline.Int(3), pipeline.Text(""), pipeline.Null}, ""},
		{"null key first", []pipeline.Value{pipeline.Null, pipeline.Null, pipeline.Null}, pipeline.CodeNullKey},
	}
	for _, c := range cases {
		rerr := e.Apply(nil, &pipeline.Record{Values: c.values}, out)
		switch {
		case c.code == "" && rerr != nil:
			t.Errorf("%s: rejected: %v", c.name, rerr)
		case c.code != "" && (rerr == nil || rerr.Code != c.code):
			t.Errorf("%s: got %v, want code %s", c.name, rerr, c.code)
		}
	}
	rerr := e.Apply(nil, &pipeline.Record{Values: cases[0].values}, out)
	if want := `key_only_row: field "id": every non-key column is null: Lindorm cannot write a row that contains only the primary key`; rerr == nil || rerr.Error() != want {
		t.Errorf("message:\n got %v\nwant %s", rerr, want)
	}
	if rerr := e.ApplyKey(nil, &pipeline.Record{Values: cases[0].values}, out); rerr != nil || out[0] != pipeline.Int(1) {
		t.Errorf("ApplyKey: %v, key %v", rerr, out[0])
	}
}
