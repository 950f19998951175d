package transform

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The columns copied from the source as they are take a shorter path than computed ones: a value
// of the column's kind is copied, and anything else must still be converted, checked or refused
// as a computed column's value is (a null key names its column, a narrow integer is range-checked).
func TestCopiedColumnsConvertAndRefuseLikeComputedOnes(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {id: bigint, ts: timestamp, n: int, s: text, d: decimal}}\n"+
		"target:\n  table: t\n  primary_key: '[md5(s).substr(0,2) AS h][id]'\n  columns: {n: \"n :: TINYINT\", d: \"d :: DECIMAL(18,2)\"}\n")
	ncol := len(p.Target().Columns)
	col := func(name string) int {
		for i, c := range p.Target().Columns {
			if c.Name == name {
				return i
			}
		}
		t.Fatalf("no column %s in %+v", name, p.Target().Columns)
		return -1
	}
	rec := func(id, ts, n, s, d pipeline.Value) *pipeline.Record {
		return &pipeline.Record{Values: []pipeline.Value{id, ts, n, s, d}}
	}
	e := p.NewEvaluator()
	out := make([]pipeline.Value, ncol)
	good := rec(pipeline.Int(7), pipeline.Text("2024-01-01T00:00:00Z"), pipeline.Int(3), pipeline.Text("x"), pipeline.Decimal("1.5"))
	if rerr := e.Apply(nil, good, out); rerr != nil {
		t.Fatal(rerr)
	}
	if v := out[col("id")]; v != pipeline.Int(7) {
		t.Errorf("id %+v, want the copied 7", v)
	}
	if v := out[col("ts")]; v != pipeline.Int(1704067200000) {
		t.Errorf("ts %+v, want the text converted to epoch milliseconds", v)
	}
	if v := out[col("d")]; v.Kind != pipeline.KindDecimal || v.Str != "1.5" {
		t.Errorf("d %+v, want the cast decimal 1.5", v)
	}
	nullTS := rec(pipeline.Int(7), pipeline.Null, pipeline.Int(3), pipeline.Text("x"), pipeline.Decimal("1.5"))
	if rerr := e.Apply(nil, nullTS, out); rerr != nil || out[col("ts")] != pipeline.Null {
		t.Errorf("a null non-key copy: %v, ts %+v", rerr, out[col("ts")])
	}
	nullID := rec(pipeline.Null, pipeline.Int(1), pipeline.Int(3), pipeline.Text("x"), pipeline.Decimal("1.5"))
	if rerr := e.Apply(nil, nullID, out); rerr == nil || rerr.Code != pipeline.CodeNullKey || rerr.Field != "id" {
		t.Errorf("a null key copy: %+v, want null_key on id", rerr)
	}
	badTS := rec(pipeline.Int(7), pipeline.Text("yesterday"), pipeline.Int(3), pipeline.Text("x"), pipeline.Decimal("1.5"))
	if rerr := e.Apply(nil, badTS, out); rerr == nil || rerr.Code != pipeline.CodeType || rerr.Field != "ts" {
		t.Errorf("a copy of text that is no timestamp: %+v, want type on ts", rerr)
	}
	wide := rec(pipeline.Int(7), pipeline.Int(1), pipeline.Int(300), pipeline.Text("x"), pipeline.Decimal("1.5"))
	if rerr := e.Apply(nil, wide, out); rerr == nil || rerr.Code != pipeline.CodeType || rerr.Field != "n" {
		t.Errorf("300 cast to TINYINT: %+v, want type on n", rerr)
	}
	long := rec(pipeline.Int(7), pipeline.Int(1), pipeline.Int(3), pipeline.Text("x"), pipeline.Decimal("12345678901234567.5"))
	if rerr := e.Apply(nil, long, out); rerr == nil || rerr.Code != pipeline.CodeType || rerr.Field != "d" {
		t.Errorf("a decimal beyond DECIMAL(18,2): %+v, want type on d", rerr)
	}
}
