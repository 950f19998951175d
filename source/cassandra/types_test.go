package cassandra_test

import (
	"context"
	"math"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/source/cqlvalue"
)

// allTypes is a table with a column of every CQL type the mapping language lists.
var allTypes = []cqltest.Column{
	{Name: "id", Type: "int"},
	{Name: "c_text", Type: "text"}, {Name: "c_varchar", Type: "varchar"}, {Name: "c_ascii", Type: "ascii"},
	{Name: "c_bigint", Type: "bigint"}, {Name: "c_int", Type: "int"}, {Name: "c_smallint", Type: "smallint"},
	{Name: "c_tinyint", Type: "tinyint"}, {Name: "c_varint", Type: "varint"}, {Name: "c_boolean", Type: "boolean"},
	{Name: "c_float", Type: "float"}, {Name: "c_double", Type: "double"}, {Name: "c_decimal", Type: "decimal"},
	{Name: "c_timestamp", Type: "timestamp"}, {Name: "c_date", Type: "date"}, {Name: "c_time", Type: "time"},
	{Name: "c_uuid", Type: "uuid"}, {Name: "c_timeuuid", Type: "timeuuid"}, {Name: "c_blob", Type: "blob"},
	{Name: "c_inet", Type: "inet"}, {Name: "c_duration", Type: "duration"},
	{Name: "c_list", Type: "list<int>"}, {Name: "c_set", Type: "set<text>"}, {Name: "c_map", Type: "map<text, int>"},
	{Name: "c_frozen", Type: "frozen<list<frozen<set<int>>>>"}, {Name: "c_tuple", Type: "tuple<int, text, timestamp>"},
	{Name: "c_lts", Type: "list<timestamp>"}, {Name: "c_mdec", Type: "map<int, decimal>"},
	{Name: "c_sblob", Type: "set<blob>"}, {Name: "c_luuid", Type: "list<uuid>"}, {Name: "c_mdate", Type: "map<date, double>"},
}

type typeCase struct {
	col   string
	value any    // Go value inserted (nil: the column is not set)
	want  string // show() of the decoded value; "cql:TYPE:LITERAL" = what cqlvalue makes of LITERAL
}

func dec(s string) *inf.Dec {
	d, ok := new(inf.Dec).SetString(s)
	if !ok {
		panic(s)
	}
	return d
}

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

var typeRows = [][]typeCase{
	{ // typical values
		{"c_text", "hello", `text:"hello"`},
		{"c_varchar", "varchar value", `text:"varchar value"`},
		{"c_ascii", "plain ascii", `text:"plain ascii"`},
		{"c_bigint", int64(1234567890123), `int:"1234567890123"`},
		{"c_int", int32(42), `int:"42"`},
		{"c_smallint", int16(-300), `int:"-300"`},
		{"c_tinyint", int8(7), `int:"7"`},
		{"c_varint", big.NewInt(99), `int:"99"`},
		{"c_boolean", true, `bool:"true"`},
		{"c_float", float32(0.1), `float:"0.10000000149011612"`},
		{"c_double", 2.5, `float:"2.5"`},
		{"c_decimal", dec("12.340"), `decimal:"12.340"`},
		{"c_timestamp", time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC), `int:"1704164645678"`},
		{"c_date", time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), `int:"19724"`},
		{"c_time", 13*time.Hour + 14*time.Minute + 15*time.Second + 16, `int:"47655000000016"`},
		{"c_uuid", gocql.UUID{0x12, 0x3E, 0x45, 0x67, 0xE8, 0x9B, 0x12, 0xD3, 0xA4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}, `text:"123e4567-e89b-12d3-a456-426614174000"`},
		{"c_timeuuid", mustUUID("50554d6e-29bb-11e5-b345-feff819cdc9f"), `text:"50554d6e-29bb-11e5-b345-feff819cdc9f"`},
		{"c_blob", []byte{1, 2, 0xff}, `bytes:"\x01\x02\xff"`},
		{"c_inet", net.ParseIP("192.168.0.1"), `text:"192.168.0.1"`},
		{"c_duration", gocql.Duration{Months: 14, Days: 3, Nanoseconds: int64(4*time.Hour + 5*time.Minute + 6*time.Second + 7*time.Millisecond + 8*time.Microsecond + 9)}, `text:"1y2mo3d4h5m6s7ms8us9ns"`},
		{"c_list", []int{3, 1, 3}, "cql:list<int>:[3, 1, 3]"},
		{"c_set", []string{"b", "a"}, "cql:set<text>:{'a', 'b'}"},
		{"c_map", map[string]int{"b": 2, "a": 1}, "cql:map<text, int>:{'a': 1, 'b': 2}"},
		{"c_frozen", [][]int{{2, 1}, {}}, "cql:list<frozen<set<int>>>:[{1, 2}, {}]"},
		{"c_tuple", []any{int32(1), "x\"y", time.UnixMilli(-1500).UTC()}, `text:"[1,\"x\\\"y\",\"1969-12-31T23:59:58.500Z\"]"`},
		{"c_lts", []time.Time{time.UnixMilli(1704164645678), time.UnixMilli(-1)}, "cql:list<timestamp>:['2024-01-02 03:04:05.678000+0000', '1969-12-31T23:59:59.999Z']"},
		{"c_mdec", map[int]*inf.Dec{10: dec("1.50"), 9: dec("-0.001")}, "cql:map<int, decimal>:{9: -0.001, 10: 1.50}"},
		{"c_sblob", [][]byte{{0xab}, {}}, "cql:set<blob>:{0x, 0xab}"},
		{"c_luuid", []gocql.UUID{mustUUID("123e4567-e89b-12d3-a456-426614174000")}, "cql:list<uuid>:[123e4567-e89b-12d3-a456-426614174000]"},
		{"c_mdate", map[time.Time]float64{time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC): math.Inf(1)}, `cql:map<date, double>:{'1969-12-31': "Infinity"}`},
	},
	{ // every column null
	},
	{ // empty strings and blobs: not null
		{"c_text", "", `text:""`},
		{"c_varchar", "", `text:""`},
		{"c_ascii", "", `text:""`},
		{"c_blob", []byte{}, `bytes:""`},
		{"c_frozen", [][]int{}, "cql:list<frozen<set<int>>>:[]"},
		{"c_list", []int{}, "null"}, // an empty non-frozen collection is no cells: null
		{"c_tuple", []any{nil, "", nil}, `text:"[null,\"\",null]"`},
	},
	{ // unicode, negatives, pre-1970, values beyond int64
		{"c_text", "漢字 é 🎉 \"q\" \\ \n", `text:"漢字 é 🎉 \"q\" \\ \n"`},
		{"c_bigint", int64(math.MinInt64), `int:"-9223372036854775808"`},
		{"c_int", int32(math.MinInt32), `int:"-2147483648"`},
		{"c_smallint", int16(math.MinInt16), `int:"-32768"`},
		{"c_tinyint", int8(-128), `int:"-128"`},
		{"c_varint", bigInt("-123456789012345678901234567890"), `decimal:"-123456789012345678901234567890"`},
		{"c_float", float32(-1.5e-7), `float:"-1.500000053056283e-07"`},
		{"c_double", math.Inf(-1), `float:"-Inf"`},
		{"c_decimal", dec("-0.001"), `decimal:"-0.001"`},
		{"c_timestamp", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), `int:"-2208988800000"`},
		{"c_date", time.Date(1600, 3, 1, 0, 0, 0, 0, time.UTC), `int:"-135080"`},
		{"c_inet", net.ParseIP("2001:db8::1"), `text:"2001:db8::1"`},
		{"c_duration", gocql.Duration{Days: -3, Nanoseconds: -int64(90 * time.Minute)}, `text:"-3d1h30m"`},
		{"c_set", []string{"é", "a", "Z"}, "cql:set<text>:{'Z', 'a', 'é'}"},
		{"c_map", map[string]int{"k": -1}, `cql:map<text, int>:{"k": -1}`},
	},
	{ // extremes
		{"c_bigint", int64(math.MaxInt64), `int:"9223372036854775807"`},
		{"c_varint", bigInt("9223372036854775808"), `decimal:"9223372036854775808"`},
		{"c_double", math.NaN(), `float:"NaN"`},
		{"c_float", float32(math.Inf(1)), `float:"+Inf"`},
		{"c_decimal", dec("123456789012345678901234567890.123456789"), `decimal:"123456789012345678901234567890.123456789"`},
		{"c_timestamp", time.UnixMilli(-1).UTC(), `int:"-1"`},
		{"c_boolean", false, `bool:"false"`},
		{"c_inet", net.ParseIP("::ffff:10.0.0.1"), `text:"10.0.0.1"`}, // gocql sends a mapped address as IPv4
		{"c_duration", gocql.Duration{}, `text:"0s"`},
		{"c_text", strings.Repeat("x", 100000), `text:"` + strings.Repeat("x", 100000) + `"`},
	},
}

func mustUUID(s string) gocql.UUID {
	u, err := gocql.ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// expect resolves a typeCase's want against cqlvalue (the file source's reading of the literal).
func expect(t *testing.T, want string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(want, "cql:")
	if !ok {
		return want
	}
	i := strings.Index(rest, ">:")
	typ, lit := rest[:i+1], rest[i+2:]
	ct, err := cqlvalue.ParseType(typ)
	must(t, err)
	v, err := ct.ParseText(lit)
	if err != nil {
		t.Fatalf("cqlvalue %s %s: %v", typ, lit, err)
	}
	return show(v)
}

// TestDecodeEveryType inserts a row per typeRows entry and checks every decoded value; the
// collection values must be exactly what cqlvalue (the file source) makes of the same literal.
func TestDecodeEveryType(t *testing.T) {
	c := cassandratest.Open(t)
	must(t, c.CreateTable("types", "all", allTypes, []string{"id"}, nil))
	must(t, c.InsertMany("types", "all", len(typeRows), func(i int, row map[string]any) error {
		row["id"] = int32(i)
		for _, tc := range typeRows[i] {
			row[tc.col] = tc.value
		}
		return nil
	}))
	src := open(t, c, "types", "all", "splits=3&page_size=2")
	schema := src.Schema()
	if len(schema) != len(allTypes) || schema[0].Name != "id" {
		t.Fatalf("schema %v", schema)
	}
	for _, col := range allTypes[1:] {
		i := schema.Index(col.Name)
		if i < 0 {
			t.Fatalf("no column %s in %v", col.Name, schema)
		}
		n := strings.ReplaceAll(col.Type, "varchar", "text")
		if strings.HasPrefix(n, "tuple<") {
			n = "frozen<" + n + ">" // Cassandra 4 prints tuples frozen
		}
		if schema[i].Type != n {
			t.Errorf("column %s: type %q, want %q", col.Name, schema[i].Type, n)
		}
	}
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	got := map[int64][]pipeline.Value{}
	for _, b := range batches {
		for _, r := range b.Records {
			if r.Err != nil {
				t.Fatalf("%s: %v", b.Position(&r), r.Err)
			}
			got[r.Values[0].Num] = r.Values
		}
	}
	if len(got) != len(typeRows) {
		t.Fatalf("read %d rows, want %d", len(got), len(typeRows))
	}
	for i, cases := range typeRows {
		vals := got[int64(i)]
		set := map[string]bool{}
		for _, tc := range cases {
			set[tc.col] = true
			j := schema.Index(tc.col)
			if g, w := show(vals[j]), expect(t, tc.want); g != w {
				if len(g) > 200 {
					g, w = g[:200]+"...", w[:min(len(w), 200)]+"..."
				}
				t.Errorf("row %d %s: got %s, want %s", i, tc.col, g, w)
			}
		}
		for j, col := range schema[1:] {
			if !set[col.Name] && !vals[j+1].IsNull() {
				t.Errorf("row %d %s: got %s, want null", i, col.Name, show(vals[j+1]))
			}
		}
	}
}
