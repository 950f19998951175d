package kafka

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Debezium's Cassandra connector writes a timestamp cell as Cassandra holds it, epoch
// milliseconds (its TimestampTypeDeserializer: Date.getTime()), as the cassandra:// source reads
// it: a mapping without source.timestamp_unit reads such an event's timestamps, in a column and
// in a collection, as milliseconds, also those before 1973 that a JSON row's would be refused as
// looking like epoch seconds. The event is the captured INSERT with y declared a timestamp and
// its cell holding one.
func TestCassandraConnectorTimestampsAreMilliseconds(t *testing.T) {
	var insert capturedEvent
	for _, ev := range capturedEvents(t) {
		if strings.HasPrefix(ev.CQL, "INSERT INTO capture.ev (a, b, c, x, y) VALUES (1, 1, 1") {
			insert = ev
		}
	}
	if insert.Value == nil {
		t.Fatal("no captured INSERT")
	}
	for _, c := range []struct {
		typ, cell, want string
	}{
		{"timestamp", `86400000`, "86400000"},           // 1970-01-02
		{"timestamp", `-1`, "-1"},                       // 1969-12-31T23:59:59.999
		{"timestamp", `1704067200000`, "1704067200000"}, // 2024
		{"list<timestamp>", `[86400000]`, `["1970-01-02T00:00:00.000Z"]`},
	} {
		value := strings.Replace(string(insert.Value), `"y":{"value":10,`, `"y":{"value":`+c.cell+`,`, 1)
		if value == string(insert.Value) {
			t.Fatal("the captured INSERT has no y cell of 10")
		}
		schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: c.typ}}
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := show(d.Decode(nil, insert.Key, []byte(value))), "upsert 1|1|1|one|"+c.want; got != want {
			t.Errorf("%s cell %s: %s, want %s", c.typ, c.cell, got, want)
		}
	}
}

// A unit other than milliseconds (source.timestamp_unit: s, or a column's own timestamp(us))
// does not apply to the Cassandra connector's timestamps, which are milliseconds: read in it,
// every timestamp of the topic would be another time. Each such event is rejected naming the
// column, as the cassandra:// source refuses the unit; ms reads them as they are.
func TestCassandraConnectorRefusesAnotherTimestampUnit(t *testing.T) {
	var insert capturedEvent
	for _, ev := range capturedEvents(t) {
		if strings.HasPrefix(ev.CQL, "INSERT INTO capture.ev (a, b, c, x, y) VALUES (1, 1, 1") {
			insert = ev
		}
	}
	for _, c := range []struct{ typ, cell, want string }{
		{"timestamp(s)", "1704067200000", "ERR type y"},
		{"list<timestamp(us)>", "[1704067200000]", "ERR type y"},
		{"timestamp(ms)", "1704067200000", "upsert 1|1|1|one|1704067200000"},
	} {
		value := []byte(strings.Replace(string(insert.Value), `"y":{"value":10,`, `"y":{"value":`+c.cell+`,`, 1))
		schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: c.typ}}
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		cs := d.Decode(nil, insert.Key, value)
		got := show(cs)
		if cs[0].Err != nil {
			got = "ERR " + cs[0].Err.Code + " " + cs[0].Err.Field
			if !strings.Contains(cs[0].Err.Message, "epoch milliseconds") || !strings.Contains(cs[0].Err.Message, "remove") {
				t.Errorf("%s: the reject does not say why and what to do: %s", c.typ, cs[0].Err.Message)
			}
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.typ, got, c.want)
		}
	}
}
