package kafka

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
)

var testSchema = pipeline.SourceSchema{
	{Name: "userid", Type: "text"},
	{Name: "orderid", Type: "bigint"},
	{Name: "ts", Type: "timestamp"},
	{Name: "amount", Type: "decimal"},
}

// show renders changes compactly: "upsert u1|7|1700000000000|1.50" (null as ~), errors as
// "ERR code: message", before images after " before ".
func show(cs []Change) string {
	var parts []string
	vals := func(v []pipeline.Value) string {
		var s []string
		for _, x := range v {
			if x.IsNull() {
				s = append(s, "~")
			} else {
				s = append(s, x.String())
			}
		}
		return strings.Join(s, "|")
	}
	for _, c := range cs {
		if c.Err != nil {
			parts = append(parts, "ERR "+c.Err.Code+": "+c.Err.Message)
			continue
		}
		p := c.Op.String() + " " + vals(c.Values)
		if c.Before != nil {
			p += " before " + vals(c.Before)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name, key, value, want string
		null                   bool
	}{
		{"row", "", `{"userid":"u1","orderid":7,"ts":1700000000000,"amount":"1.50","extra":{"x":1}}`, "upsert u1|7|1700000000000|1.50", false},
		{"missing fields are null", "", `{"userid":"u1"}`, "upsert u1|~|~|~", false},
		{"key fills null fields", `{"userid":"u9","orderid":8}`, `{"userid":"u1","ts":"2023-11-14T22:13:20Z"}`, "upsert u1|8|1700000000000|~", false},
		{"connect wrapping", "", `{"schema":{"type":"struct"},"payload":{"userid":"u2","orderid":3}}`, "upsert u2|3|~|~", false},
		{"tombstone", `{"userid":"u1","orderid":7}`, "", "delete u1|7|~|~", true},
		{"tombstone wrapped key", `{"schema":{},"payload":{"userid":"u1","orderid":7}}`, "", "delete u1|7|~|~", true},
		{"json null is a tombstone", `{"orderid":7}`, "null", "delete ~|7|~|~", false},
		{"tombstone without key", "", "", "ERR parse: tombstone (null value) without a key", true},
		{"tombstone with a plain key", "u1", "", "ERR parse: tombstone (null value) whose key names no source column", true},
		{"bad json", "", `{"userid":"u1",`, "ERR parse: invalid JSON", false},
		{"not an object", "", `[1,2]`, "ERR parse: invalid JSON: expected a JSON object", false},
		{"wrong type", "", `{"userid":"u1","orderid":"x7"}`, `ERR type: invalid bigint "x7"`, false},
		// a Debezium envelope read as plain JSON used to become a row of nulls around the key
		{"debezium read as json", `{"userid":"u1","orderid":7}`, `{"before":null,"after":{"userid":"u1","orderid":7},"op":"c"}`,
			"ERR parse: none of the mapping's columns is in the message (its members: before, after, op): a Debezium change event? read the topic with format=debezium", false},
		{"no column", "", `{"foo":1}`, "ERR parse: none of the mapping's columns is in the message (its members: foo)", false},
		{"a column given as null is a row", `{"userid":"u1","orderid":7}`, `{"ts":null}`, "upsert u1|7|~|~", false},
		{"empty object", `{"userid":"u1","orderid":7}`, `{}`, "upsert u1|7|~|~", false},
	}
	d, err := NewDecoder(Config{Format: FormatJSON}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if !c.null {
			value = []byte(c.value)
		}
		got := show(d.Decode(nil, key, value))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.name, got, c.want)
		}
	}
}

func TestDecodeKeyColumn(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON, KeyColumn: "userid"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"u1":                           "delete u1|~|~|~",
		`"u2"`:                         "delete u2|~|~|~",
		`{"schema":{},"payload":"u3"}`: "delete u3|~|~|~",
	} {
		if got := show(d.Decode(nil, []byte(key), nil)); got != want {
			t.Errorf("key %s: got %q, want %q", key, got, want)
		}
	}
	if got := show(d.Decode(nil, []byte("u5"), []byte(`{"orderid":1}`))); got != "upsert u5|1|~|~" {
		t.Errorf("plain key fills the value: %q", got)
	}
	if _, err := NewDecoder(Config{KeyColumn: "nope"}, testSchema); err == nil {
		t.Error("unknown keycol accepted")
	}
}

func TestDecodeDebezium(t *testing.T) {
	schema := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"string","field":"userid"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"ts"}],"field":"before"},{"type":"struct","fields":[{"type":"string","field":"userid"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"ts"}],"field":"after"}]}`
	cases := []struct {
		name, key, value, want string
		null                   bool
	}{
		{"create", "", `{"before":null,"after":{"userid":"u1","orderid":1,"ts":1700000000000},"op":"c","ts_ms":1}`, "upsert u1|1|1700000000000|~", false},
		{"snapshot read", "", `{"after":{"userid":"u1","orderid":1},"op":"r"}`, "upsert u1|1|~|~", false},
		{"update", "", `{"before":{"userid":"u1","orderid":1},"after":{"userid":"u2","orderid":1},"op":"u"}`, "upsert u2|1|~|~ before u1|1|~|~", false},
		{"update without before", "", `{"before":null,"after":{"userid":"u2","orderid":1},"op":"u"}`, "upsert u2|1|~|~ before ~|~|~|~", false},
		{"update without before: the message key's columns", `{"orderid":1}`, `{"before":null,"after":{"userid":"u2","orderid":1},"op":"u","source":{"connector":"postgresql"}}`, "upsert u2|1|~|~ before ~|1|~|~", false},
		{"delete", "", `{"before":{"userid":"u1","orderid":1,"amount":"2"},"after":null,"op":"d"}`, "delete u1|1|~|2", false},
		{"delete from key", `{"userid":"u1","orderid":1}`, `{"before":null,"after":null,"op":"d"}`, "delete u1|1|~|~", false},
		{"tombstone", `{"userid":"u1","orderid":1}`, "", "delete u1|1|~|~", true},
		{"wrapped", "", `{"schema":` + schema + `,"payload":{"before":null,"after":{"userid":"u3","orderid":2,"ts":1700000000000000},"op":"c"}}`, "upsert u3|2|1700000000000|~", false},
		// before, MicroTimestamp 1700000000000123 was rounded down to the millisecond
		{"wrapped sub-millisecond", "", `{"schema":` + schema + `,"payload":{"before":null,"after":{"userid":"u3","orderid":2,"ts":1700000000000123},"op":"c"}}`, `ERR type: invalid timestamp "1700000000000123" (epoch microseconds): it has sub-millisecond digits`, false},
		{"wrapped tombstone", `{"userid":"u1","orderid":1}`, `{"schema":null,"payload":null}`, "delete u1|1|~|~", false},
		{"cassandra insert", "", `{"after":{"userid":{"value":"u4","deletion_ts":null,"set":true},"orderid":{"value":5,"deletion_ts":null,"set":true}},"op":"i","ts_ms":1}`, "upsert u4|5|~|~", false},
		{"cassandra delete", "", `{"after":{"userid":{"value":"u4","deletion_ts":1,"set":true},"orderid":{"value":5,"deletion_ts":1,"set":true}},"op":"d"}`, "delete u4|5|~|~", false},
		// a truncate's advice must not be to empty the table, which would also remove the rows
		// replicated after it: verify lists the rows the truncate removed
		{"truncate", "", `{"op":"t","source":{}}`, "ERR unsupported: Debezium truncate event (op t) is not replicated: the table keeps the rows the truncate removed at the source. Do not empty the table, which would also remove the rows replicated since: once replicate has caught up, `rekey verify --repair FILE` against the source (or an export of it as a file) lists the rows the source no longer has in FILE.extra-keys, to delete", false},
		{"logical decoding message", "", `{"op":"m","source":{}}`, "ERR unsupported: Debezium logical decoding message event (op m) is not replicated: it changes no row", false},
		{"no op", "", `{"userid":"u1"}`, "ERR parse: not a Debezium change event", false},
		{"unknown op", "", `{"op":"x","after":{}}`, `ERR parse: unknown Debezium op "x"`, false},
		{"create without after", "", `{"op":"c","after":null}`, "ERR parse: op c without an \"after\" row", false},
		{"bad type", "", `{"op":"c","after":{"orderid":true}}`, "ERR type:", false},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if !c.null {
			value = []byte(c.value)
		}
		got := show(d.Decode(nil, key, value))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.name, got, c.want)
		}
	}
}

// Invalid UTF-8 in a Kafka JSON message is a reject: before, it reached a Parquet STRING column and
// made the file unreadable.
func TestDecodeEncoding(t *testing.T) {
	cases := []struct {
		name, format, keycol string
		schema               pipeline.SourceSchema
		key, value, want     string
	}{
		{"invalid UTF-8", FormatJSON, "", testSchema, "", "{\"userid\":\"DELIV\xff\xfeERED\",\"orderid\":1}", "ERR encoding: invalid UTF-8 byte 0xff at byte 5"},
		{"lone surrogate", FormatJSON, "", testSchema, "", `{"userid":"\udc80","orderid":1}`, "ERR encoding: lone UTF-16 surrogate \\udc80"},
		{"surrogate pair", FormatJSON, "", testSchema, "", `{"userid":"\ud83d\ude00","orderid":1}`, "upsert 😀|1|~|~"},
		{"invalid UTF-8 in a plain key", FormatJSON, "userid", testSchema, "u\xff", "", "ERR encoding: message key: invalid UTF-8 byte 0xff at byte 1"},
		{"invalid UTF-8 in debezium", FormatDebezium, "", testSchema, "", "{\"op\":\"c\",\"after\":{\"userid\":\"\xc3\",\"orderid\":1}}", "ERR encoding:"},
	}
	for _, c := range cases {
		d, err := NewDecoder(Config{Format: c.format, KeyColumn: c.keycol}, c.schema)
		if err != nil {
			t.Fatal(err)
		}
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if c.value != "" {
			value = []byte(c.value)
		}
		cs := d.Decode(nil, key, value)
		got := show(cs)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.name, got, c.want)
		}
		if len(cs) == 1 && cs[0].Err != nil && cs[0].Err.Code == pipeline.CodeEncoding && cs[0].Err.Field != "userid" {
			t.Errorf("%s: field %q, want userid", c.name, cs[0].Err.Field)
		}
	}
}

// Epoch units are read as declared: before, epoch seconds were read as milliseconds, and Debezium's
// micro- and nanosecond timestamps were rounded down to the millisecond.
func TestDecodeTimestampUnits(t *testing.T) {
	units := pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"},
		{Name: "ts", Type: "timestamp(s)"}, {Name: "amount", Type: "decimal"}}
	nano := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","name":"io.debezium.time.NanoTimestamp","field":"ts"}],"field":"after"}]}`
	cases := []struct {
		name, format, keycol string
		schema               pipeline.SourceSchema
		key, value, want     string
	}{
		{"epoch seconds without a unit", FormatJSON, "", testSchema, "", `{"userid":"u","ts":1700000000}`, "ERR type: invalid timestamp \"1700000000\": it looks like epoch seconds"},
		{"epoch seconds with timestamp_unit s", FormatJSON, "", units, "", `{"userid":"u","ts":1700000000}`, "upsert u|~|1700000000000|~"},
		{"ISO text with timestamp_unit s", FormatJSON, "", units, "", `{"userid":"u","ts":"2023-11-14T22:13:20.5Z"}`, "upsert u|~|1700000000500|~"},
		{"nanoseconds, whole ms", FormatDebezium, "", testSchema, "", `{"schema":` + nano + `,"payload":{"op":"c","after":{"userid":"u","ts":1700000000123000000}}}`, "upsert u|~|1700000000123|~"},
		{"nanoseconds below the ms", FormatDebezium, "", testSchema, "", `{"schema":` + nano + `,"payload":{"op":"c","after":{"userid":"u","ts":1700000000123000001}}}`, "ERR type: invalid timestamp \"1700000000123000001\" (epoch nanoseconds): it has sub-millisecond digits"},
		{"the envelope's unit wins over the mapping's", FormatDebezium, "", units, "", `{"schema":` + nano + `,"payload":{"op":"c","after":{"userid":"u","ts":1700000000123000000}}}`, "upsert u|~|1700000000123|~"},
		{"a quoted epoch in a NanoTimestamp field", FormatDebezium, "", units, "", `{"schema":` + nano + `,"payload":{"op":"c","after":{"userid":"u","ts":"1700000000123000000"}}}`, "upsert u|~|1700000000123|~"},
		{"ISO text in a NanoTimestamp field", FormatDebezium, "", testSchema, "", `{"schema":` + nano + `,"payload":{"op":"c","after":{"userid":"u","ts":"2023-11-14T22:13:20.123Z"}}}`, "upsert u|~|1700000000123|~"},
	}
	for _, c := range cases {
		d, err := NewDecoder(Config{Format: c.format, KeyColumn: c.keycol}, c.schema)
		if err != nil {
			t.Fatal(err)
		}
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if c.value != "" {
			value = []byte(c.value)
		}
		got := show(d.Decode(nil, key, value))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.name, got, c.want)
		}
	}
}

func TestDecodeSlabReuse(t *testing.T) {
	d, _ := NewDecoder(Config{}, testSchema)
	var cs []Change
	for i := 0; i < 10000; i++ {
		cs = d.Decode(cs, nil, []byte(`{"userid":"u","orderid":1}`))
	}
	for i, c := range cs {
		if c.Values[1].Num != 1 || c.Values[0].Str != "u" {
			t.Fatalf("change %d corrupted: %v", i, c.Values)
		}
	}
	d.Reset()
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"userid":"u1","orderid":7}`), []byte(`{"op":"c","after":{"userid":"a"}}`))
	f.Add([]byte(``), []byte(`{"schema":{},"payload":{"before":{"userid":{"value":1}},"op":"u","after":{}}}`))
	dj, _ := NewDecoder(Config{Format: FormatJSON, KeyColumn: "userid"}, testSchema)
	dd, _ := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		for _, d := range []*Decoder{dj, dd} {
			for _, c := range d.Decode(nil, key, value) {
				if (c.Err == nil) == (c.Op == 0) {
					t.Fatalf("change has op %v and err %v", c.Op, c.Err)
				}
			}
			d.Reset()
		}
	})
}

func BenchmarkDecodeJSON(b *testing.B) {
	schema := pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "channel", Type: "text"},
		{Name: "ts", Type: "timestamp"}, {Name: "status", Type: "text"}, {Name: "location", Type: "text"}, {Name: "amount", Type: "decimal"}}
	d, _ := NewDecoder(Config{}, schema)
	v := []byte(`{"userid":"user0012345","orderid":1000001234,"channel":"taobao","ts":"2024-05-01T10:00:00.123Z","status":"paid","location":"city-123","amount":"123.45"}`)
	k := []byte("user0012345")
	b.ReportAllocs()
	var cs []Change
	for i := 0; i < b.N; i++ {
		cs = d.Decode(cs[:0], k, v)
		if i%1024 == 0 {
			d.Reset()
		}
	}
}

// The Cassandra connector's events carry the cells a mutation wrote (CassandraSchemaFactory.java:
// CellData.record {"value", "deletion_ts", "set"}; RangeData {"method", "values": [{"name",
// "value", "type"}]}): the change says which columns it sets, with or without the JSON
// converter's wrapping; a relational event stays a whole row.
func TestDecodeCassandraSetColumns(t *testing.T) {
	c := func(v string) string { return `{"value":` + v + `,"deletion_ts":null,"set":true}` }
	src := `"source":{"connector":"cassandra","keyspace":"ks","table":"orders"}`
	cases := []struct {
		name, value, want string
	}{
		{"update of one column", `{"op":"u",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `,"amount":` + c(`"2.5"`) + `}}`, "upsert u1|1|~|2.5 set 1101"},
		{"cell deleted", `{"op":"u",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `,"ts":{"value":null,"deletion_ts":1700000000000000,"set":true}}}`, "upsert u1|1|~|~ set 1110"},
		{"insert of every column", `{"op":"i","after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `,"ts":` + c(`"2024-05-01T10:00:00Z"`) + `,"amount":` + c(`"1"`) + `}}`, "upsert u1|1|1714557600000|1 set all"},
		{"insert of some columns", `{"op":"i","after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `}}`, "upsert u1|1|~|~ set 1100"},
		{"wrapped", `{"schema":{"type":"struct","name":"ks.orders.Envelope"},"payload":{"op":"u",` + src + `,"after":{"userid":` + c(`"u2"`) + `,"orderid":` + c(`2`) + `}}}`, "upsert u2|2|~|~ set 1100"},
		{"relational update", `{"op":"u","source":{"connector":"mysql"},"after":{"userid":"u1","orderid":1,"ts":null,"amount":null}}`, "upsert u1|1|~|~ before ~|~|~|~ set all"},
		{"relational snapshot read", `{"op":"r","source":{"connector":"postgresql"},"after":{"userid":"u1","orderid":1,"ts":null,"amount":null}}`, "upsert u1|1|~|~ set all"},
		{"range tombstone", `{"op":"r",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"_range_start":{"method":"EXCL_START_BOUND","values":[{"name":"orderid","value":"3","type":"org.apache.cassandra.db.marshal.LongType"}]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`,
			"range delete u1|~|~|~ set 1000 start [3] excl end [] incl"},
		{"range tombstone of an unknown column", `{"op":"r",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"_range_start":{"method":"INCL_START_BOUND","values":[{"name":"x","value":"3","type":"t"}]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`,
			`ERR parse: the range bound names clustering column "x"`},
		// a column added to the table after the mapping was written: its cells were dropped
		// without a trace; the event is rejected, naming the column and what to do
		{"cell of a column the mapping lacks", `{"op":"u",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `,"coupon":` + c(`"X1"`) + `}}`,
			`ERR unknown_column: the event writes column "coupon", which the mapping's source.columns does not declare`},
		{"insert with a column the mapping lacks", `{"op":"i","after":{"userid":` + c(`"u1"`) + `,"orderid":` + c(`1`) + `,"coupon":` + c(`"X1"`) + `}}`,
			`ERR unknown_column: the event writes column "coupon"`},
		{"range tombstone of an unknown kind", `{"op":"r",` + src + `,"after":{"userid":` + c(`"u1"`) + `,"_range_start":{"method":"TOP","values":[]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`,
			`ERR parse: unknown range bound kind "TOP"`},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		got := showCells(d.Decode(nil, nil, []byte(tc.value)))
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q, want prefix %q", tc.name, got, tc.want)
		}
	}
}

// showCells is show of one change with the cells it sets ("set 1101": Set by column, "set all":
// a whole row) and a range delete's bounds.
func showCells(cs []Change) string {
	got := show(cs)
	if len(cs) == 1 && cs[0].Err == nil {
		mask := "all"
		if cs[0].Set != nil {
			mask = ""
			for _, s := range cs[0].Set {
				mask += map[bool]string{true: "1", false: "0"}[s]
			}
		}
		got += " set " + mask
		if r := cs[0].Range; r != nil {
			incl := map[bool]string{true: "incl", false: "excl"}
			got += fmt.Sprintf(" start %v %s end %v %s", valStrings(r.Start.Vals), incl[r.Start.Inclusive], valStrings(r.End.Vals), incl[r.End.Inclusive])
		}
	}
	return got
}

func valStrings(vs []pipeline.Value) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

// A relational connector's event is a whole row even when a JSON column's value looks like a
// Cassandra cell and the event lacks a column of the mapping.
func TestDecodeRelationalCellLookalike(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "doc", Type: "text"}, {Name: "n", Type: "int"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := d.Decode(nil, nil, []byte(`{"op":"u","source":{"connector":"postgresql"},"after":{"userid":"u1","doc":{"value":"x","set":true},"n":null}}`))
	if len(cs) != 1 || cs[0].Err != nil || cs[0].Set != nil {
		t.Errorf("got %s, set %v: want a whole row", show(cs), cs[0].Set)
	}
	// nor is its JSON column that the mapping leaves out taken for a Cassandra cell
	cs = d.Decode(nil, nil, []byte(`{"op":"u","source":{"connector":"postgresql"},"after":{"userid":"u1","meta":{"value":"x","set":true}}}`))
	if len(cs) != 1 || cs[0].Err != nil {
		t.Errorf("got %s: want a row", show(cs))
	}
}

// A key column of io.debezium.time.MicroTimestamp is read in microseconds from the message key
// too: the key's own schema (the JSON converter wraps keys as values) names its unit, and an
// unwrapped key's columns take the units of the value's envelope schema. Before, the key was read
// in milliseconds, so the tombstone Debezium sends after every delete of such a row, and a delete
// event without a before image, were rejected as invalid timestamps.
func TestDecodeDebeziumKeyTimestampUnits(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "ts", Type: "timestamp"}, {Name: "v", Type: "text"}}
	img := `{"type":"struct","fields":[{"type":"int64","field":"id"},{"type":"int64","name":"io.debezium.time.MicroTimestamp","field":"ts"},{"type":"string","field":"v"}],"field":"%s"}`
	vs := `{"type":"struct","fields":[` + fmt.Sprintf(img, "before") + `,` + fmt.Sprintf(img, "after") + `]}`
	ks := `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"int64","optional":false,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"ts"}],"optional":false,"name":"db.s.t.Key"}`
	wrappedKey := `{"schema":` + ks + `,"payload":{"id":1,"ts":1700000000123000}}`
	plainKey := `{"id":1,"ts":1700000000123000}`
	cases := []struct{ name, key, value, want string }{
		{"delete", wrappedKey, `{"schema":` + vs + `,"payload":{"op":"d","before":{"id":1,"ts":1700000000123000,"v":"x"},"after":null}}`, "delete 1|1700000000123|x"},
		{"its tombstone", wrappedKey, "", "delete 1|1700000000123|~"},
		{"a delete without before", wrappedKey, `{"schema":` + vs + `,"payload":{"op":"d","before":null,"after":null}}`, "delete 1|1700000000123|~"},
		{"a wrapped tombstone", wrappedKey, `{"schema":null,"payload":null}`, "delete 1|1700000000123|~"},
		{"an unwrapped key after wrapped values", plainKey, "", "delete 1|1700000000123|~"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var value []byte
		if c.value != "" {
			value = []byte(c.value)
		}
		if got := show(d.Decode(nil, []byte(c.key), value)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// A value Debezium did not get from the database (an unchanged TOASTed column of a PostgreSQL
// UPDATE, an unchanged Oracle LOB) comes as its placeholder, __debezium_unavailable_value (a
// bytes column's as its base64, an array's as its one element): the column is not set by the
// change, which a table applies to the other columns and files refuse. Before, the placeholder
// was written over the column's value.
func TestDecodeDebeziumUnavailableValue(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "body", Type: "text"}, {Name: "pic", Type: "blob"},
		{Name: "tags", Type: "list<text>"}, {Name: "n", Type: "int"}}
	src := `"source":{"connector":"postgresql","ts_ms":1}`
	cases := []struct{ name, key, value, want string }{
		{"update of n", `{"id":1}`, `{"op":"u",` + src + `,"before":null,"after":{"id":1,"body":"__debezium_unavailable_value","pic":"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==","tags":["__debezium_unavailable_value"],"n":7}}`, "upsert 1|~|~|~|7 before 1|~|~|~|~ set 10001"},
		{"update setting body to null", `{"id":1}`, `{"op":"u",` + src + `,"before":null,"after":{"id":1,"body":null,"pic":"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==","tags":null,"n":7}}`, "upsert 1|~|~|~|7 before 1|~|~|~|~ set 11011"},
		{"whole row", `{"id":1}`, `{"op":"u",` + src + `,"before":null,"after":{"id":1,"body":"b","pic":null,"tags":["t"],"n":7}}`, `upsert 1|b|~|["t"]|7 before 1|~|~|~|~ set all`},
		{"key from the message key", `{"id":1}`, `{"op":"u",` + src + `,"before":null,"after":{"id":"__debezium_unavailable_value","body":"b","pic":null,"tags":null,"n":7}}`, "upsert 1|b|~|~|7 before 1|~|~|~|~ set all"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := showCells(d.Decode(nil, []byte(c.key), []byte(c.value))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// Debezium's exact decimals (decimal.handling.mode=precise, its default for relational
// connectors) are bytes: the unscaled value, big-endian two's complement, base64 in JSON, with
// the scale in the envelope schema (org.apache.kafka.connect.data.Decimal) or beside the value
// (io.debezium.data.VariableScaleDecimal {"scale", "value"}: a NUMERIC without a scale, a
// Cassandra decimal). They are read exactly; before, every event holding one was rejected.
func TestDecodeDebeziumDecimals(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "amt", Type: "decimal"}, {Name: "big", Type: "varint"}, {Name: "note", Type: "text"}}
	env := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","field":"id"},` +
		`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"30"},"field":"amt"},` +
		`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0"},"field":"big"},` +
		`{"type":"string","field":"note"}],"field":"after"}]}`
	wrap := func(after string) string { return `{"schema":` + env + `,"payload":{"op":"c","after":` + after + `}}` }
	cases := []struct{ name, value, want string }{
		{"scale 2", wrap(`{"id":1,"amt":"BNI=","big":"AA==","note":"BNI="}`), "upsert 1|12.34|0|BNI="},
		{"negative", wrap(`{"id":1,"amt":"+y4=","big":"gA=="}`), "upsert 1|-12.34|-128|~"},
		{"beyond 64 bits", wrap(`{"id":1,"amt":"Qu0SOwvYIDoU","big":"Qu0SOwvYIDoU"}`), "upsert 1|12345678901234567890.12|1234567890123456789012|~"},
		{"below one", wrap(`{"id":1,"amt":"BQ==","big":null}`), "upsert 1|0.05|~|~"},
		{"variable scale", `{"op":"c","after":{"id":1,"amt":{"scale":3,"value":"+y4="}}}`, "upsert 1|-1.234|~|~"},
		{"variable scale in a Cassandra cell", `{"op":"i","after":{"id":{"value":1,"deletion_ts":null,"set":true},"amt":{"value":{"scale":0,"value":"BNI="},"deletion_ts":null,"set":true}}}`, "upsert 1|1234|~|~"},
		{"not base64", wrap(`{"id":1,"amt":"B*I="}`), "ERR type:"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := show(d.Decode(nil, nil, []byte(c.value))); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// A BATCH that deletes a clustering range and writes a row in it at a newer timestamp: the
// connector 3.4.1.Final publishes the row first, then the range delete, at one commit log
// position (captured from Cassandra 5.0). The range delete names the newest write of its
// mutation published before it; one of another position, or written at its own timestamp
// (Cassandra publishes the range alone then), names none.
func TestCassandraRangeDeleteAfterANewerWriteOfItsMutation(t *testing.T) {
	src := func(us, pos int64) string {
		return fmt.Sprintf(`"source":{"version":"3.4.1.Final","connector":"cassandra","name":"rekey","ts_ms":%d,"snapshot":"false","db":"NULL","sequence":null,"ts_us":%d,"ts_ns":%d,"cluster":"rekey-peers","file":"CommitLog-7-1796381232172.log","pos":%d,"keyspace":"ks","table":"t"}`, us/1000, us, us*1000, pos)
	}
	row := func(us, pos int64, p, c int) (key, value string) {
		return fmt.Sprintf(`{"p":%d,"c":%d}`, p, c), fmt.Sprintf(`{"ts_ms":1796382723293,"op":"i",%s,"after":{"p":{"value":%d,"deletion_ts":null,"set":true},"c":{"value":%d,"deletion_ts":null,"set":true},"v":{"value":"n","deletion_ts":null,"set":true},"_range_start":null,"_range_end":null}}`, src(us, pos), p, c)
	}
	rng := func(us, pos int64, p int) (key, value string) {
		return fmt.Sprintf(`{"p":%d,"c":null}`, p), fmt.Sprintf(`{"ts_ms":1796382723293,"op":"r",%s,"after":{"p":{"value":%d,"deletion_ts":null,"set":true},"c":null,"v":null,"_range_start":{"method":"EXCL_START_BOUND","values":[{"name":"c","value":"1","type":"org.apache.cassandra.db.marshal.Int32Type"}]},"_range_end":{"method":"INCL_END_BOUND","values":[]}}}`, src(us, pos), p)
	}
	for _, tc := range []struct {
		name   string
		events [][2]string
		want   int64
	}{
		{"newer row first, one position", [][2]string{pair(row(1796382000001000, 669225, 3, 5)), pair(rng(1796382000000000, 669225, 3))}, 1796382000001},
		{"newer by 1 µs", [][2]string{pair(row(1796382000000001, 669225, 3, 5)), pair(rng(1796382000000000, 669225, 3))}, 1796382000000},
		{"the row of another mutation", [][2]string{pair(row(1796382000001000, 669000, 3, 5)), pair(rng(1796382000000000, 669225, 3))}, 0},
		{"the row older", [][2]string{pair(row(1796381000000000, 669225, 3, 5)), pair(rng(1796382000000000, 669225, 3))}, 0},
		{"the range alone", [][2]string{pair(rng(1796382000000000, 669225, 3))}, 0},
		{"no positions", [][2]string{pair(noPos(row(1796382000001000, 669225, 3, 5))), pair(noPos(rng(1796382000000000, 669225, 3)))}, 0},
		{"the newer row's event rejected", [][2]string{unknownCell(row(1796382000001000, 669225, 3, 5)), pair(rng(1796382000000000, 669225, 3))}, 1796382000001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "p", Type: "int"}, {Name: "c", Type: "int"}, {Name: "v", Type: "text"}})
			if err != nil {
				t.Fatal(err)
			}
			var chs []Change
			for _, ev := range tc.events {
				chs = d.Decode(chs, []byte(ev[0]), []byte(ev[1]))
			}
			last := chs[len(chs)-1]
			if last.Err != nil || last.Op != OpRangeDelete {
				t.Fatalf("the range delete decodes to %s", show(chs))
			}
			if last.AfterNewerWrite != tc.want {
				t.Errorf("AfterNewerWrite %d, want %d", last.AfterNewerWrite, tc.want)
			}
		})
	}
}

func pair(a, b string) [2]string { return [2]string{a, b} }

// noPos leaves out an event's commit log position.
func noPos(key, value string) (string, string) {
	return key, regexp.MustCompile(`,"file":"[^"]*","pos":\d+`).ReplaceAllString(value, "")
}

// unknownCell adds to an event a cell of a column the mapping lacks (rejected, unknown_column).
func unknownCell(key, value string) [2]string {
	return [2]string{key, strings.Replace(value, `"after":{`, `"after":{"x":{"value":1,"deletion_ts":null,"set":true},`, 1)}
}

// A Cassandra delete event's write time is its deletion's (its cells' deletion_ts), not the
// event's source.ts_us: in a BATCH that deletes a partition and writes a row of it 5 ms later,
// the connector 3.4.1.Final gives the partition delete the row's time (captured from Cassandra
// 5.0). Written at that time into a table with cell timestamps, the delete would hide the row
// the BATCH wrote, which Cassandra keeps.
func TestCassandraDeleteWriteTimeIsItsDeletion(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "p", Type: "int"}, {Name: "c", Type: "int"}, {Name: "v", Type: "text"}, {Name: "s", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	src := func(us int64) string {
		return fmt.Sprintf(`"source":{"version":"3.4.1.Final","connector":"cassandra","name":"rekey","ts_ms":%d,"snapshot":"false","db":"NULL","sequence":null,"ts_us":%d,"ts_ns":%d,"cluster":"rekey-peers","file":"CommitLog-7-1796381232172.log","pos":1164568,"keyspace":"ks","table":"t"}`, us/1000, us, us*1000)
	}
	for _, tc := range []struct{ name, key, value string }{
		{"partition delete", `{"p":2,"c":null}`, `{"ts_ms":1796383283174,"op":"d",` + src(1796382000005000) + `,"after":{"p":{"value":2,"deletion_ts":null,"set":true},"c":{"value":null,"deletion_ts":1796382000000000,"set":true},"v":{"value":null,"deletion_ts":1796382000000000,"set":true},"s":{"value":null,"deletion_ts":1796382000000000,"set":true},"_range_start":null,"_range_end":null}}`},
		{"row delete", `{"p":4,"c":1}`, `{"ts_ms":1796383283174,"op":"d",` + src(1796382000000000) + `,"after":{"p":{"value":4,"deletion_ts":null,"set":true},"c":{"value":1,"deletion_ts":null,"set":true},"v":{"value":null,"deletion_ts":1796382000000000,"set":true},"s":{"value":null,"deletion_ts":1796382000000000,"set":true},"_range_start":null,"_range_end":null}}`},
	} {
		chs := d.Decode(nil, []byte(tc.key), []byte(tc.value))
		if len(chs) != 1 || chs[0].Err != nil || chs[0].Op != OpDelete {
			t.Fatalf("%s: decodes to %s", tc.name, show(chs))
		}
		if chs[0].WriteTime != 1796382000000 {
			t.Errorf("%s: write time %d, want the deletion's 1796382000000", tc.name, chs[0].WriteTime)
		}
	}
}

// A JSON row's member that names a column only ignoring case ("userId" for userid: Cassandra folds
// unquoted names to lower case, producers write camelCase) is read as that column, as CSV headers
// are, and the logger is told once; a member of the exact name, even null, wins. Before, the column
// was null in every such row, silently. Debezium's events name the table's exact columns (a quoted
// "UserId" is another Cassandra column): they are not read ignoring case.
func TestDecodeJSONMembersIgnoringCase(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	d, err := NewDecoder(Config{Format: FormatJSON}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	d.Logger = zap.New(core)
	// the decoder's first member read ignoring case: the row is read again, and its exact member wins
	if got := show(d.Decode(nil, nil, []byte(`{"userid":null,"orderid":1,"UserId":"x"}`))); got != "upsert ~|1|~|~" {
		t.Errorf("the first row with a member read ignoring case: got %q, want the exact member's null", got)
	}
	for value, want := range map[string]string{
		`{"userId":"u1","orderid":7,"AMOUNT":"1.50"}`:         "upsert u1|7|~|1.50",
		`{"userid":null,"userId":"u2","orderid":7}`:           "upsert ~|7|~|~",
		`{"UserID":"u3","orderid":7,"userid":"exact"}`:        "upsert exact|7|~|~",
		`{"schema":{},"payload":{"USERID":"u4","orderid":8}}`: "upsert u4|8|~|~",
	} {
		if got := show(d.Decode(nil, nil, []byte(value))); got != want {
			t.Errorf("%s: got %q, want %q", value, got, want)
		}
	}
	var warned []string
	for _, e := range logs.All() {
		warned = append(warned, fmt.Sprint(e.ContextMap()["member"], "->", e.ContextMap()["column"]))
	}
	slices.Sort(warned)
	if want := []string{"AMOUNT->amount", "USERID->userid", "userId->userid"}; !slices.Equal(warned, want) {
		t.Errorf("warnings %v, want one per member name read ignoring case: %v", warned, want)
	}

	dbz, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	got := show(dbz.Decode(nil, nil, []byte(`{"before":null,"after":{"UserId":"u1","userid":null,"orderid":7},"op":"c"}`)))
	if got != "upsert ~|7|~|~" {
		t.Errorf("a Debezium event's member read ignoring case: %q", got)
	}
}

// A Debezium event's blob is base64, as Kafka Connect's JSON converter writes bytes, also when the
// base64 begins with "0x" (d3 1d 35 is "0x01"), which the sources' blob text takes for hex.
func TestDecodeDebeziumBlobs(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "p", Type: "int"}, {Name: "b", Type: "blob"}})
	if err != nil {
		t.Fatal(err)
	}
	for b64, want := range map[string]string{
		`"0x01"`:     "\xd3\x1d\x35",
		`"0x01Qg=="`: "\xd3\x1d\x35\x42",
		`"AP8Q"`:     "\x00\xff\x10",
		`""`:         "",
		`{"value":"0x01","deletion_ts":null,"set":true}`: "\xd3\x1d\x35", // a Cassandra cell
	} {
		ch := d.Decode(nil, nil, []byte(`{"after":{"p":1,"b":`+b64+`},"op":"c"}`))
		if len(ch) != 1 || ch[0].Err != nil || ch[0].Values[1].Kind != pipeline.KindBytes || ch[0].Values[1].Str != want {
			t.Errorf("blob %s: %+v, want the bytes %x", b64, ch, want)
		}
	}
	if ch := d.Decode(nil, nil, []byte(`{"after":{"p":1,"b":"0x0"},"op":"c"}`)); len(ch) != 1 || ch[0].Err == nil || ch[0].Err.Field != "b" {
		t.Errorf("a blob that is no base64: %+v, want a reject naming b", ch)
	}
}

// A relational connector's value that is a JSON object is the column's value, even when its
// members look like a Cassandra cell's: PostgreSQL's hstore with hstore.handling.mode=map is a
// Connect MAP of strings (debezium-connector-postgres PostgresValueConverter.hstoreSchema), which
// Kafka Connect's JsonConverter writes as a JSON object (connect/json JsonConverter.convertToJson,
// case MAP with string keys), so hstore 'value=>x' is {"value":"x"}. Before, it was unwrapped as a
// Cassandra cell: a text column got "x", a map column was rejected.
func TestDecodeRelationalObjectIsNotACassandraCell(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "attrs", Type: "text"}, {Name: "tags", Type: "map<text, text>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, connector := range []string{"postgresql", "mysql", "oracle", "sqlserver"} {
		for _, op := range []string{"c", "r", "u"} {
			value := `{"op":"` + op + `","source":{"connector":"` + connector + `"},"after":{"id":1,"attrs":{"value":"x"},"tags":{"value":"x","set":"y"}}}`
			got := show(d.Decode(nil, nil, []byte(value)))
			if want := `upsert 1|{"value":"x"}|{"set":"y","value":"x"}`; !strings.HasPrefix(got, want) {
				t.Errorf("%s op %s: got %s, want %s", connector, op, got, want)
			}
		}
		value := `{"op":"d","source":{"connector":"` + connector + `"},"before":{"id":1,"attrs":{"value":"x"},"tags":null},"after":null}`
		if got, want := show(d.Decode(nil, nil, []byte(value))), `delete 1|{"value":"x"}|~`; got != want {
			t.Errorf("%s op d: got %s, want %s", connector, got, want)
		}
	}
}

// An exact decimal (decimal.handling.mode=precise: Debezium's SpecialValueDecimal.builder gives
// the column org.apache.kafka.connect.data.Decimal, whose scale is a schema parameter, and Kafka
// Connect's JsonConverter writes its unscaled value as base64 bytes) is read as its number into
// every column the mapping may declare for it, not only decimal and varint: a NUMERIC(10,0)
// declared bigint, a NUMERIC declared text or double. Before, the base64 text was read as the
// column's value: "1234" (the bytes d7 6d f8, -2658824) as the number 1234, "BNI=" (12.34) as
// that text.
func TestDecodeDebeziumDecimalsIntoOtherTypes(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "n", Type: "bigint"}, {Name: "s", Type: "text"}, {Name: "f", Type: "double"}}
	dec := func(field, scale string) string {
		return `{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"` + scale + `","connect.decimal.precision":"10"},"field":"` + field + `"}`
	}
	env := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","field":"id"},` + dec("n", "0") + `,` + dec("s", "2") + `,` + dec("f", "2") + `],"field":"after"}]}`
	wrap := func(after string) string { return `{"schema":` + env + `,"payload":{"op":"c","after":` + after + `}}` }
	cases := []struct{ name, value, want string }{
		{"digits that are base64", wrap(`{"id":1,"n":"1234"}`), "upsert 1|-2658824|~|~"},
		{"text and double", wrap(`{"id":1,"n":"AA==","s":"BNI=","f":"BNI="}`), "upsert 1|0|12.34|12.34"},
		{"negative", wrap(`{"id":1,"n":"gA==","s":"+y4=","f":"+y4="}`), "upsert 1|-128|-12.34|-12.34"},
		{"a scale an integer cannot hold", `{"schema":` + strings.Replace(env, `"scale":"0"`, `"scale":"1"`, 1) + `,"payload":{"op":"c","after":{"id":1,"n":"BNI="}}}`, "ERR type:"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := show(d.Decode(nil, nil, []byte(c.value))); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// The envelope schema's unit of a timestamp column wins over the mapping's for every Debezium
// temporal type that is a count from the epoch: io.debezium.time.Date and Kafka Connect's
// org.apache.kafka.connect.data.Date (time.precision.mode=connect) are days (int32,
// debezium-connector-common io/debezium/time/Date.java toEpochDay; JsonConverter writes Connect's
// Date as its int days), org.apache.kafka.connect.data.Timestamp milliseconds (int64, as
// io.debezium.time.Timestamp: jdbc/TemporalPrecisionMode.java CONNECT). Before, a DATE declared
// timestamp read its days in the mapping's unit (19724, 2024-01-02, as 1970-01-01T00:00:19.724Z
// with timestamp_unit: ms; without a unit, rejected with the advice to set s), and a Connect
// Timestamp in a timestamp(us) column was read as microseconds (2024 as 1970-01-20).
func TestDecodeDebeziumDaysAndConnectTimestamps(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "d", Type: "timestamp"}, {Name: "cd", Type: "timestamp(ms)"}, {Name: "ct", Type: "timestamp(us)"}, {Name: "day", Type: "date"}}
	img := `{"type":"struct","fields":[{"type":"int64","field":"id"},` +
		`{"type":"int32","name":"io.debezium.time.Date","version":1,"field":"d"},` +
		`{"type":"int32","name":"org.apache.kafka.connect.data.Date","version":1,"field":"cd"},` +
		`{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"ct"},` +
		`{"type":"int32","name":"io.debezium.time.Date","version":1,"field":"day"}],"field":"%s"}`
	env := `{"type":"struct","fields":[` + fmt.Sprintf(img, "before") + `,` + fmt.Sprintf(img, "after") + `]}`
	ks := `{"type":"struct","fields":[{"type":"int64","field":"id"},{"type":"int32","name":"io.debezium.time.Date","version":1,"field":"d"}],"name":"db.s.t.Key"}`
	cases := []struct{ name, key, value, want string }{
		{"days and milliseconds", "", `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"d":19724,"cd":19724,"ct":1704164645000,"day":19724}}}`,
			"upsert 1|1704153600000|1704153600000|1704164645000|19724"},
		{"read silently in the mapping's unit before", "", `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"cd":19724,"ct":1704164645000}}}`,
			"upsert 1|~|1704153600000|1704164645000|~"},
		{"before 1970", "", `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"d":-1,"cd":-719162,"ct":-1000,"day":-1}}}`,
			"upsert 1|-86400000|-62135596800000|-1000|-1"},
		{"nulls", "", `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"d":null,"cd":null,"ct":null,"day":null}}}`, "upsert 1|~|~|~|~"},
		{"a key's day", `{"schema":` + ks + `,"payload":{"id":1,"d":19724}}`, "", "delete 1|1704153600000|~|~|~"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if c.value != "" {
			value = []byte(c.value)
		}
		if got := show(d.Decode(nil, key, value)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// A key column that is an exact decimal is read with the scale the message key's own schema gives
// (the JsonConverter wraps keys as values: org.apache.kafka.connect.data.Decimal, its scale a
// parameter, the unscaled value base64), also when no value with a schema came before: the
// tombstone a decoder meets first (a partition taken over at it). Before, its base64 was read as
// decimal text: "BNI=" (12.34) rejected, "1234" (-26588.24) deleting the key 1234.
func TestDecodeDebeziumKeyDecimalFromItsSchema(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "amt", Type: "decimal"}, {Name: "n", Type: "bigint"}, {Name: "v", Type: "text"}}
	ks := `{"type":"struct","fields":[{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amt"},` +
		`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0","connect.decimal.precision":"10"},"field":"n"}],"optional":false,"name":"db.s.t.Key"}`
	for _, c := range []struct{ key, want string }{
		{`{"schema":` + ks + `,"payload":{"amt":"BNI=","n":"AA=="}}`, "delete 12.34|0|~"},
		{`{"schema":` + ks + `,"payload":{"amt":"1234","n":"1234"}}`, "delete -26588.24|-2658824|~"},
	} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(d.Decode(nil, []byte(c.key), nil)); got != c.want {
			t.Errorf("tombstone of %s: got %q, want %q", c.key, got, c.want)
		}
	}
}

// A relational connector's event names every column it publishes, null ones too (Kafka Connect's
// JsonConverter writes each field of the row's struct: connect/json JsonConverter.convertToJson,
// case STRUCT): a declared column it lacks (one column.exclude.list leaves out) is not set by the
// change, as one whose value Debezium could not read; a null is the column's value.
func TestDecodeRelationalEventLackingAColumn(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}, {Name: "secret", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, value, want string }{
		{`{"id":1}`, `{"op":"c","source":{"connector":"mysql"},"after":{"id":1,"a":"x"}}`, "upsert 1|x|~ set 110"},
		{`{"id":1}`, `{"op":"r","source":{"connector":"oracle"},"after":{"id":1,"a":"x","secret":null}}`, "upsert 1|x|~ set all"},
		{`{"id":1}`, `{"op":"u","source":{"connector":"sqlserver"},"before":null,"after":{"a":"x"}}`, "upsert 1|x|~ before 1|~|~ set 110"},
		{`{"id":1}`, `{"op":"u","source":{"connector":"postgresql"},"before":null,"after":{"id":1,"a":"__debezium_unavailable_value"}}`, "upsert 1|~|~ before 1|~|~ set 100"},
	} {
		if got := showCells(d.Decode(nil, []byte(c.key), []byte(c.value))); got != c.want {
			t.Errorf("%s: got %q, want %q", c.value, got, c.want)
		}
	}
}

// A blob whose envelope schema field is a string, not bytes, is Debezium's binary.handling.mode
// base64, base64-url-safe or hex: debezium-connector-common config/CommonConnectorConfig.java
// BinaryHandlingMode gives each a plain string schema (SchemaBuilder::string), so the schema does
// not say which. Hex is read as hex, URL-safe base64 as such, and hex digits that are base64 too
// ("deadbeef") are refused: read either way they would be other bytes. A bytes field is base64,
// as the JSON converter writes bytes. Before, every such string was read as standard base64:
// "deadbeef" in hex mode became the bytes 75 e6 9d 6d e7 9f.
func TestDecodeDebeziumBlobsOfAStringSchema(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "int"}, {Name: "b", Type: "blob"}}
	env := func(typ string) string {
		return `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","field":"id"},{"type":"` + typ + `","optional":true,"field":"b"}],"field":"after"}]}`
	}
	ks := `{"type":"struct","fields":[{"type":"string","optional":false,"field":"b"}],"name":"db.s.t.Key"}`
	cases := []struct{ name, key, value, want string }{
		{"hex", "", `{"schema":` + env("string") + `,"payload":{"op":"c","after":{"id":1,"b":"deadbe"}}}`, "upsert 1|\xde\xad\xbe"},
		{"base64", "", `{"schema":` + env("string") + `,"payload":{"op":"c","after":{"id":1,"b":"3q2+7w=="}}}`, "upsert 1|\xde\xad\xbe\xef"},
		{"url-safe base64", "", `{"schema":` + env("string") + `,"payload":{"op":"c","after":{"id":1,"b":"3q2-7w=="}}}`, "upsert 1|\xde\xad\xbe\xef"},
		{"empty", "", `{"schema":` + env("string") + `,"payload":{"op":"c","after":{"id":1,"b":""}}}`, "upsert 1|"},
		{"hex that is base64 too", "", `{"schema":` + env("string") + `,"payload":{"op":"c","after":{"id":1,"b":"deadbeef"}}}`, "ERR type: ambiguous blob"},
		{"bytes", "", `{"schema":` + env("bytes") + `,"payload":{"op":"c","after":{"id":1,"b":"deadbeef"}}}`, "upsert 1|\x75\xe6\x9d\x6d\xe7\x9f"},
		{"a key's hex", `{"schema":` + ks + `,"payload":{"b":"deadbe"}}`, "", "delete ~|\xde\xad\xbe"},
	}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var key, value []byte
		if c.key != "" {
			key = []byte(c.key)
		}
		if c.value != "" {
			value = []byte(c.value)
		}
		chs := d.Decode(nil, key, value)
		if got := show(chs); !strings.HasPrefix(got, c.want) || c.name == "hex that is base64 too" && chs[0].Err.Field != "b" {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// A VariableScaleDecimal (decimal.handling.mode=precise of a NUMERIC without a fixed scale:
// debezium-connector-postgres PostgresValueConverter.numericSchema; a struct of its scale and
// the unscaled value's bytes, debezium-connector-common io/debezium/data/VariableScaleDecimal.java,
// LOGICAL_NAME io.debezium.data.VariableScaleDecimal) is read as its number into a column the
// mapping declares text, bigint or double, when the envelope schema names the type. Before, a
// text column got the struct's JSON ({"scale":2,"value":"BNI="}) and the others were rejected.
func TestDecodeDebeziumVariableScaleDecimalIntoOtherTypes(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "s", Type: "text"}, {Name: "n", Type: "bigint"}, {Name: "f", Type: "double"}}
	vsd := func(field string) string {
		return `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},{"type":"bytes","optional":false,"field":"value"}],"optional":true,"name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal","field":"` + field + `"}`
	}
	env := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","field":"id"},` + vsd("s") + `,` + vsd("n") + `,` + vsd("f") + `],"field":"after"}]}`
	value := `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"s":{"scale":2,"value":"BNI="},"n":{"scale":0,"value":"BNI="},"f":{"scale":3,"value":"+y4="}}}}`
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	textOnly := `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"s":{"scale":2,"value":"BNI="}}}}`
	if got, want := show(d.Decode(nil, nil, []byte(textOnly))), "upsert 1|12.34|~|~"; got != want {
		t.Errorf("text: got %q, want %q", got, want)
	}
	if got, want := show(d.Decode(nil, nil, []byte(value))), "upsert 1|12.34|1234|-1.234"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// without the schema an object in a text column may be the column's own JSON: kept as it is
	plain := `{"op":"c","after":{"id":1,"s":{"scale":2,"value":"BNI="}}}`
	if got, want := show(d.Decode(nil, nil, []byte(plain))), `upsert 1|{"scale":2,"value":"BNI="}|~|~`; got != want {
		t.Errorf("without a schema: got %q, want %q", got, want)
	}
}

// A time of day (io.debezium.time.Time ms, MicroTime us, NanoTime ns, Connect's Time: since
// midnight), a year (io.debezium.time.Year) or an instant (io.debezium.time.Timestamp) in a column
// the mapping declares timestamp or date is not what the column holds: the change is rejected
// naming the column and the schema's type. Before, the number was read in the column's unit: a
// time of 10:00 as 1970-01-01T10:00, the year 2024 as the date 1975-07-17, an instant's
// milliseconds as days. Debezium's time types: debezium-core io/debezium/time/*.java.
func TestDecodeDebeziumTimesOfDayAndYearsAreNotInstants(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "timestamp"}, {Name: "day", Type: "date"}}
	env := func(name, field, typ string) string {
		img := `{"type":"struct","fields":[{"type":"int64","field":"id"},{"type":"` + typ + `","name":"` + name + `","version":1,"field":"` + field + `"}],"field":"%s"}`
		return `{"type":"struct","fields":[` + fmt.Sprintf(img, "before") + `,` + fmt.Sprintf(img, "after") + `]}`
	}
	for _, c := range []struct{ name, field, typ, val string }{
		{"io.debezium.time.Time", "v", "int32", "36000000"},
		{"io.debezium.time.MicroTime", "v", "int64", "36000000000"},
		{"io.debezium.time.NanoTime", "v", "int64", "36000000000000"},
		{"org.apache.kafka.connect.data.Time", "v", "int32", "36000000"},
		{"io.debezium.time.Year", "day", "int32", "2024"},
		{"io.debezium.time.Time", "day", "int32", "36000000"},
		{"io.debezium.time.Timestamp", "day", "int64", "1704164645000"},
	} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		msg := `{"schema":` + env(c.name, c.field, c.typ) + `,"payload":{"op":"c","after":{"id":1,"` + c.field + `":` + c.val + `}}}`
		chs := d.Decode(nil, nil, []byte(msg))
		if len(chs) != 1 || chs[0].Err == nil || chs[0].Err.Field != c.field || !strings.Contains(chs[0].Err.Message, c.name) {
			t.Errorf("%s in %s column %s: got %q, want rejected naming the column and %s", c.name, map[string]string{"v": "timestamp", "day": "date"}[c.field], c.field, show(chs), c.name)
		}
	}
}

// A relational connector's event that lacks a column the mapping declares does not set it (the
// connector's column.exclude.list), and the logger is told once per column: a column the events
// never name (a misspelling in source.columns) was left as it was in every row without a word. A
// column whose value Debezium could not read (its placeholder) is not lacking: no warning.
func TestDecodeRelationalColumnLackingIsTold(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	d, err := NewDecoder(Config{Format: FormatDebezium}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	d.Logger = zap.New(core)
	const src = `"source":{"connector":"postgresql"}`
	for _, ev := range []string{
		`{"op":"c",` + src + `,"after":{"userid":"u1","orderid":1,"ts":1700000000000}}`,
		`{"op":"u",` + src + `,"after":{"userid":"u1","orderid":1,"ts":1700000000001}}`,
		`{"op":"u",` + src + `,"after":{"userid":"u1","orderid":1,"ts":"__debezium_unavailable_value","amount":"1"}}`,
	} {
		if chs := d.Decode(nil, nil, []byte(ev)); chs[0].Err != nil {
			t.Fatalf("%s: %v", ev, chs[0].Err)
		}
	}
	var told []string
	for _, e := range logs.All() {
		told = append(told, fmt.Sprint(e.ContextMap()["column"]))
	}
	if !slices.Equal(told, []string{"amount"}) {
		t.Errorf("warned of %v, want amount once (ts's placeholder is not a lacking column)", told)
	}
}

// A Kafka Connect Decimal's scale may be negative (Decimal.builder takes any int scale; an
// Oracle NUMBER(p,s) has s down to -84): the unscaled value times 10^-scale. Before, the scale
// was kept as 1 + scale beside the marks of a VariableScaleDecimal (-2) and of a blob given as a
// string (-1), so a scale of -1 marked no decimal, -2 a string blob and -3 a VariableScaleDecimal:
// the base64 bytes were read as the column's own text ("BNI=" into a text column, and a decimal
// or bigint column rejected them with the advice to enable the schema the event had).
func TestDecodeDebeziumDecimalOfANegativeScale(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "d", Type: "decimal"}, {Name: "s", Type: "text"}, {Name: "n", Type: "bigint"}}
	for _, c := range []struct{ scale, want string }{
		{"-1", "upsert 1|12340|12340|12340"},
		{"-2", "upsert 1|123400|123400|123400"},
		{"-3", "upsert 1|1234000|1234000|1234000"},
	} {
		dec := func(field string) string {
			return `{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"` + c.scale + `","connect.decimal.precision":"38"},"field":"` + field + `"}`
		}
		env := `{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","field":"id"},` + dec("d") + `,` + dec("s") + `,` + dec("n") + `],"field":"after"}]}`
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		value := `{"schema":` + env + `,"payload":{"op":"c","after":{"id":1,"d":"BNI=","s":"BNI=","n":"BNI="}}}`
		if got := show(d.Decode(nil, nil, []byte(value))); got != c.want {
			t.Errorf("scale %s: got %q, want %q", c.scale, got, c.want)
		}
	}
}

// Debezium writes a PostgreSQL NUMERIC's NaN and infinities as text under
// decimal.handling.mode=string ("NAN") and as a double's NaN under double (JsonConverter: "NaN",
// "Infinity"): a decimal column cannot hold them, and the reject says to declare the column
// double or text. Before, it said to enable the event's schema or set decimal.handling.mode=string,
// advice for base64 bytes, which changes nothing here.
func TestDecodeDebeziumDecimalNaNSaysWhatHoldsIt(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "amt", Type: "decimal"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`"NAN"`, `"NaN"`, `"Infinity"`, `"-Infinity"`} {
		got := show(d.Decode(nil, nil, []byte(`{"op":"c","after":{"id":1,"amt":`+v+`}}`)))
		if !strings.HasPrefix(got, "ERR type:") || strings.Contains(got, "schemas.enable") || !strings.Contains(got, "declare the column double") {
			t.Errorf("%s into a decimal column: %q", v, got)
		}
	}
	// base64 bytes without their schema keep the advice to send it
	if got := show(d.Decode(nil, nil, []byte(`{"op":"c","after":{"id":1,"amt":"BNI="}}`))); !strings.Contains(got, "schemas.enable=true") {
		t.Errorf("base64 without a schema: %q", got)
	}
}

// A JSON row (format=json) that names a declared column twice, exactly or ignoring case, is
// rejected naming the column, as a JSON Lines row is: which value is meant would be a guess.
// Before, the last one was written without a word ({"orderid":1,"orderid":2} as order 2).
func TestDecodeJSONRowNamingAColumnTwice(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{
		`{"userid":"u1","orderid":1,"orderid":2}`,
		`{"schema":{},"payload":{"userid":"u1","orderid":1,"orderid":2}}`,
		`{"userid":"u1","OrderId":1,"ORDERID":2}`,
	} {
		cs := d.Decode(nil, nil, []byte(value))
		if len(cs) != 1 || cs[0].Err == nil || cs[0].Err.Field != "orderid" || !strings.Contains(cs[0].Err.Message, "twice") {
			t.Errorf("%s: got %q, want a reject naming orderid", value, show(cs))
		}
	}
	// an exact member beside one that names the column only ignoring case is no guess: it wins
	if got := show(d.Decode(nil, nil, []byte(`{"userid":"u1","orderid":1,"OrderId":2}`))); got != "upsert u1|1|~|~" {
		t.Errorf("exact and folded member: %q", got)
	}
}

// A decimal of Debezium's event whose scale is beyond ±1000 (a Cassandra decimal holds any int32
// scale: 1E-2000000000) is rejected naming the column, as the cassandra:// source and decimal
// text with such an exponent are. Before, its digits were written out in full: a scale of two
// billion made a string of two billion zeros, which ended the run out of memory, and a
// replication then failed on the same event at every restart.
func TestDecodeDebeziumDecimalScaleIsBounded(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "amt", Type: "decimal"}, {Name: "note", Type: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ after, field string }{
		{`{"id":1,"amt":{"scale":1001,"value":"AQ=="}}`, "amt"},
		{`{"id":1,"amt":{"scale":-1001,"value":"AQ=="}}`, "amt"},
		{`{"id":1,"amt":{"scale":2000000000,"value":"AQ=="}}`, "amt"},
	} {
		cs := d.Decode(nil, nil, []byte(`{"op":"c","after":`+c.after+`}`))
		if len(cs) != 1 || cs[0].Err == nil || cs[0].Err.Field != c.field || !strings.Contains(cs[0].Err.Message, "1000") {
			t.Errorf("%s: got %.200q, want a reject of %s", c.after, show(cs), c.field)
		}
	}
	if got := show(d.Decode(nil, nil, []byte(`{"op":"c","after":{"id":1,"amt":{"scale":-3,"value":"AQ=="}}}`))); got != "upsert 1|1000|~" {
		t.Errorf("scale -3: %q", got)
	}
}

// A plain message key (keycol=) of a text column is its bytes, whatever they look like: one
// that reads as a JSON number or boolean with blanks around it (" 42", "true ") is not trimmed,
// as one that does not (" ab") never was. Before, " 42" was the key "42": the tombstone of the
// row written with userid " 42" deleted the row "42" instead.
func TestDecodePlainTextKeyIsItsBytes(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatJSON, KeyColumn: "userid"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		" 42":    "delete  42|~|~|~",
		"42 ":    "delete 42 |~|~|~",
		"true\n": "delete true\n|~|~|~",
		" ab":    "delete  ab|~|~|~",
		"42":     "delete 42|~|~|~",
		"1.50":   "delete 1.50|~|~|~",
		`"u2"`:   "delete u2|~|~|~",
	} {
		if got := show(d.Decode(nil, []byte(key), nil)); got != want {
			t.Errorf("key %q: got %q, want %q", key, got, want)
		}
	}
	// an integer key column reads blanks around its number as before
	n, err := NewDecoder(Config{Format: FormatJSON, KeyColumn: "orderid"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(n.Decode(nil, []byte(" 42 "), nil)); got != "delete ~|42|~|~" {
		t.Errorf("bigint key: %q", got)
	}
}
