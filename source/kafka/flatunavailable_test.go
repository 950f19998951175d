package kafka

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Debezium's ExtractNewRecordState (the rows of format=json) publishes an event's "after" image
// as the row, placeholders and all: the captured PostgreSQL UPDATE that left a TOASTed text and a
// bytea unchanged (testdata/debezium-connect-json-events.jsonl, written by the connector's own
// jars), flattened, holds __debezium_unavailable_value in body and its base64 in pic. Those
// columns are not set by the change, as in the envelope. Before, the placeholder was read as the
// row's value and written over the column's text.
func TestDecodeFlattenedRowUnavailableValue(t *testing.T) {
	f, err := os.Open("testdata/debezium-connect-json-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var key, after json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Name    string
			Schemas bool
			Key     json.RawMessage
			Value   struct{ After json.RawMessage }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.Name == "update with unavailable values" && !m.Schemas {
			key, after = m.Key, m.Value.After
		}
	}
	if after == nil {
		t.Fatal("the captured update with unavailable values is missing")
	}
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "ts", Type: "timestamp(us)"}, {Name: "body", Type: "text"}, {Name: "pic", Type: "blob"}}
	d, err := NewDecoder(Config{Format: FormatJSON}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := showCells(d.Decode(nil, key, after)), "upsert 1|1700000000123|~|~ set 1100"; got != want {
		t.Errorf("flattened update with unavailable values:\n got %s\nwant %s", got, want)
	}
	// the next row of the decoder is whole again
	if got, want := showCells(d.Decode(nil, key, []byte(`{"id":1,"ts":1700000000123000,"body":"b","pic":null}`))), "upsert 1|1700000000123|b|~ set all"; got != want {
		t.Errorf("next row:\n got %s\nwant %s", got, want)
	}
}
