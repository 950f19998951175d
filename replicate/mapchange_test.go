package replicate

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/transform"
)

func mapperFor(t *testing.T, yml string) (partWorker, int) {
	t.Helper()
	m, err := transform.Decode([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Replicator{cfg: Config{Program: prog}, target: prog.Target(), log: zap.NewNop()}
	return r.newPartWorker(0, nil, outputCaps{}, 2), len(prog.Target().Columns)
}

// The step both workers share for an update with a before image: the old key is deleted only
// when the before image maps to another key; a before image whose key cannot be computed is
// rejected saying so; a salted key is never looked up (its salt depends on the values).
func TestUpdateBeforeImageGivesTheOldKey(t *testing.T) {
	w, n := mapperFor(t, "version: 1\nsource: {columns: {id: bigint, g: text, v: text}}\ntarget: {table: t, primary_key: '[g][id]'}\n")
	row, old := make([]pipeline.Value, n), make([]pipeline.Value, n)
	after := []pipeline.Value{pipeline.Int(1), pipeline.Text("a"), pipeline.Text("new")}
	if rerr := w.mapRow(&kafka.Change{Values: after, Offset: 7}, row, nil); rerr != nil {
		t.Fatal(rerr)
	}
	same := []pipeline.Value{pipeline.Int(1), pipeline.Text("a"), pipeline.Text("old")}
	if moved, rerr := w.oldKey(same, 7, row, old); moved || rerr != nil {
		t.Fatalf("same key: moved %v, %v; want not moved", moved, rerr)
	}
	other := []pipeline.Value{pipeline.Int(1), pipeline.Text("b"), pipeline.Text("old")}
	if moved, rerr := w.oldKey(other, 7, row, old); !moved || rerr != nil || old[0].Str != "b" {
		t.Fatalf("another key: moved %v, old %v, %v; want moved from b", moved, old[0], rerr)
	}
	noKey := []pipeline.Value{pipeline.Int(1), pipeline.Null, pipeline.Null}
	moved, rerr := w.oldKey(noKey, 7, row, old)
	if moved || rerr == nil || rerr.Code != pipeline.CodeNullKey || !strings.HasPrefix(rerr.Message, `update: cannot compute the old key from "before" to delete it: `) {
		t.Fatalf("before image without its key: moved %v, %+v; want the null_key reject naming the update", moved, rerr)
	}

	salted, n := mapperFor(t, "version: 1\nsource: {columns: {id: bigint, g: text, v: text}}\ntarget: {table: t, primary_key: '[g][id][random(4)]'}\n")
	row, old = make([]pipeline.Value, n), make([]pipeline.Value, n)
	if moved, rerr := salted.oldKey(other, 7, row, old); moved || rerr != nil {
		t.Fatalf("salted key: moved %v, %v; want never looked up", moved, rerr)
	}
}
