package transform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// target.write_time carries the source's cell write times: a column's cell is as new as the
// newest source cell it is computed from, a key column has none, and a record without times
// gives none. The option is part of the job (the fingerprint), and off by default.
func TestCellTimesFollowTheColumnsInputs(t *testing.T) {
	base := partialSource + `  primary_key: "[a][b]"
  columns:
    label: name + '/' + city
`
	off := compileYAML(t, base)
	p := compileYAML(t, base+"  write_time: true\n")
	if off.WriteTime() || !p.WriteTime() {
		t.Fatalf("WriteTime: off %v, on %v", off.WriteTime(), p.WriteTime())
	}
	if off.Fingerprint() == p.Fingerprint() {
		t.Error("write_time does not change the fingerprint: a resume could mix cells of the server's time and of their write times")
	}
	ev := p.NewEvaluator()
	times := make([]int64, len(p.Target().Columns))
	rec := &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1), pipeline.Int(2), pipeline.Text("Ann"), pipeline.Text("Oslo")},
		Times: []int64{0, 0, 1000, 3000}}
	ev.CellTimes(rec, times)
	got := map[string]int64{}
	for i, c := range p.Target().Columns {
		got[c.Name] = times[i]
	}
	if want := map[string]int64{"a": 0, "b": 0, "label": 3000, "name": 1000, "city": 3000}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cell times %v, want %v", got, want)
	}
	rec.Times = nil
	ev.CellTimes(rec, times)
	for i, ts := range times {
		if ts != 0 {
			t.Errorf("a record without times: column %d has %d", i, ts)
		}
	}
	if _, err := Decode([]byte(base+"  write_time: maybe\n"), "m.yaml"); err == nil {
		t.Error("write_time: maybe accepted")
	}

	// the TTL plan: said only when there is one
	if off.TTLPlan() != "" {
		t.Errorf("a plan without TTL or write times: %q", off.TTLPlan())
	}
	if err := p.TakeTableTTL(600); err != nil || !strings.Contains(p.TTLPlan(), "600 s, counted by Lindorm from each cell's timestamp, the cell's source write time") {
		t.Errorf("TakeTableTTL: %v, plan %q", err, p.TTLPlan())
	}
	if err := off.TakeTableTTL(600); err != nil || !strings.Contains(off.TTLPlan(), "cells live up to 600 s from the copy") {
		t.Errorf("TakeTableTTL without write times: %v, plan %q", err, off.TTLPlan())
	}
	own := compileYAML(t, base+"  write_time: true\n  options: {TTL: '60'}\n")
	if err := own.TakeTableTTL(600); err == nil || !strings.Contains(err.Error(), "must be the same") {
		t.Errorf("a mapping TTL unlike the source's with write_time: %v", err)
	}
	if fmt.Sprint(own.Options()) != "[[TTL 60]]" {
		t.Errorf("options %v", own.Options())
	}
}
