package kafka

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Debezium's PostgreSQL connector writes the placeholder of an unchanged TOASTed column in the
// column's own type (debezium-connector-postgres UnchangedToastedPlaceholder): an int[] or
// bigint[] column as the list of the placeholder's bytes, a bytea as its bytes in the
// binary.handling.mode's form (hex: lowercase, io.debezium.util.HexConverter). These columns are
// not set by the change either. Before, an int[] column became the list of the placeholder's
// bytes, and a hex bytea the placeholder's bytes.
func TestDecodeUnavailableValueInEveryForm(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "ints", Type: "list<int>"}, {Name: "longs", Type: "list<bigint>"},
		{Name: "pic", Type: "blob"}, {Name: "n", Type: "int"}}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	const bytes = `[95,95,100,101,98,101,122,105,117,109,95,117,110,97,118,97,105,108,97,98,108,101,95,118,97,108,117,101]`
	const src = `"source":{"connector":"postgresql","ts_ms":1}`
	for _, c := range []struct{ name, value, want string }{
		{"int arrays", `{"op":"u",` + src + `,"before":null,"after":{"id":1,"ints":` + bytes + `,"longs":` + bytes + `,"pic":null,"n":7}}`,
			"upsert 1|~|~|~|7 before 1|~|~|~|~ set 10011"},
		{"hex bytes", `{"op":"u",` + src + `,"before":null,"after":{"id":1,"ints":[1],"longs":null,"pic":"5f5f646562657a69756d5f756e617661696c61626c655f76616c7565","n":7}}`,
			"upsert 1|[1]|~|~|7 before 1|~|~|~|~ set 11101"},
	} {
		if got := showCells(d.Decode(nil, []byte(`{"id":1}`), []byte(c.value))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
