package replicate

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// The step both workers share for an update with a before image: the old key is deleted only
// when the before image maps to another key; a before image whose key cannot be computed is
// rejected saying so; a salted key is never looked up (its salt depends on the values).
func TestUpdateBeforeImageGivesTheOldKey(t *testing.T) {
	w := opsWorker(t, "[g][id]", outputCaps{})
	n := len(w.r.target.Columns)
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

	salted := opsWorker(t, "[g][id][random(4)]", outputCaps{})
	n = len(salted.r.target.Columns)
	row, old = make([]pipeline.Value, n), make([]pipeline.Value, n)
	if moved, rerr := salted.oldKey(other, 7, row, old); moved || rerr != nil {
		t.Fatalf("salted key: moved %v, %v; want never looked up", moved, rerr)
	}
}
