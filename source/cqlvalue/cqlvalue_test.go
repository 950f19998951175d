package cqlvalue

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rekey/rekey/pipeline"
)

func TestParseType(t *testing.T) {
	cases := map[string]string{
		"text": "text", "VARCHAR": "text", " BigInt ": "bigint", "ascii": "ascii", "int": "int",
		"smallint": "smallint", "tinyint": "tinyint", "boolean": "boolean", "double": "double",
		"float": "float", "decimal": "decimal", "timestamp": "timestamp", "date": "date",
		"uuid": "uuid", "timeuuid": "timeuuid", "blob": "blob", "inet": "inet", "varint": "varint",
		"list<int>":                         "list<int>",
		"SET < text >":                      "set<text>",
		"map<text,bigint>":                  "map<text, bigint>",
		"map<text, frozen<list<int>>>":      "map<text, frozen<list<int>>>",
		"frozen<map<uuid,set<timestamp>>> ": "frozen<map<uuid, set<timestamp>>>",
		"tuple<int,text>":                   "tuple<int, text>",
		"frozen<tuple<int, list<text>>>":    "tuple<int, list<text>>",
	}
	for in, want := range cases {
		got, err := ParseType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "strin", "list<>", "list<int", "map<int>", "frozen<int>", "list<int>>", "tuple<>", "tuple<int,>", "counter"} {
		_, err := ParseType(bad)
		if err == nil || !strings.Contains(err.Error(), "supported: text, varchar, ascii") {
			t.Errorf("ParseType(%q): %v", bad, err)
		}
	}
	// a tuple reads as the Cassandra source writes it, from JSON, from CQL's literal and from
	// Debezium's Cassandra connector (an object of field1, field2, ...)
	tp, _ := ParseType("tuple<int, text, list<int>>")
	for _, in := range []string{`[7, "t", [1, 2]]`, `{"field1": 7, "field2": "t", "field3": [1,2]}`, `(7, 't', [1, 2])`} {
		if v, err := tp.ParseText(in); err != nil || v.Str != `[7,"t",[1,2]]` {
			t.Errorf("tuple %s: %q, %v", in, v.Str, err)
		}
	}
	if v, err := tp.FromJSON(`{"field1":null,"field2":"x","field3":null}`); err != nil || v.Str != `[null,"x",null]` {
		t.Errorf("tuple with null elements: %q, %v", v.Str, err)
	}
	for _, bad := range []string{`[7, "t"]`, `[7, "t", [1], 4]`, `{"field2": "t", "field1": 7, "field3": []}`, `{"a": 7}`} {
		if _, err := tp.FromJSON(bad); err == nil {
			t.Errorf("tuple %s: accepted", bad)
		}
	}
	a, _ := ParseType("map<varchar, frozen<list<int>>>")
	b, _ := ParseType("MAP<text,frozen<list<int>>>")
	c, _ := ParseType("map<text, list<int>>")
	if !a.Equal(b) || a.Equal(c) || !a.Equal(MapOf(Scalar(Text), Type{Kind: List, Frozen: true, params: []Type{Scalar(Int)}})) {
		t.Error("Equal")
	}
}

// v renders a Value as kind:canonical for comparison; "null" for null.
func v(x pipeline.Value) string {
	if x.IsNull() {
		return "null"
	}
	return x.Kind.String() + ":" + x.String()
}

type tcase struct {
	typ, in, want string // want "ERR:substring" for errors
}

var textCases = []tcase{
	// text
	{"text", "hello", "text:hello"},
	{"text", "", "text:"},
	{"text", "  spaced  ", "text:  spaced  "},
	{"varchar", "漢字 é", "text:漢字 é"},
	{"ascii", "plain", "text:plain"},
	{"ascii", "é", "ERR:non-ASCII"},
	// integers
	{"bigint", "42", "int:42"},
	{"bigint", " -42 ", "int:-42"},
	{"bigint", "+7", "int:7"},
	{"bigint", "", "null"},
	{"bigint", "9223372036854775807", "int:9223372036854775807"},
	{"bigint", "-9223372036854775808", "int:-9223372036854775808"},
	{"bigint", "9223372036854775808", "ERR:value 9223372036854775808 out of range for bigint"},
	{"bigint", "99999999999999999999999", "ERR:out of range for bigint"},
	{"bigint", "1.5", `ERR:invalid bigint "1.5": expected an integer`},
	{"bigint", "abc", "ERR:expected an integer"},
	{"bigint", "-", "ERR:expected an integer"},
	{"int", "2147483647", "int:2147483647"},
	{"int", "2147483648", "ERR:value 2147483648 out of range for int"},
	{"int", "-2147483648", "int:-2147483648"},
	{"smallint", "-32768", "int:-32768"},
	{"smallint", "32768", "ERR:value 32768 out of range for smallint"},
	{"tinyint", "127", "int:127"},
	{"tinyint", "-128", "int:-128"},
	{"tinyint", "300", "ERR:value 300 out of range for tinyint"},
	{"varint", "123", "int:123"},
	{"varint", "-123456789012345678901234567890", "decimal:-123456789012345678901234567890"},
	{"varint", "+000123456789012345678901234567890", "decimal:123456789012345678901234567890"},
	{"varint", "12a", "ERR:expected an integer"},
	// boolean
	{"boolean", "true", "bool:true"},
	{"boolean", "FALSE", "bool:false"},
	{"boolean", "True", "bool:true"},
	{"boolean", "1", "bool:true"},
	{"boolean", "0", "bool:false"},
	{"boolean", "yes", "ERR:expected true or false"},
	// floats
	{"double", "1.5", "float:1.5"},
	{"double", "-2e-3", "float:-0.002"},
	{"double", "NaN", "float:NaN"},
	{"double", "Infinity", "float:+Inf"},
	{"double", "1e400", "ERR:out of range for double"},
	{"float", "0.1", "float:0.10000000149011612"},
	{"float", "1e39", "ERR:out of range for float"},
	{"double", "x", "ERR:expected a number"},
	// decimals
	{"decimal", "1.50", "decimal:1.50"},
	{"decimal", "-0.001", "decimal:-0.001"},
	{"decimal", "0", "decimal:0"},
	{"decimal", "+1.5", "decimal:1.5"},
	{"decimal", "007.50", "decimal:7.50"},
	{"decimal", ".5", "decimal:0.5"},
	{"decimal", "5.", "decimal:5"},
	{"decimal", "-0.00", "decimal:0.00"},
	{"decimal", "1.5E3", "decimal:1500"},
	{"decimal", "1.50e1", "decimal:15.0"},
	{"decimal", "1E-3", "decimal:0.001"},
	{"decimal", "-12.5e-2", "decimal:-0.125"},
	{"decimal", "123456789012345678901234567890.123456789", "decimal:123456789012345678901234567890.123456789"},
	{"decimal", "1e99999", "ERR:exponent"},
	{"decimal", "1.2.3", "ERR:expected a decimal number"},
	{"decimal", "abc", "ERR:expected a decimal number"},
	{"decimal", "-", "ERR:expected a decimal number"},
	// timestamps
	{"timestamp", "0", "int:0"},
	{"timestamp", "1704164645678", "int:1704164645678"},
	{"timestamp", "-1000", "ERR:looks like epoch seconds"},
	{"timestamp(ms)", "-1000", "int:-1000"},
	{"timestamp", "2024-01-02T03:04:05Z", "int:1704164645000"},
	{"timestamp", "2024-01-02T03:04:05.678Z", "int:1704164645678"},
	{"timestamp", "2024-01-02 03:04:05.678000+0000", "int:1704164645678"},
	{"timestamp", "2024-01-02 03:04:05.678999+0000", "ERR:sub-millisecond digits"},
	{"timestamp", "2024-01-02 03:04:05.678000000+0000", "int:1704164645678"},
	{"timestamp", "2024-01-02 03:04:05", "int:1704164645000"},
	{"timestamp", "2024-01-02 03:04", "int:1704164640000"},
	{"timestamp", "2024-01-02", "int:1704153600000"},
	{"timestamp", "2024-01-02T11:04:05+08:00", "int:1704164645000"},
	{"timestamp", "2024-01-02T03:04:05.5-0130", "int:1704170045500"},
	{"timestamp", "2024-01-02 03:04:05 +08", "int:1704135845000"},
	{"timestamp", "2024-01-02T03:04:05 UTC", "int:1704164645000"},
	{"timestamp", "1969-12-31T23:59:59.500Z", "int:-500"},
	{"timestamp", "1900-01-01 00:00:00+0000", "int:-2208988800000"},
	{"timestamp", "0001-01-01T00:00:00Z", "int:-62135596800000"},
	{"timestamp", "2024-02-29T00:00:00Z", "int:1709164800000"},
	{"timestamp", "2023-02-29T00:00:00Z", "ERR:expected epoch milliseconds or ISO-8601"},
	{"timestamp", "2024-13-01", "ERR:invalid timestamp"},
	{"timestamp", "2024-01-02T25:00:00Z", "ERR:invalid timestamp"},
	{"timestamp", "2024-01-02T03:04:05Q", "ERR:invalid timestamp"},
	{"timestamp", "yesterday", `ERR:invalid timestamp "yesterday"`},
	{"timestamp", "", "null"},
	// dates
	{"date", "1970-01-01", "int:0"},
	{"date", "2024-01-02", "int:19724"},
	{"date", "1969-12-31", "int:-1"},
	{"date", "1600-03-01", "int:-135080"},
	{"date", "2024-1-2", "int:19724"},
	{"date", "19724", "int:19724"},
	{"date", "-5", "int:-5"},
	{"date", "9999999999", "ERR:out of range for date"},
	{"date", "2024-01-02T00:00:00Z", "ERR:expected yyyy-mm-dd"},
	{"date", "2024-02-30", "ERR:expected yyyy-mm-dd"},
	// uuids
	{"uuid", "123e4567-e89b-12d3-a456-426614174000", "text:123e4567-e89b-12d3-a456-426614174000"},
	{"uuid", "123E4567-E89B-42D3-A456-426614174000", "text:123e4567-e89b-42d3-a456-426614174000"},
	{"uuid", "123e4567e89b12d3a456426614174000", "text:123e4567-e89b-12d3-a456-426614174000"},
	{"uuid", "123e4567-e89b-12d3-a456-42661417400", "ERR:expected a UUID"},
	{"uuid", "123e4567-e89b-12d3-a456-42661417400g", "ERR:expected a UUID"},
	{"uuid", "123e4567+e89b-12d3-a456-426614174000", "ERR:expected a UUID"},
	{"timeuuid", "50554d6e-29bb-11e5-b345-feff819cdc9f", "text:50554d6e-29bb-11e5-b345-feff819cdc9f"},
	{"timeuuid", "123e4567-e89b-42d3-a456-426614174000", "ERR:version 4, expected version 1"},
	// blobs
	{"blob", "0x0102ff", "bytes:\x01\x02\xff"},
	{"blob", "0XABcd", "bytes:\xab\xcd"},
	{"blob", "0x", "bytes:"},
	{"blob", "", "bytes:"}, // a CSV "": the empty blob (an unquoted empty field never gets here)
	{"blob", "AQL/", "bytes:\x01\x02\xff"},
	{"blob", "0x123", "ERR:even number of hex digits"},
	{"blob", "0x01Qg==", "bytes:\xd3\x1d\x35\x42"}, // base64 that begins with 0x, not hex after it
	{"blob", "not base64!", "ERR:0x-prefixed hex or base64"},
	// inet
	{"inet", "192.168.0.1", "text:192.168.0.1"},
	{"inet", "2001:DB8:0:0:0:0:0:1", "text:2001:db8::1"},
	{"inet", "::ffff:10.0.0.1", "text:::ffff:10.0.0.1"},
	{"inet", "300.1.1.1", "ERR:expected an IPv4 or IPv6 address"},
	{"inet", "fe80::1%eth0", "ERR:expected an IPv4 or IPv6 address"},
	// collections: JSON and cqlsh literal forms
	{"list<int>", "[1, 2, 3]", "text:[1,2,3]"},
	{"list<int>", "[]", "text:[]"},
	{"list<text>", `["a", "b\"c", "é"]`, `text:["a","b\"c","é"]`},
	{"list<text>", `['a', 'it''s', 'x, y']`, `text:["a","it's","x, y"]`},
	{"list<bigint>", "[3,1,3]", "text:[3,1,3]"},
	{"set<int>", "{3, 1, 2, 1}", "text:[1,2,3]"},
	{"set<int>", "[10, 9]", "text:[9,10]"},
	{"set<text>", "{'b', 'a'}", `text:["a","b"]`},
	{"map<text, int>", "{'b': 2, 'a': 1}", `text:{"a":1,"b":2}`},
	{"map<text, int>", `{"b": 2, "a": 1, "b": 3}`, `text:{"a":1,"b":3}`},
	{"map<int, text>", `{"10": "x", "9": "y"}`, `text:{"9":"y","10":"x"}`},
	{"map<int, text>", `{10: 'x', 9: 'y'}`, `text:{"9":"y","10":"x"}`},
	{"map<text, frozen<list<int>>>", `{'k': [1, 2], 'j': []}`, `text:{"j":[],"k":[1,2]}`},
	{"list<frozen<set<text>>>", `[{'b', 'a'}, ["c"]]`, `text:[["a","b"],["c"]]`},
	{"list<timestamp>", `['2024-01-02 03:04:05.678000+0000', 0]`, `text:["2024-01-02T03:04:05.678Z","1970-01-01T00:00:00.000Z"]`},
	{"set<date>", `['2024-01-02', '1969-12-31']`, `text:["1969-12-31","2024-01-02"]`},
	{"list<uuid>", `[123e4567-e89b-12d3-a456-426614174000]`, `text:["123e4567-e89b-12d3-a456-426614174000"]`},
	{"list<blob>", `[0x0102]`, `text:["0x0102"]`},
	{"list<boolean>", `[True, false]`, `text:[true,false]`},
	{"list<decimal>", `[1.50, 1e2]`, `text:[1.50,100]`},
	{"list<double>", `[1.5, NaN]`, `text:[1.5,"NaN"]`},
	{"list<int>", "[1, 'x']", "ERR:expected an integer"},
	{"list<int>", "[1, null]", "ERR:cannot hold null"},
	{"list<int>", "[1, 2", "ERR:expected ',' or ']'"},
	{"list<int>", "[1] x", "ERR:after the value"},
	{"list<int>", "{1}", "ERR:expected '['"},
	{"list<tinyint>", "[300]", "ERR:value 300 out of range for tinyint"},
	{"map<text, int>", "{'a' 1}", "ERR:expected ':'"},
	{"map<text, int>", "", "null"},
}

func TestParseText(t *testing.T) {
	checkParseText(t, textCases)
}

// checkParseText checks each case's ParseText of its text in its type.
func checkParseText(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		got, err := typ.ParseText(c.in)
		check(t, "ParseText", c, v(got), err)
	}
}

func check(t *testing.T, fn string, c tcase, got string, err error) {
	t.Helper()
	if want, ok := strings.CutPrefix(c.want, "ERR:"); ok {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s(%q) = %s, %v; want error containing %q", c.typ, fn, c.in, got, err, want)
		}
		return
	}
	if err != nil || got != c.want {
		t.Errorf("%s %s(%q) = %s, %v; want %s", c.typ, fn, c.in, got, err, c.want)
	}
}

func TestFromJSON(t *testing.T) {
	cases := []tcase{
		{"text", `"hello"`, "text:hello"},
		{"text", `"a\"b\u00e9\n"`, "text:a\"bé\n"},
		{"text", `""`, "text:"},
		{"text", `null`, "null"},
		{"text", `12.50`, "text:12.50"},
		{"text", `true`, "text:true"},
		{"text", `{"a": [1, 2]}`, `text:{"a":[1,2]}`},
		{"bigint", `42`, "int:42"},
		{"bigint", `"42"`, "int:42"},
		{"bigint", `-9223372036854775808`, "int:-9223372036854775808"},
		{"bigint", `1.5`, "ERR:expected an integer"},
		{"bigint", `1e3`, "ERR:expected an integer"},
		{"bigint", `true`, "ERR:expected bigint, got JSON true"},
		{"bigint", `[1]`, "ERR:got JSON an array"},
		{"bigint", `01`, "ERR:invalid JSON number"},
		{"tinyint", `300`, "ERR:value 300 out of range for tinyint"},
		{"boolean", `true`, "bool:true"},
		{"boolean", `"false"`, "bool:false"},
		{"boolean", `1`, "bool:true"},
		{"double", `1.5e3`, "float:1500"},
		{"double", `"NaN"`, "float:NaN"},
		{"decimal", `0.1`, "decimal:0.1"},
		{"decimal", `"1.50"`, "decimal:1.50"},
		{"decimal", `1.0E+2`, "decimal:100"},
		{"varint", `123456789012345678901234567890`, "decimal:123456789012345678901234567890"},
		{"timestamp", `1704164645678`, "int:1704164645678"},
		{"timestamp", `"2024-01-02T03:04:05.678Z"`, "int:1704164645678"},
		{"date", `"2024-01-02"`, "int:19724"},
		{"date", `19724`, "int:19724"},
		{"uuid", `"123E4567-E89B-12D3-A456-426614174000"`, "text:123e4567-e89b-12d3-a456-426614174000"},
		{"uuid", `123`, "ERR:got JSON number"},
		{"blob", `"0x0102"`, "bytes:\x01\x02"},
		{"blob", `""`, "bytes:"},
		{"blob", `null`, "null"},
		{"inet", `"127.0.0.1"`, "text:127.0.0.1"},
		{"list<int>", `[3, 1]`, "text:[3,1]"},
		{"set<int>", `[3, 1, 3]`, "text:[1,3]"},
		{"map<text, int>", `{"b": 1, "a": 2}`, `text:{"a":2,"b":1}`},
		{"map<text, int>", `"{'b': 1}"`, `text:{"b":1}`},
		{"list<int>", `{"a": 1}`, "ERR:expected '['"},
		{"text", `"unterminated`, "ERR:invalid JSON string"},
		{"text", `nul`, "ERR:invalid JSON value"},
		{"text", ``, "ERR:empty JSON value"},
	}
	for _, c := range cases {
		typ, _ := ParseType(c.typ)
		got, err := typ.FromJSON(c.in)
		check(t, "FromJSON", c, v(got), err)
	}
}

func TestObjectFields(t *testing.T) {
	var keys, vals []string
	err := ObjectFields(` {"a": 1, "b\u00e9": {"x": [1, "]"]}, "c": "s\"", "d": null} `, func(k, raw string) {
		keys = append(keys, k)
		vals = append(vals, raw)
	})
	if err != nil || strings.Join(keys, "|") != "a|bé|c|d" || strings.Join(vals, "|") != `1|{"x": [1, "]"]}|"s\""|null` {
		t.Fatalf("%v %q %q", err, keys, vals)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":tru}`, `{"a":"\x"}`, `{a:1}`, "{\"a\":\"\x01\"}", `{"a":-}`, `{"a":1.}`} {
		if err := ObjectFields(bad, func(string, string) {}); err == nil {
			t.Errorf("ObjectFields(%q) accepted", bad)
		}
	}
	if err := ObjectFields(`{}`, func(string, string) { t.Fatal("called") }); err != nil {
		t.Fatal(err)
	}
}

func TestNoAllocs(t *testing.T) {
	text, _ := ParseType("text")
	bigint, _ := ParseType("bigint")
	ts, _ := ParseType("timestamp")
	dec, _ := ParseType("decimal")
	uuid, _ := ParseType("uuid")
	in := []struct {
		t Type
		s string
	}{{text, "hello"}, {bigint, "-1234567890"}, {ts, "1704164645678"}, {ts, "2024-01-02 03:04:05.678000+0000"}, {dec, "123.45"}, {uuid, "123e4567-e89b-12d3-a456-426614174000"}}
	for _, c := range in {
		var sink pipeline.Value
		if n := testing.AllocsPerRun(100, func() { sink, _ = c.t.ParseText(c.s) }); n != 0 {
			t.Errorf("%s ParseText(%q): %v allocs", c.t, c.s, n)
		}
		_ = sink
	}
	raw := `{"id": 1, "name": "x", "ts": 1704164645678}`
	if n := testing.AllocsPerRun(100, func() {
		_ = ObjectFields(raw, func(k, r string) {
			if k == "ts" {
				_, _ = ts.FromJSON(r)
			}
		})
	}); n != 0 {
		t.Errorf("ObjectFields + FromJSON: %v allocs", n)
	}
}

func TestDaysFromCivil(t *testing.T) {
	// Cross-check against a day-by-day walk over several centuries.
	d := daysFromCivil(1600, 1, 1)
	for y := int64(1600); y < 2500; y++ {
		for m := int64(1); m <= 12; m++ {
			for day := int64(1); day <= daysIn(y, m); day++ {
				if got := daysFromCivil(y, m, day); got != d {
					t.Fatalf("%d-%d-%d: %d, want %d", y, m, day, got, d)
				}
				d++
			}
		}
	}
	if daysFromCivil(1970, 1, 1) != 0 {
		t.Fatal("epoch")
	}
}

func FuzzParseText(f *testing.F) {
	for _, c := range textCases {
		f.Add(c.typ, c.in)
	}
	f.Fuzz(func(t *testing.T, typ, in string) {
		ty, err := ParseType(typ)
		if err != nil {
			return
		}
		v, err := ty.ParseText(in)
		if err != nil {
			return
		}
		if ty.Kind == Decimal {
			again, err := ty.ParseText(v.Str)
			if err != nil || again != v {
				t.Fatalf("decimal %q -> %q -> %v %v", in, v.Str, again, err)
			}
		}
		if ty.Kind.IsCollection() {
			again, err := ty.ParseText(v.Str)
			if err != nil || again != v {
				t.Fatalf("collection %q -> %q -> %q %v", in, v.Str, again.Str, err)
			}
		}
		if ty.Kind == Double && !v.IsNull() && v.Kind != pipeline.KindFloat {
			t.Fatal("kind")
		}
	})
}

// A member's value read with what ObjectMembers' scan learned of it (FromScanned) is the value
// FromJSON reads from its text, error included: the scan's knowledge only saves the second pass.
func TestFromScannedAsFromJSON(t *testing.T) {
	docs := []string{
		`{"a": "hello", "b": "a\"b\u00e9\n", "c": "", "d": null, "e": 12.50, "f": true, "g": {"a": [1, 2]}}`,
		`{"a": 42, "b": "42", "c": -9223372036854775808, "d": 1.5, "e": 1e3, "f": [1], "g": "é", "h": "x\ty"}`,
		`{"a": "2024-01-02T03:04:05.678Z", "b": 1704164645678, "c": "0x0102", "d": "NaN", "e": "1.50", "f": 0.1}`,
		`{"a": "123E4567-E89B-12D3-A456-426614174000", "b": "127.0.0.1", "c": [3, 1, 3], "d": "{'b': 1}", "e": 300}`,
	}
	types := []string{"text", "ascii", "bigint", "int", "tinyint", "boolean", "double", "decimal", "varint",
		"timestamp", "date", "uuid", "blob", "inet", "list<int>", "set<int>", "map<text, int>"}
	for _, doc := range docs {
		err := ObjectMembers(doc, func(key, raw string, sc Scanned) {
			if wantSc := scannedOf(raw); sc != wantSc {
				t.Errorf("%s: %s scanned as %d, want %d", key, raw, sc, wantSc)
			}
			for _, name := range types {
				typ, err := ParseType(name)
				if err != nil {
					t.Fatal(err)
				}
				want, werr := typ.FromJSON(raw)
				got, gerr := typ.FromScanned(raw, sc)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || v(got) != v(want) {
					t.Errorf("%s %s: FromScanned %s, %v; FromJSON %s, %v", name, raw, v(got), gerr, v(want), werr)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scannedOf is what ObjectMembers must say of a well-formed value: a string without escapes of
// ASCII bytes, a number, or nothing.
func scannedOf(raw string) Scanned {
	switch c := raw[0]; {
	case c == '"':
		for i := 1; i < len(raw)-1; i++ {
			if raw[i] == '\\' || raw[i] >= utf8.RuneSelf {
				return ScannedOther
			}
		}
		return ScannedASCII
	case c == '-' || c >= '0' && c <= '9':
		return ScannedNumber
	}
	return ScannedOther
}

// FuzzFromScanned: for any document, every member's value gives FromScanned what FromJSON gives.
func FuzzFromScanned(f *testing.F) {
	for _, s := range []string{`{"a": "x", "b": 1, "c": "\u00e9", "d": "é", "e": -0.5e3, "f": [1], "g": "x\"y"}`, `{"t": "2024-01-02"}`} {
		f.Add(s)
	}
	types := []string{"text", "bigint", "decimal", "timestamp", "blob", "boolean", "list<int>"}
	f.Fuzz(func(t *testing.T, doc string) {
		_ = ObjectMembers(doc, func(key, raw string, sc Scanned) {
			for _, name := range types {
				typ, _ := ParseType(name)
				want, werr := typ.FromJSON(raw)
				got, gerr := typ.FromScanned(raw, sc)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || v(got) != v(want) {
					t.Fatalf("%s %q (scanned %d): FromScanned %s, %v; FromJSON %s, %v", name, raw, sc, v(got), gerr, v(want), werr)
				}
			}
		})
	})
}

// Cassandra orders float and double set elements and map keys as Java's Double.compare does:
// -0 before 0, NaN after every number and equal only to NaN. Each is an element of its own.
func TestSetsOfFloatsKeepNaNAndSignedZero(t *testing.T) {
	cases := []tcase{
		{"set<double>", `[1, "NaN", 2]`, `text:[1,2,"NaN"]`},
		{"set<double>", `["NaN", 1, "NaN"]`, `text:[1,"NaN"]`},
		{"set<double>", `[0.0, -0.0]`, `text:[-0,0]`},
		{"set<float>", `["NaN", "Infinity", 1, "-Infinity"]`, `text:["-Infinity",1,"Infinity","NaN"]`},
		{"map<double, int>", `{"NaN": 1, "0": 2, "-0": 3, "1": 4}`, `text:{"-0":3,"0":2,"1":4,"NaN":1}`},
	}
	checkParseText(t, cases)
}
