package cqlvalue

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// AppendJSON writes what FromJSON reads back as the same value, for every kind of column: the
// repair file of verify is read by the file source this way.
func TestAppendJSONReadsBack(t *testing.T) {
	cases := []struct {
		typ, text string // the value as a CSV field would give it
		want      string // its JSON
	}{
		{"text", "", `""`},
		{"text", "a \"q\"\n\\ é", `"a \"q\"\n\\ é"`},
		{"text", "0x01", `"0x01"`},
		{"text", "null", `"null"`},
		{"ascii", "plain", `"plain"`},
		{"bigint", "-9223372036854775808", `-9223372036854775808`},
		{"int", "42", `42`},
		{"varint", "123456789012345678901234567890", `123456789012345678901234567890`},
		{"boolean", "true", `true`},
		{"float", "0.1", `0.10000000149011612`},
		{"double", "1e-300", `1e-300`},
		{"double", "NaN", `"NaN"`},
		{"decimal", "12.340", `12.340`},
		{"decimal", "-0.000001", `-0.000001`},
		{"timestamp", "2024-01-02T03:04:05.678Z", `"2024-01-02T03:04:05.678Z"`},
		{"timestamp(s)", "1700000000", `"2023-11-14T22:13:20.000Z"`},
		{"timestamp", "1969-12-31T23:59:59.999Z", `"1969-12-31T23:59:59.999Z"`},
		{"date", "1900-02-28", `"1900-02-28"`},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", `"123e4567-e89b-12d3-a456-426614174000"`},
		{"inet", "10.0.0.1", `"10.0.0.1"`},
		{"blob", "0x00ff10", `"0x00ff10"`},
		{"blob", "0x", `"0x"`},
		{"list<int>", "[3,1,3]", `[3,1,3]`},
		{"set<text>", `["b","a"]`, `["a","b"]`},
		{"map<text, timestamp>", `{"k":"2024-01-02T00:00:00Z"}`, ``},
	}
	for _, c := range cases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		v, err := typ.ParseText(c.text)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.text, err)
		}
		js := string(typ.AppendJSON(nil, v))
		if c.want != "" && js != c.want {
			t.Errorf("%s %q: JSON %s, want %s", c.typ, c.text, js, c.want)
		}
		back, err := typ.FromJSON(js)
		if err != nil || back != v {
			t.Errorf("%s %q: JSON %s reads back as %+v (%v), want %+v", c.typ, c.text, js, back, err, v)
		}
	}
	for _, typ := range []string{"text", "blob", "decimal", "timestamp", "list<int>"} {
		ty, _ := ParseType(typ)
		if js := string(ty.AppendJSON(nil, pipeline.Null)); js != "null" {
			t.Errorf("%s null: %s", typ, js)
		}
		if back, err := ty.FromJSON("null"); err != nil || back != pipeline.Null {
			t.Errorf("%s: null reads back as %+v (%v)", typ, back, err)
		}
	}
}
