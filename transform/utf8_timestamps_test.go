package transform

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Functions that turn values into VARCHAR must never produce invalid UTF-8 (one such value makes
// the whole Parquet file unreadable). Text stays UTF-8 through reverse, substr, code and +, which
// work on characters; a blob's raw bytes that are not UTF-8 are a reject with code "encoding"
// wherever they would become text.
func TestMultiByteTextAndBlobsToVarchar(t *testing.T) {
	blob := pipeline.Bytes
	ok := []struct {
		expr string
		in   map[string]V
		want string
	}{
		{"reverse(s)", map[string]V{"s": txt("中文é😀a")}, "a😀é文中"},
		{"s.substr(1, 3)", map[string]V{"s": txt("中文éx")}, "文é"},
		{"s.substr(2)", map[string]V{"s": txt("中文éx")}, "éx"},
		{"code(s, channels)", map[string]V{"s": txt("微信")}, "wx"},
		{"s + '·' + s", map[string]V{"s": txt("中")}, "中·中"},
		{"reverse(bl)", map[string]V{"bl": blob("\xe4\xb8\xad\xe6\x96\x87")}, "文中"}, // a blob holding UTF-8
		{"bl.substr(0, 1)", map[string]V{"bl": blob("a\xff")}, "a"},                 // the part kept is UTF-8
		{"str(bl)", map[string]V{"bl": blob("abc")}, "abc"},
		{"bl :: VARCHAR", map[string]V{"bl": blob("中")}, "中"},
		{"md5(bl)", map[string]V{"bl": blob("\xff")}, "00594fd4f42ba43fc1ca0427a0576295"}, // digests take any bytes
	}
	dict := func(m *Mapping) {
		m.Target.Codes[0].Entries = append(m.Target.Codes[0].Entries, [2]string{"微信", "wx"})
	}
	for _, c := range ok {
		got, _, rerr := evalExpr(t, c.expr, c.in, dict)
		if rerr != nil || got.Str != c.want || got.Kind != pipeline.KindText {
			t.Errorf("%s %q: got %#v, %v; want text %q", c.expr, c.in, got, rerr, c.want)
		}
	}

	bad := []struct {
		expr string
		in   map[string]V
		msg  string
	}{
		{"reverse(bl)", map[string]V{"bl": blob("a\xff\xfe")}, "reverse(x): the blob is not UTF-8 text (invalid byte 0xff at byte 1)"},
		{"reverse(bl)", map[string]V{"bl": blob("\xe4\xb8")}, "invalid byte 0xe4 at byte 0"}, // a cut character
		{"bl.substr(1, 2)", map[string]V{"bl": blob("a\xffb")}, "substr(1, 2): the blob is not UTF-8"},
		{"bl.substr(0, 1)", map[string]V{"bl": blob("\xe4\xb8a")}, "substr(0, 1)"}, // the first byte of a cut character
		{"str(bl)", map[string]V{"bl": blob("DELIV\xff\xfeERED")}, "str(x): the blob is not UTF-8 text (invalid byte 0xff at byte 5)"},
		{"bl + 'x'", map[string]V{"bl": blob("\xff")}, "operator +"},
		{"s + bl", map[string]V{"s": txt("a"), "bl": blob("\x80")}, "operator +"},
		{"bl :: VARCHAR", map[string]V{"bl": blob("\xff")}, "a blob stored as VARCHAR"},
	}
	for _, c := range bad {
		_, col, rerr := evalExpr(t, c.expr, c.in)
		if rerr == nil || rerr.Code != pipeline.CodeEncoding || !strings.Contains(rerr.Message, c.msg) || rerr.Field != col.Name {
			t.Errorf("%s %q: got %v; want an encoding reject of %s containing %q", c.expr, c.in, rerr, col.Name, c.msg)
		}
	}
	// code(x) with on_missing_code: keep hands back the blob itself for a VARCHAR column
	keep := func(m *Mapping) { m.Target.OnMissingCode = "keep" }
	if _, _, rerr := evalExpr(t, "code(bl, channels)", map[string]V{"bl": blob("\xff")}, keep); rerr == nil || rerr.Code != pipeline.CodeEncoding {
		t.Errorf("code(bl) kept: %v; want an encoding reject", rerr)
	}
	if got, _, rerr := evalExpr(t, "code(bl, channels)", map[string]V{"bl": blob("taobao")}, keep); rerr != nil || got != txt("tb") {
		t.Errorf("code(bl) found: %v, %v", got, rerr)
	}
	// a blob carried over stays VARBINARY, whatever its bytes
	if got, col, rerr := evalExpr(t, "bl", map[string]V{"bl": blob("\xff")}); rerr != nil || got != blob("\xff") || col.Type != pipeline.TypeVarbinary {
		t.Errorf("carried blob: %v %v %v", got, col.Type, rerr)
	}
}

// Text cast to TIMESTAMP keeps every digit: before, it was truncated to the millisecond by
// time.Parse.
func TestCastToTimestampNeverRounds(t *testing.T) {
	got, _, rerr := evalExpr(t, "s :: TIMESTAMP", map[string]V{"s": txt("2024-01-01T00:00:12.345000000Z")})
	if rerr != nil || got != num(1704067212345) {
		t.Errorf("whole ms: %v %v", got, rerr)
	}
	_, _, rerr = evalExpr(t, "s :: TIMESTAMP", map[string]V{"s": txt("2024-01-01T00:00:12.345678901Z")})
	if rerr == nil || rerr.Code != pipeline.CodeType || !strings.Contains(rerr.Message, "sub-millisecond digits") {
		t.Errorf("sub-ms: %v", rerr)
	}
}

// source.timestamp_unit says how integer epochs in timestamp columns are read; Compile writes it
// into the source schema's types, which the sources parse.
func TestTimestampUnitMapping(t *testing.T) {
	const yml = `version: 1
source:
  timestamp_unit: s
  columns:
    id: bigint
    ts: timestamp
    tl: list<timestamp>
    tu: timestamp(us)
target:
  table: t
  primary_key: "[id]"
`
	m, err := Decode([]byte(yml), "units.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range p.Source() {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ", "); got != "bigint, timestamp(s), list<timestamp(s)>, timestamp(us)" {
		t.Errorf("source types: %s", got)
	}
	for _, name := range []string{"ts", "tu"} {
		if c := p.Target().Columns[p.Target().Index(name)]; c.Type != pipeline.TypeTimestamp {
			t.Errorf("%s: %s, want TIMESTAMP", name, c.Type)
		}
	}
	// the unit is part of the fingerprint: a resumed run cannot switch units half-way
	m2, _ := Decode([]byte(strings.Replace(yml, "timestamp_unit: s", "timestamp_unit: ms", 1)), "units.yaml")
	p2, err := Compile(m2, nil)
	if err != nil || p2.Fingerprint() == p.Fingerprint() {
		t.Errorf("fingerprint does not depend on the unit (%v)", err)
	}
	// compiling again against the program's own schema (report's alternatives) works
	if _, err := Compile(m, p.Source()); err != nil {
		t.Errorf("recompile: %v", err)
	}
	// a source with its own schema (Cassandra) has millisecond timestamps
	cass := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "ts", Type: "timestamp"}}
	mc := &Mapping{Version: 1, Source: SourceSpec{TimestampUnit: "s"}, Target: TargetSpec{Table: "t", PrimaryKey: "[id]", OnMissingCode: "reject"}}
	if _, err := Compile(mc, cass); err == nil || !strings.Contains(err.Error(), "remove source.timestamp_unit") {
		t.Errorf("cassandra schema with a unit: %v", err)
	}
	mc.Source.TimestampUnit = "ms"
	if _, err := Compile(mc, cass); err != nil {
		t.Errorf("ms is Cassandra's unit: %v", err)
	}
	mc.Source.Columns = pipeline.SourceSchema{{Name: "ts", Type: "timestamp"}}
	if _, err := Compile(mc, cass); err != nil {
		t.Errorf("ms with the column listed: %v", err)
	}
	mc.Source.Columns[0].Type = "timestamp(s)"
	if _, err := Compile(mc, cass); err == nil || !strings.Contains(err.Error(), "declared as timestamp(s) but the source has timestamp") {
		t.Errorf("a column's own unit against Cassandra: %v", err)
	}
	mc.Source.Columns[0].Type, mc.Source.TimestampUnit = "timestamp", "s"
	if _, err := Compile(mc, cass); err == nil || !strings.Contains(err.Error(), "remove source.timestamp_unit") || strings.Contains(err.Error(), "declared as") {
		t.Errorf("unit s with the column listed: %v", err)
	}

	me := decodeErr(t, strings.Replace(strings.Replace(yml, "timestamp_unit: s", "timestamp_unit: sec", 1), "timestamp(us)", "timestamp(ps)", 1))
	wantProblems(t, me, [][2]string{
		{"source.timestamp_unit", `want s, ms, us or ns (the unit of integer epochs in timestamp columns), found "sec"`},
		{"source.columns.tu", "timestamp(unit): want s, ms, us or ns"},
	})
}

func TestWithTimestampUnit(t *testing.T) {
	for in, want := range map[string]string{
		"timestamp":                              "timestamp(ns)",
		"map<timestamp,frozen<list<timestamp>>>": "map<timestamp(ns),frozen<list<timestamp(ns)>>>",
		"timestamp(ms)":                          "timestamp(ms)",
		"timestamp (ms)":                         "timestamp (ms)",
		"map<text, timestamp>":                   "map<text, timestamp(ns)>",
		"bigint":                                 "bigint",
		"tuple<timestamps_x,timestamp>":          "tuple<timestamps_x,timestamp(ns)>",
	} {
		if got := withTimestampUnit(in, "ns"); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// An integer text cast to TIMESTAMP is read as a timestamp column reads an integer epoch: in
// source.timestamp_unit, else milliseconds, where one that looks like another unit is a reject.
// Before, any integer was taken for milliseconds: epoch seconds landed in January 1970.
func TestCastIntegerTextToTimestampFollowsTheUnit(t *testing.T) {
	unit := func(u string) func(*Mapping) { return func(m *Mapping) { m.Source.TimestampUnit = u } }
	for _, c := range []struct {
		text, unit string
		want       int64
		reject     string // in the reject's message
	}{
		{"1704067200", "", 0, "set source.timestamp_unit"},
		{"1704067200000000", "", 0, "set source.timestamp_unit"},
		{"-1", "", 0, "set source.timestamp_unit"},
		{"1704067200000", "", 1704067200000, ""},
		{" 1704067200000 ", "", 1704067200000, ""},
		{"0", "", 0, ""},
		{"1704067200", "s", 1704067200000, ""},
		{"-1", "ms", -1, ""},
		{"1704067200", "ms", 1704067200, ""},
		{"1704067200000000", "us", 1704067200000, ""},
		{"1704067200000001", "us", 0, "sub-millisecond"},
		{"1704067200000000000", "ns", 1704067200000, ""},
		{"9223372036854776", "s", 0, "out of the TIMESTAMP range"},
	} {
		got, _, rerr := evalExpr(t, "s :: TIMESTAMP", map[string]V{"s": txt(c.text)}, unit(c.unit))
		if c.reject != "" {
			if rerr == nil || rerr.Code != pipeline.CodeType || !strings.Contains(rerr.Message, c.reject) {
				t.Errorf("%q (unit %q) :: TIMESTAMP = %v, %v; want a type reject saying %q", c.text, c.unit, got, rerr, c.reject)
			}
			continue
		}
		if rerr != nil || got != num(c.want) {
			t.Errorf("%q (unit %q) :: TIMESTAMP = %v, %v; want %d", c.text, c.unit, got, rerr, c.want)
		}
	}
}

// A reject's message quotes a long value cut at a character: cut at a byte count, the quote ended
// in an escaped byte ("中中\xe4..."), as if the input held a byte that is not UTF-8.
func TestRejectMessagesCutValuesAtACharacter(t *testing.T) {
	long := strings.Repeat("中", 30) // 90 bytes: the messages keep 64 or 200
	for _, c := range []struct {
		expr string
		in   map[string]V
	}{
		{"s.substr(0, 100)", map[string]V{"s": txt(long)}},
		{"s :: BIGINT", map[string]V{"s": txt(long)}},
		{"code(s, channels)", map[string]V{"s": txt(strings.Repeat("文", 70))}},
	} {
		_, _, rerr := evalExpr(t, c.expr, c.in)
		if rerr == nil {
			t.Errorf("%s: no reject", c.expr)
			continue
		}
		if strings.Contains(rerr.Message, `\x`) || !strings.Contains(rerr.Message, "...") {
			t.Errorf("%s: %s; want the value cut at a character, ending in ...", c.expr, rerr.Message)
		}
	}
}
