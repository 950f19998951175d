package verify

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/transform"
)

// The keys of extra target rows, which --repair lists for deleting by hand, are whole: a key of
// more than 120 bytes was listed as its examples show it, cut ("xxx... (150 bytes)"), a key no
// DELETE could name.
func TestExtraKeysAreWhole(t *testing.T) {
	m, err := transform.Decode([]byte("version: 1\nsource: {name: t, columns: {id: text, v: text}}\ntarget: {table: t, primary_key: '[id]'}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("中", 50) + "x" // 151 bytes
	recs := []pipeline.Record{{Seq: 1, Values: []pipeline.Value{pipeline.Text("a"), pipeline.Text("1")}}}
	folder := writeFolder(t, p.Target(), [][]pipeline.Value{
		{pipeline.Text("a"), pipeline.Text("1")},
		{pipeline.Text(long), pipeline.Text("2")},
	})
	res := runWith(t, Config{Program: p, Source: &sliceSource{recs}, Folder: folder,
		Repair: func(*pipeline.Batch, *pipeline.Record) error { return nil }}, nil)
	if res.Extra == nil || *res.Extra != 1 || len(res.ExtraKeys) != 1 {
		t.Fatalf("want 1 extra key: %+v", res)
	}
	if k := res.ExtraKeys[0]; len(k) != 1 || k[0].Column != "id" || k[0].Value != long {
		t.Errorf("extra key %+v, want id %q", k, long)
	}
}
