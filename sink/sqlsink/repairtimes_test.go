package sqlsink

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/transform"
)

// A verify --repair file of a mapping with target.write_time, read back by the file source with
// the cells' write times, is written through Lindorm's dialect cell by cell at those times, as the
// copy from the table writes them (cells of one time in one upsert, a null in none); a row without
// its times is rejected, not written at the server's time.
func TestRepairFileWritesCellsAtTheirWriteTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repair.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join([]string{
		`{"id":1,"a":"x","b":10,"_rekey_write_times":{"a":1700000000123,"b":1700000000123}}`,
		`{"id":2,"a":"y","b":20,"_rekey_write_times":{"a":1700000001000,"b":1700000002000}}`,
		`{"id":3,"a":null,"b":30,"_rekey_write_times":{"b":1700000002000}}`,
		`{"id":4,"a":"z","b":40}`,
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "b", Type: "int"}}
	src, err := file.New(file.Config{Path: path, Schema: schema, CellWriteTimes: true}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	m, err := transform.Decode([]byte("version: 1\nsource:\n  name: repair\ntarget:\n  table: cells\n  primary_key: \"[id]\"\n  write_time: true\n"), "cells.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, schema)
	if err != nil {
		t.Fatal(err)
	}
	w, stmts := hookWriter(prog.Target(), true)
	w.shards = w.shards[:1]
	j := &rejectsJournal{}
	r, err := runner.New(runner.Config{Source: src, NewTransformer: func() runner.Transformer { return prog.NewEvaluator() },
		Target: prog.Target(), Plan: pipeline.RegionPlan{Type: prog.Target().Columns[0].Type}, Sink: w, Journal: j, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(*stmts)
	slices.Sort(got)
	want := []string{
		"UPSERT /*+ _l_ts_(1700000000123) */ INTO cells (id, a, b) VALUES (1,'x',10)",
		"UPSERT /*+ _l_ts_(1700000001000) */ INTO cells (id, a) VALUES (2,'y')",
		"UPSERT /*+ _l_ts_(1700000002000) */ INTO cells (id, b) VALUES (2,20),(3,30)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("statements\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	if res.RowsWritten != 3 || res.RowsRejected != 1 || len(j.rejs) != 1 || !strings.Contains(j.rejs[0], "no_write_time") {
		t.Errorf("%d rows written, %d rejected %q: want 3 written and the row without times rejected", res.RowsWritten, res.RowsRejected, j.rejs)
	}
}
