package kafka

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
)

// A column added to a relational table mid-stream appears in its events' "after" (the JSON
// converter writes every field of the row's struct), and the mapping does not declare it: its
// values are not replicated, which the decoder says once per column, naming it and what to do.
// The change is applied (the columns the mapping declares are whole). Before, the new column's
// values were dropped without a word (a Cassandra event's are rejected: unknown_column).
func TestRelationalEventWithANewColumnIsTold(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	d.Logger = zap.New(core)
	src := `"source":{"connector":"postgresql","db":"shop","schema":"public","table":"t"}`
	for _, ev := range []string{
		`{"op":"c",` + src + `,"before":null,"after":{"id":1,"v":"a"}}`,
		`{"op":"c",` + src + `,"before":null,"after":{"id":2,"v":"b","added":7}}`,
		`{"op":"u",` + src + `,"before":{"id":2,"v":"b","added":7},"after":{"id":2,"v":"c","added":8}}`,
	} {
		if ch := d.Decode(nil, nil, []byte(ev))[0]; ch.Err != nil || ch.Op != OpUpsert || ch.Set != nil {
			t.Fatalf("%s: %+v, want a whole upsert of the declared columns", ev, ch)
		}
	}
	all := logs.All()
	if len(all) != 1 || all[0].ContextMap()["column"] != "added" {
		t.Fatalf("warnings %v, want one naming the new column", all)
	}
}
