package transform

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A non-key value over Lindorm's 2 MB (quotas-and-limits: "non-primary key column value") is
// rejected naming its column, in whole rows (Apply) and in partial changes (ApplyPartial), and by
// CheckValues for replicate's whole changes; a value of exactly the limit passes, and ApplyKey
// (deletes, before images) still gives the key. Before, such a value was written: a 3 MiB text
// went into the Parquet files, whose bulk load Lindorm cannot store.
func TestValueOverLindormLimitRejected(t *testing.T) {
	p := compileYAML(t, `
version: 1
source:
  name: ks.t
  columns: {id: bigint, body: text, data: blob}
target:
  table: t
  primary_key: "[id]"
`)
	out := make([]pipeline.Value, len(p.Target().Columns))
	e := p.NewEvaluator()
	big := strings.Repeat("x", MaxValueBytes+1)
	cases := []struct {
		name   string
		values []pipeline.Value
		field  string
	}{
		{"text at the limit", []pipeline.Value{pipeline.Int(1), pipeline.Text(big[1:]), pipeline.Null}, ""},
		{"text over the limit", []pipeline.Value{pipeline.Int(2), pipeline.Text(big), pipeline.Null}, "body"},
		{"blob over the limit", []pipeline.Value{pipeline.Int(3), pipeline.Text("a"), pipeline.Bytes(big)}, "data"},
	}
	for _, c := range cases {
		rerr := e.Apply(nil, &pipeline.Record{Values: c.values}, out)
		switch {
		case c.field == "" && rerr != nil:
			t.Errorf("%s: rejected: %v", c.name, rerr)
		case c.field != "" && (rerr == nil || rerr.Code != pipeline.CodeValueTooLong || rerr.Field != c.field):
			t.Errorf("%s: got %v, want code %s on field %s", c.name, rerr, pipeline.CodeValueTooLong, c.field)
		}
	}
	rerr := e.Apply(nil, &pipeline.Record{Values: cases[1].values}, out)
	if want := `value_too_long: field "body": the value is 2097153 bytes, Lindorm allows 2097152 in a non-key column: keep such values elsewhere (an object store) with a reference in the row, or leave the column out (target.exclude)`; rerr == nil || rerr.Error() != want {
		t.Errorf("message:\n got %v\nwant %s", rerr, want)
	}
	if rerr := e.ApplyKey(nil, &pipeline.Record{Values: cases[1].values}, out); rerr != nil || out[0] != pipeline.Int(2) {
		t.Errorf("ApplyKey: %v, key %v", rerr, out[0])
	}
	if rerr := e.CheckValues(out); rerr == nil || rerr.Code != pipeline.CodeValueTooLong {
		t.Errorf("CheckValues: %v, want %s", rerr, pipeline.CodeValueTooLong)
	}
	set := make([]bool, len(out))
	partial := &pipeline.Record{Values: cases[2].values, Set: []bool{true, false, true}}
	if rerr := e.ApplyPartial(nil, partial, out, set); rerr == nil || rerr.Code != pipeline.CodeValueTooLong || rerr.Field != "data" {
		t.Errorf("ApplyPartial: %v, want %s on data", rerr, pipeline.CodeValueTooLong)
	}
}
