package kafka

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestDecodeConnectJSONEvents decodes the messages of a relational Debezium connector as
// Debezium's envelope and Kafka Connect's JsonConverter write them
// (testdata/debezium-connect-json-events.jsonl, written by testdata/connectjson/Capture.java
// with the connector's own jars): exact decimals (Decimal's base64 with the scale in the schema,
// VariableScaleDecimal's scale beside it), MicroTimestamp keys, the placeholder of a value the
// connector did not get, a delete's key-only before and its tombstone.
func TestDecodeConnectJSONEvents(t *testing.T) {
	schema := func(ts string) pipeline.SourceSchema {
		return pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "ts", Type: ts}, {Name: "amt", Type: "decimal"},
			{Name: "big", Type: "varint"}, {Name: "vs", Type: "decimal"}, {Name: "body", Type: "text"}, {Name: "pic", Type: "blob"}}
	}
	f, err := os.Open("testdata/debezium-connect-json-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// with schemas the envelope gives the timestamps' unit; without, the mapping does
	// (source.timestamp_unit: us)
	withSchemas, err := NewDecoder(Config{Format: FormatDebezium}, schema("timestamp"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewDecoder(Config{Format: FormatDebezium}, schema("timestamp(us)"))
	if err != nil {
		t.Fatal(err)
	}
	hint := "ERR type: invalid decimal %q: expected a decimal number" + unscaledDecimalHint
	want := map[string]string{
		"create true":                         "upsert 1|1700000000123|12.34|1234567890123456789012|-1.234|b|p set all",
		"create below one true":               "upsert 2|1700000000123|0.05|-128|5|~|~ set all",
		"update with unavailable values true": "upsert 1|1700000000123|-12.34|-1234567890123456789012|0.000001|~|~ before 1|1700000000123|~|~|~|~|~ set 1111100",
		"delete true":                         "delete 1|1700000000123|~|~|~|~|~ set all",
		"tombstone true":                      "delete 1|1700000000123|~|~|~|~|~ set all",
		// without schemas nothing says the bytes' scale: refused, saying what to change
		"create false":                         fmt.Sprintf(hint, "BNI="),
		"create below one false":               fmt.Sprintf(hint, "BQ=="),
		"update with unavailable values false": fmt.Sprintf(hint, "+y4="),
		"delete false":                         "delete 1|1700000000123|~|~|~|~|~ set all",
		"tombstone false":                      "delete 1|1700000000123|~|~|~|~|~ set all",
	}
	seen := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Name    string
			Schemas bool
			Key     json.RawMessage
			Value   json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		var value []byte
		if string(m.Value) != "null" {
			value = m.Value
		}
		d := plain
		if m.Schemas {
			d = withSchemas
		}
		name := fmt.Sprintf("%s %v", m.Name, m.Schemas)
		if got := showCells(d.Decode(nil, m.Key, value)); got != want[name] {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want[name])
		}
		seen++
	}
	if err := sc.Err(); err != nil || seen != len(want) {
		t.Fatalf("%d of %d messages read (%v)", seen, len(want), err)
	}
}

// A JSON row as Kafka Connect's JsonConverter writes it with schemas (format=json, a struct
// wrapped as {"schema", "payload"}, in the form of the captured events' keys and images) holds a
// bytes field as base64, always: a blob whose base64 begins with "0x" (that of d3 1d 35 is
// "0x01") is those bytes. A field the schema gives as a string is the column's text, and an
// unwrapped row's blob keeps the files' reading (hex after "0x"). Before, the wrapped row's
// "0x01" was read as hex: the one byte 01, without a reject.
func TestDecodeConnectJSONRowBytesAreBase64(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "pic", Type: "blob"}})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := func(typ, pic string) string {
		return `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"` + typ + `","optional":true,"field":"pic"}],"optional":false,"name":"srv.public.t.Value"},"payload":{"id":1,"pic":"` + pic + `"}}`
	}
	for _, c := range []struct{ name, value, want string }{
		{"bytes field", wrapped("bytes", "0x01"), "upsert 1|\xd3\x1d\x35"},
		{"bytes field of plain base64", wrapped("bytes", "cA=="), "upsert 1|p"},
		{"string field", wrapped("string", "0x01"), "upsert 1|\x01"},
		{"unwrapped row", `{"id":1,"pic":"0x01"}`, "upsert 1|\x01"},
	} {
		if got := show(d.Decode(nil, nil, []byte(c.value))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// A JSON row Kafka Connect's JsonConverter wrapped with its schema (format=json) is read by the
// schema's logical types, as a Debezium event's images are: a Date (days) into a timestamp
// column is its midnight, a Timestamp is milliseconds whatever source.timestamp_unit says, and a
// Decimal's base64 is the number its scale gives, into a decimal or a text column. Before, the
// days were read as milliseconds (1970-01-01T00:00:19Z), the milliseconds as the mapping's
// microseconds, and the decimal's base64 was rejected from a decimal column and written as its
// base64 text into a text column.
func TestDecodeConnectJSONRowLogicalTypes(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "day", Type: "timestamp(us)"},
		{Name: "at", Type: "timestamp(us)"}, {Name: "amt", Type: "decimal"}, {Name: "note", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	decimal := `"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}`
	row := func(field, value string) string {
		return `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},` + field + `],` +
			`"optional":false,"name":"srv.public.t.Value"},"payload":{"id":1,` + value + `}}`
	}
	for _, c := range []struct{ name, msg, want string }{
		{"Date", row(`{"type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date","version":1,"field":"day"}`, `"day":19000`), "upsert 1|1641600000000|~|~|~"},
		{"Timestamp", row(`{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"}`, `"at":1700000000000`), "upsert 1|~|1700000000000|~|~"},
		{"Decimal", row(`{"type":"bytes","optional":true,`+decimal+`,"field":"amt"}`, `"amt":"BNI="`), "upsert 1|~|~|12.34|~"},
		{"Decimal into text", row(`{"type":"bytes","optional":true,`+decimal+`,"field":"note"}`, `"note":"BNI="`), "upsert 1|~|~|~|12.34"},
	} {
		if got := show(d.Decode(nil, nil, []byte(c.msg))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// The key of a JSON row (format=json) that Kafka Connect's JsonConverter wrapped with its own
// schema is read by that schema's logical types, as the row is: a tombstone, whose key alone
// names the row to delete, deletes the row its Timestamp and Decimal give. Before, the key's
// milliseconds were read in source.timestamp_unit (microseconds: another key) and its decimal's
// base64 was rejected.
func TestDecodeConnectJSONKeyLogicalTypes(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "at", Type: "timestamp(us)"}, {Name: "amt", Type: "decimal"}, {Name: "v", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	key := func(field, value string) []byte {
		return []byte(`{"schema":{"type":"struct","fields":[` + field + `],"optional":false,"name":"srv.public.t.Key"},"payload":{` + value + `}}`)
	}
	for _, c := range []struct {
		name string
		key  []byte
		want string
	}{
		{"Timestamp", key(`{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"}`, `"at":1700000000000`), "delete 1700000000000|~|~"},
		{"Decimal", key(`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"field":"amt"}`, `"amt":"BNI="`), "delete ~|12.34|~"},
	} {
		if got := show(d.Decode(nil, c.key, nil)); got != c.want {
			t.Errorf("tombstone keyed by a %s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// Rows flattened by Debezium's ExtractNewRecordState (format=json; testdata/debezium-flattened-
// events.jsonl, written by testdata/connectjson/Flatten.java with Debezium's own transform and
// Kafka Connect's JsonConverter). Under delete.tombstone.handling.mode=rewrite a delete is the
// deleted row with "__deleted": "true", and it deletes that row: before, it was written as an
// upsert, so a row deleted at the source stayed in the target. Its "false" rows and the metadata
// add.fields adds (__op, __table) are not columns and change nothing; under the default mode a
// delete is a tombstone.
func TestDecodeFlattenedEvents(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "name", Type: "text"}, {Name: "qty", Type: "int"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"create":           "upsert 1|a|5 set all",
		"create other":     "upsert 2|c|7 set all",
		"update":           "upsert 1|b|~ set all",
		"delete":           "delete 1|b|~ set all",
		"delete tombstone": "delete 1|~|~ set all",
	}
	f, err := os.Open("testdata/debezium-flattened-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct {
			Name, Mode string
			Schemas    bool
			Key, Value json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		var value []byte
		if string(m.Value) != "null" {
			value = m.Value
		}
		w := want[m.Name]
		if m.Name == "delete" && m.Mode == "tombstone" {
			w = want["delete tombstone"]
		}
		if got := showCells(d.Decode(nil, m.Key, value)); got != w {
			t.Errorf("%s (%s, schemas %v):\n got %s\nwant %s", m.Name, m.Mode, m.Schemas, got, w)
		}
		seen++
	}
	if err := sc.Err(); err != nil || seen != 34 {
		t.Fatalf("%d of 34 messages read (%v)", seen, err)
	}
}

// A row Debezium's ExtractNewRecordState flattened and Kafka Connect's JsonConverter wrapped with
// its schema (format=json) keeps a NUMERIC without a scale as Debezium's VariableScaleDecimal, the
// struct of its scale and its unscaled value's base64 (testdata/debezium-connect-json-events.jsonl:
// "vs":{"scale":3,"value":"+y4="}, -1.234). It is read as that number into a decimal, text or
// double column, as in a Debezium event. Before, a decimal or double column rejected the row (a
// JSON object), and a text column held the struct's JSON, {"scale":3,"value":"+y4="}.
func TestDecodeConnectJSONRowVariableScaleDecimal(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "vs", Type: "decimal"},
		{Name: "note", Type: "text"}, {Name: "f", Type: "double"}})
	if err != nil {
		t.Fatal(err)
	}
	vsField := func(field string) string {
		return `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},{"type":"bytes","optional":false,"field":"value"}],` +
			`"optional":true,"name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal","field":"` + field + `"}`
	}
	msg := `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},` + vsField("vs") + `,` + vsField("note") + `,` + vsField("f") + `],` +
		`"optional":false,"name":"srv.public.t.Value"},"payload":{"id":1,"vs":{"scale":3,"value":"+y4="},"note":{"scale":3,"value":"+y4="},"f":{"scale":3,"value":"+y4="}}}`
	if got, want := show(d.Decode(nil, nil, []byte(msg))), "upsert 1|-1.234|-1.234|-1.234"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A message key that is one column's value (keycol=), which Kafka Connect's JsonConverter wrapped
// with its schema, is read by that schema's Decimal as the row's key columns are: an exact
// decimal's base64 (ExtractField$Key of a NUMERIC key, decimal.handling.mode=precise) is the
// number its scale gives. Before, its base64 text was the key: a text key column held "BNI="
// instead of 12.34, and a decimal or bigint one rejected the tombstone, so the row stayed.
func TestDecodeWrappedScalarKeyDecimal(t *testing.T) {
	key := func(scale, payload string) []byte {
		return []byte(`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"` + scale + `"}},"payload":` + payload + `}`)
	}
	for _, c := range []struct {
		typ, scale, want string
	}{
		{"decimal", "2", "12.34"},
		{"text", "2", "12.34"},
		{"bigint", "0", "1234"},
		{"bigint", "-1", "12340"},
	} {
		d, err := NewDecoder(Config{Format: FormatJSON, KeyColumn: "k"}, pipeline.SourceSchema{{Name: "k", Type: c.typ}, {Name: "v", Type: "text"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := show(d.Decode(nil, key(c.scale, `"BNI="`), nil)), "delete "+c.want+"|~"; got != want {
			t.Errorf("%s key, scale %s: got %q, want %q", c.typ, c.scale, got, want)
		}
		// a row whose value lacks the key column takes it from the key the same way
		if got, want := show(d.Decode(nil, key(c.scale, `"BNI="`), []byte(`{"v":"x"}`))), "upsert "+c.want+"|x"; got != want {
			t.Errorf("%s key, scale %s, with a value: got %q, want %q", c.typ, c.scale, got, want)
		}
	}
}

// A Debezium event ExtractNewRecordState flattened into a JSON row (format=json) without its
// schema gives an exact decimal as the base64 of its unscaled value, whose scale only the schema
// says: the reject says so and what to set, as for a Debezium event. Before, it said only that
// "BNI=" is not a decimal number. Text that is no base64 gets no such advice.
func TestDecodeJSONRowBase64DecimalSaysWhatToSet(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "amt", Type: "decimal"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := show(d.Decode(nil, nil, []byte(`{"id":1,"amt":"BNI="}`))); !strings.Contains(got, "value.converter.schemas.enable=true") {
		t.Errorf("base64: %q", got)
	}
	if got := show(d.Decode(nil, nil, []byte(`{"id":1,"amt":"12,5"}`))); !strings.HasPrefix(got, "ERR type:") || strings.Contains(got, "schemas.enable") {
		t.Errorf("not base64: %q", got)
	}
}
