package output

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// A rejected record without its raw text (a Cassandra row, say) is written with its decoded
// values by source column name, nulls left out; one with raw text carries the text alone.
func TestJournalRejectNamesValues(t *testing.T) {
	dir := t.TempDir()
	o := &Output{Store: localStore(t, dir), log: zap.NewNop()}
	schema := pipeline.SourceSchema{{Name: "id"}, {Name: "note"}, {Name: "amount"}}
	j, err := o.Journal(nil, schema)
	if err != nil {
		t.Fatal(err)
	}
	b := &pipeline.Batch{Stream: "orders"}
	rerr := &pipeline.RowError{Code: "type", Field: "amount", Message: "not a number"}
	decoded := &pipeline.Record{Seq: 1, Values: []pipeline.Value{pipeline.Text("7"), pipeline.Null, pipeline.Text("x")}}
	raw := &pipeline.Record{Seq: 2, Raw: "7,,x", Values: decoded.Values}
	for _, rec := range []*pipeline.Record{decoded, raw} {
		if err := j.Reject(b, rec, "transform", rerr); err != nil {
			t.Fatal(err)
		}
	}
	data := cutRejects(t, j, dir)
	want := `{"position":"orders:1","stream":"orders","seq":1,"stage":"transform","code":"type","field":"amount","message":"not a number","values":{"amount":"x","id":"7"}}` + "\n" +
		`{"position":"orders:2","stream":"orders","seq":2,"stage":"transform","code":"type","field":"amount","message":"not a number","raw":"7,,x"}` + "\n"
	if string(data) != want {
		t.Fatalf("rejects:\n%s\nwant:\n%s", data, want)
	}
}

// A rejected record's blob is written as 0x and its bytes in hex, the form a file source and
// verify --repair read and write a blob in: as a JSON string of its bytes, every byte that is not
// UTF-8 became U+FFFD, so the rejected row of a blob key (a Cassandra row: no raw text) could
// not be told from others or found in the source.
func TestJournalRejectKeepsBlobBytes(t *testing.T) {
	dir := t.TempDir()
	o := &Output{Store: localStore(t, dir), log: zap.NewNop()}
	schema := pipeline.SourceSchema{{Name: "k", Type: "blob"}, {Name: "note", Type: "text"}, {Name: "e", Type: "blob"}}
	j, err := o.Journal(nil, schema)
	if err != nil {
		t.Fatal(err)
	}
	rec := &pipeline.Record{Seq: 1, Values: []pipeline.Value{pipeline.Bytes("\x00\xff\xfe"), pipeline.Text("0xabc"), pipeline.Bytes("")}}
	if err := j.Reject(&pipeline.Batch{Stream: "ks.t"}, rec, "transform", &pipeline.RowError{Code: "encoding", Field: "k", Message: "not UTF-8"}); err != nil {
		t.Fatal(err)
	}
	data := cutRejects(t, j, dir)
	want := `{"position":"ks.t:1","stream":"ks.t","seq":1,"stage":"transform","code":"encoding","field":"k","message":"not UTF-8","values":{"e":"0x","k":"0x00fffe","note":"0xabc"}}` + "\n"
	if string(data) != want {
		t.Fatalf("rejects:\n%s\nwant:\n%s", data, want)
	}
}

// cutRejects commits the journal's rejects, closes it and returns the rejects file's bytes.
func cutRejects(t *testing.T, j *Journal, dir string) []byte {
	t.Helper()
	if err := j.Cut(context.Background(), &pipeline.Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, err := os.ReadFile(filepath.Join(dir, RejectsFile))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
