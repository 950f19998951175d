package transform

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// testSource is the source schema of the expression tests: one column of each kind.
var testSource = pipeline.SourceSchema{
	{Name: "id", Type: "bigint"},
	{Name: "s", Type: "text"},
	{Name: "n", Type: "bigint"},
	{Name: "i", Type: "int"},
	{Name: "ts", Type: "timestamp"},
	{Name: "d", Type: "decimal"},
	{Name: "b", Type: "boolean"},
	{Name: "f", Type: "double"},
	{Name: "bl", Type: "blob"},
	{Name: "v", Type: "varint"},
	{Name: "dt", Type: "date"},
	{Name: "l", Type: "list<int>"},
	{Name: "u", Type: "uuid"},
	{Name: "userid", Type: "text"},
}

func testMapping(exprs ...string) *Mapping {
	m := &Mapping{
		Version: 1,
		Source:  SourceSpec{Name: "test", Columns: testSource},
		Vars:    []Var{{Name: "numBuckets", Value: pipeline.Int(16)}, {Name: "prefix", Value: pipeline.Text("p-")}},
		Target: TargetSpec{
			Table:         "t",
			PrimaryKey:    "[id]",
			Codes:         []Dict{{Name: "channels", Entries: [][2]string{{"taobao", "tb"}, {"alipay", "ap"}, {"wechat", "wx"}, {"1", "one"}}}},
			OnMissingCode: "reject",
		},
	}
	for i, e := range exprs {
		m.Target.Columns = append(m.Target.Columns, ColumnExpr{Name: "x" + string(rune('0'+i)), Expr: e})
	}
	return m
}

// record builds a testSource record: id = 1 unless given, other columns null unless given.
func record(vals map[string]pipeline.Value) *pipeline.Record {
	r := &pipeline.Record{Values: make([]pipeline.Value, len(testSource))}
	r.Values[0] = pipeline.Int(1)
	for k, v := range vals {
		j := testSource.Index(k)
		if j < 0 {
			panic("no test column " + k)
		}
		r.Values[j] = v
	}
	return r
}

// evalExpr compiles `x0: expr` and applies it to a record with the given values.
func evalExpr(t testing.TB, expr string, vals map[string]pipeline.Value, edit ...func(*Mapping)) (pipeline.Value, pipeline.Column, *pipeline.RowError) {
	t.Helper()
	m := testMapping(expr)
	for _, f := range edit {
		f(m)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatalf("%s: compile: %v", expr, err)
	}
	out := make([]pipeline.Value, len(p.Target().Columns))
	e := p.NewEvaluator()
	rerr := e.ApplyKey(&pipeline.Batch{Stream: "test"}, record(vals), out)
	x := p.Target().Index("x0")
	return out[x], p.Target().Columns[x], rerr
}

type V = pipeline.Value

var (
	txt = pipeline.Text
	num = pipeline.Int
)

func TestFunctionGoldenVectors(t *testing.T) {
	cases := []struct {
		expr string
		in   map[string]V
		want V
	}{
		// digests: lowercase hex of the canonical form (printf abc | md5sum etc.)
		{"md5(s)", map[string]V{"s": txt("abc")}, txt("900150983cd24fb0d6963f7d28e17f72")},
		{"hash(s)", map[string]V{"s": txt("abc")}, txt("900150983cd24fb0d6963f7d28e17f72")},
		{"MD5(s)", map[string]V{"s": txt("abc")}, txt("900150983cd24fb0d6963f7d28e17f72")},
		{"md5(s)", map[string]V{"s": txt("")}, txt("d41d8cd98f00b204e9800998ecf8427e")},
		{"md5(s)", map[string]V{"s": txt("中文")}, txt("a7bac2239fcdcb3a067903d8077c4a07")},
		{"md5(n)", map[string]V{"n": num(1)}, txt("c4ca4238a0b923820dcc509a6f75849b")},               // md5("1")
		{"md5(ts)", map[string]V{"ts": num(1700000000000)}, txt("faa48af05e71e97fade8497f01a2bddf")}, // epoch ms
		{"sha1(s)", map[string]V{"s": txt("abc")}, txt("a9993e364706816aba3e25717850c26c9cd0d89d")},
		{"sha256(s)", map[string]V{"s": txt("abc")}, txt("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")},
		{"crc32(s)", map[string]V{"s": txt("abc")}, num(891568578)},
		{"crc32(n)", map[string]V{"n": num(1)}, num(2212294583)},
		{"crc32(s)", map[string]V{"s": txt("")}, num(0)},
		// murmur3 hashes the canonical string: murmur3(1) is the token of the text "1", not of
		// Cassandra's 4-byte int 1 (-4069959284402364209)
		{"murmur3(s)", map[string]V{"s": txt("a")}, num(-8839064797231613815)},
		{"murmur3(s)", map[string]V{"s": txt("hello")}, num(-3758069500696749310)},
		{"murmur3(s)", map[string]V{"s": txt("abc")}, num(-5434086359492102041)},
		{"murmur3(n)", map[string]V{"n": num(1)}, num(8213365047359667313)},
		// substr: Java semantics, characters are code points
		{"md5(s).substr(0,4)", map[string]V{"s": txt("abc")}, txt("9001")},
		{"md5(s).subStr(0,4)", map[string]V{"s": txt("abc")}, txt("9001")},
		{"md5(s).substr(30,32)", map[string]V{"s": txt("abc")}, txt("72")},
		{"md5(s).substr(3,5)", map[string]V{"s": txt("abc")}, txt("15")},
		{"sha256(s).substr(60,64)", map[string]V{"s": txt("abc")}, txt("15ad")},
		{"md5(s).substr(28)", map[string]V{"s": txt("abc")}, txt("7f72")},
		{"hash(s).substring(0,4)+s", map[string]V{"s": txt("abc")}, txt("9001abc")},
		{"hash(s).substring(0, 4) + s", map[string]V{"s": txt("user1")}, txt("24c9user1")},
		{"s.substring(1)", map[string]V{"s": txt("hello")}, txt("ello")},
		{"s.substr(1,3)", map[string]V{"s": txt("hello")}, txt("el")},
		{"substr(s, 1, 3)", map[string]V{"s": txt("hello")}, txt("el")},
		{"s.substr(0,0)", map[string]V{"s": txt("hello")}, txt("")},
		{"s.substr(5)", map[string]V{"s": txt("hello")}, txt("")},
		{"s.substr(5,5)", map[string]V{"s": txt("hello")}, txt("")},
		{"s.substr(0,5)", map[string]V{"s": txt("hello")}, txt("hello")},
		{"s.substr(1,3)", map[string]V{"s": txt("中文字符")}, txt("文字")},
		{"s.substr(0,2)", map[string]V{"s": txt("héllo")}, txt("hé")},
		{"s.substr(1,2)", map[string]V{"s": txt("a😀b")}, txt("😀")},
		{"s.substr(2)", map[string]V{"s": txt("a😀b")}, txt("b")},
		{"s.substr(i, 3)", map[string]V{"s": txt("hello"), "i": num(1)}, txt("el")},
		{"n.substr(0,2)", map[string]V{"n": num(12345)}, txt("12")},
		// reverse by characters
		{"reverse(s)", map[string]V{"s": txt("abc")}, txt("cba")},
		{"reverse(s)", map[string]V{"s": txt("中文")}, txt("文中")},
		{"reverse(s)", map[string]V{"s": txt("a😀b")}, txt("b😀a")},
		{"reverse(s)", map[string]V{"s": txt("")}, txt("")},
		{"reverse(n)", map[string]V{"n": num(12345)}, txt("54321")},
		{"reverse(n)", map[string]V{"n": num(1000)}, txt("0001")},
		{"reverse(reverse(s))", map[string]V{"s": txt("héllo wörld")}, txt("héllo wörld")},
		// + concatenates when a side is text, adds integers
		{"s + n", map[string]V{"s": txt("a"), "n": num(1)}, txt("a1")},
		{"n + s", map[string]V{"s": txt("a"), "n": num(-1)}, txt("-1a")},
		{"'x' + s + 'y'", map[string]V{"s": txt("-")}, txt("x-y")},
		{"prefix + s", map[string]V{"s": txt("z")}, txt("p-z")},
		{"s + b", map[string]V{"s": txt("is "), "b": pipeline.Bool(true)}, txt("is true")},
		{"n + i", map[string]V{"n": num(40), "i": num(2)}, num(42)},
		{"n + 1", map[string]V{"n": num(math.MaxInt64 - 1)}, num(math.MaxInt64)},
		{"n + -5", map[string]V{"n": num(3)}, num(-2)},
		// % never negative, / floors
		{"n % 16", map[string]V{"n": num(35)}, num(3)},
		{"n % 16", map[string]V{"n": num(-1)}, num(15)},
		{"n % 16", map[string]V{"n": num(-17)}, num(15)},
		{"n % 16", map[string]V{"n": num(-16)}, num(0)},
		{"n % -5", map[string]V{"n": num(7)}, num(2)},
		{"n % -5", map[string]V{"n": num(-7)}, num(3)},
		{"n % numBuckets", map[string]V{"n": num(33)}, num(1)},
		{"ts % 16", map[string]V{"ts": num(1700000000007)}, num(7)},
		{"ts % numBuckets", map[string]V{"ts": num(1705786502068)}, num(4)},
		{"dt % 7", map[string]V{"dt": num(19000)}, num(2)},
		{"n % i", map[string]V{"n": num(math.MinInt64), "i": num(-1)}, num(0)},
		{"n / 2", map[string]V{"n": num(7)}, num(3)},
		{"n / 2", map[string]V{"n": num(-7)}, num(-4)},
		{"n / -2", map[string]V{"n": num(7)}, num(-4)},
		{"n / -2", map[string]V{"n": num(-7)}, num(3)},
		{"n / 2", map[string]V{"n": num(-8)}, num(-4)},
		{"ts / 1000", map[string]V{"ts": num(1700000000999)}, num(1700000000)},
		{"n * 3", map[string]V{"n": num(5)}, num(15)},
		{"n * -3", map[string]V{"n": num(5)}, num(-15)},
		{"n * 2 + 1", map[string]V{"n": num(5)}, num(11)},
		{"n * (2 + 1)", map[string]V{"n": num(5)}, num(15)},
		{"n * -1", map[string]V{"n": num(math.MaxInt64)}, num(-math.MaxInt64)},
		// parsing and formatting
		{"long(s)", map[string]V{"s": txt("007")}, num(7)},
		{"long(s)", map[string]V{"s": txt("2015122410")}, num(2015122410)},
		{"Long(s)", map[string]V{"s": txt("-42")}, num(-42)},
		{"long(n)", map[string]V{"n": num(9)}, num(9)},
		{"long(s) % 10", map[string]V{"s": txt("2015122410")}, num(0)},
		{"int(s)", map[string]V{"s": txt("42")}, num(42)},
		{"str(n)", map[string]V{"n": num(42)}, txt("42")},
		{"str(b)", map[string]V{"b": pipeline.Bool(false)}, txt("false")},
		{"str(ts)", map[string]V{"ts": num(1700000000000)}, txt("1700000000000")},
		{"str(f)", map[string]V{"f": pipeline.Float(1.5)}, txt("1.5")},
		{"str(u)", map[string]V{"u": txt("123e4567-e89b-12d3-a456-426614174000")}, txt("123e4567-e89b-12d3-a456-426614174000")},
		// dictionaries
		{"code(s, channels)", map[string]V{"s": txt("taobao")}, txt("tb")},
		{"code(s, channels)", map[string]V{"s": txt("wechat")}, txt("wx")},
		{"code(n, channels)", map[string]V{"n": num(1)}, txt("one")},
		{"CODE(s, Channels)", map[string]V{"s": txt("alipay")}, txt("ap")},
		// literals and casts
		{"42", nil, num(42)},
		{"'it''s'", nil, txt("it's")},
		{"s :: BIGINT", map[string]V{"s": txt("42")}, num(42)},
		{"n :: VARCHAR", map[string]V{"n": num(42)}, txt("42")},
		{"s :: DECIMAL(10,2)", map[string]V{"s": txt("1.5")}, pipeline.Decimal("1.5")},
		{"s :: BOOLEAN", map[string]V{"s": txt("true")}, pipeline.Bool(true)},
		{"s :: DOUBLE", map[string]V{"s": txt("2.5")}, pipeline.Float(2.5)},
		{"s :: TIMESTAMP", map[string]V{"s": txt("1970-01-01T00:00:01Z")}, num(1000)},
		{"s :: DATE", map[string]V{"s": txt("1970-01-11")}, num(10)},
		{"(ts % 16) :: TINYINT", map[string]V{"ts": num(1700000000007)}, num(7)},
		{"bl :: VARCHAR", map[string]V{"bl": pipeline.Bytes("raw")}, txt("raw")},
		// nulls propagate
		{"md5(s)", nil, pipeline.Null},
		{"s + 'x'", nil, pipeline.Null},
		{"n % 16", nil, pipeline.Null},
		{"code(s, channels)", nil, pipeline.Null},
		{"reverse(s).substr(0,1)", nil, pipeline.Null},
	}
	for _, c := range cases {
		got, _, rerr := evalExpr(t, c.expr, c.in)
		if rerr != nil {
			t.Errorf("%s %v: unexpected reject %v", c.expr, c.in, rerr)
			continue
		}
		if !got.Equal(c.want) { // a decimal may carry its number too
			t.Errorf("%s %v = %#v, want %#v", c.expr, c.in, got, c.want)
		}
	}
}

func TestFunctionRowErrors(t *testing.T) {
	cases := []struct {
		expr string
		in   map[string]V
		code string
		msg  string // substring of the message
	}{
		{"s.substr(0,6)", map[string]V{"s": txt("hello")}, pipeline.CodeEval, "end index 6 is beyond the 5 characters"},
		{"s.substr(6)", map[string]V{"s": txt("hello")}, pipeline.CodeEval, "begin index 6 is beyond the 5 characters"},
		{"s.substr(0,3)", map[string]V{"s": txt("中文")}, pipeline.CodeEval, "beyond the 2 characters"},
		{"s.substr(i, 1)", map[string]V{"s": txt("hello"), "i": num(2)}, pipeline.CodeEval, "end index 1 is before begin index 2"},
		{"s.substr(i)", map[string]V{"s": txt("hello"), "i": num(-1)}, pipeline.CodeEval, "negative"},
		{"n + 1", map[string]V{"n": num(math.MaxInt64)}, pipeline.CodeEval, "overflow"},
		{"n + -1", map[string]V{"n": num(math.MinInt64)}, pipeline.CodeEval, "overflow"},
		{"n * 2", map[string]V{"n": num(math.MaxInt64)}, pipeline.CodeEval, "overflow"},
		{"n * -1", map[string]V{"n": num(math.MinInt64)}, pipeline.CodeEval, "overflow"},
		{"n / i", map[string]V{"n": num(math.MinInt64), "i": num(-1)}, pipeline.CodeEval, "overflow"},
		{"n % i", map[string]V{"n": num(5), "i": num(0)}, pipeline.CodeEval, "modulo by zero"},
		{"n / i", map[string]V{"n": num(5), "i": num(0)}, pipeline.CodeEval, "division by zero"},
		{"long(s)", map[string]V{"s": txt("x")}, pipeline.CodeEval, `long("x"): not a 64-bit integer`},
		{"long(s)", map[string]V{"s": txt("")}, pipeline.CodeEval, "not a 64-bit integer"},
		{"long(s)", map[string]V{"s": txt("1.5")}, pipeline.CodeEval, "not a 64-bit integer"},
		{"int(s)", map[string]V{"s": txt("3000000000")}, pipeline.CodeEval, "out of the 32-bit range"},
		{"code(s, channels)", map[string]V{"s": txt("paypal")}, pipeline.CodeDictMiss, `value "paypal" is not in dictionary "channels"`},
		{"s :: BIGINT", map[string]V{"s": txt("abc")}, pipeline.CodeType, `"abc" is not a BIGINT value`},
		// a varint beyond 64 bits: said to be too large, with the type that holds it
		{"s :: BIGINT", map[string]V{"s": txt("123456789012345678901234567890")}, pipeline.CodeType,
			`"123456789012345678901234567890" is out of the BIGINT range: cast the column to DECIMAL(38,0) to keep it`},
		{"v :: INTEGER", map[string]V{"v": pipeline.Decimal("-99999999999999999999")}, pipeline.CodeType,
			`"-99999999999999999999" is out of the INTEGER range: cast the column to DECIMAL(38,0) to keep it`},
		{"n :: INTEGER", map[string]V{"n": num(3_000_000_000)}, pipeline.CodeType, "out of the INTEGER range"},
		{"s :: BOOLEAN", map[string]V{"s": txt("yes")}, pipeline.CodeType, "not a BOOLEAN"},
		{"s :: DECIMAL(5,2)", map[string]V{"s": txt("1234.5")}, pipeline.CodeType, "has 4 integer digits"},
		{"s :: DECIMAL(5,2)", map[string]V{"s": txt("1.234")}, pipeline.CodeType, "has 3 fraction digits"},
		{"v % 2", map[string]V{"v": pipeline.Decimal("123456789012345678901234567890")}, pipeline.CodeType, "not a 64-bit integer"},
	}
	for _, c := range cases {
		_, col, rerr := evalExpr(t, c.expr, c.in)
		if rerr == nil {
			t.Errorf("%s %v: want reject %s", c.expr, c.in, c.code)
			continue
		}
		if rerr.Code != c.code || !strings.Contains(rerr.Message, c.msg) || rerr.Field != col.Name {
			t.Errorf("%s %v: got %s (field %q), want code %s, field %q, message containing %q", c.expr, c.in, rerr, rerr.Field, c.code, col.Name, c.msg)
		}
	}
}

func TestCodeKeepMissing(t *testing.T) {
	keep := func(m *Mapping) { m.Target.OnMissingCode = "keep" }
	got, _, rerr := evalExpr(t, "code(s, channels)", map[string]V{"s": txt("paypal")}, keep)
	if rerr != nil || got != txt("paypal") {
		t.Fatalf("keep: got %v, %v; want paypal", got, rerr)
	}
	// a kept non-text value is stored as its canonical text in the VARCHAR column
	got, _, rerr = evalExpr(t, "code(n, channels)", map[string]V{"n": num(7)}, keep)
	if rerr != nil || got != txt("7") {
		t.Fatalf("keep int: got %#v, %v; want '7'", got, rerr)
	}
}

// A value the dictionary lacks, kept as it is, that equals another value's code would be that
// value once written: two source keys one target key (the last write wins), a delete of it
// deleting the other's row. It is rejected instead, naming the value it would pass for.
func TestCodeKeepMissingEqualToACode(t *testing.T) {
	keep := func(m *Mapping) { m.Target.OnMissingCode = "keep" }
	for _, c := range []struct {
		expr string
		in   map[string]V
		of   string
	}{
		{"code(s, channels)", map[string]V{"s": txt("tb")}, `"taobao"`},
		{"code(s, channels) + '-' + id", map[string]V{"s": txt("one")}, `"1"`},
	} {
		_, col, rerr := evalExpr(t, c.expr, c.in, keep)
		if rerr == nil || rerr.Code != pipeline.CodeDictMiss || rerr.Field != col.Name || !strings.Contains(rerr.Message, c.of) {
			t.Errorf("%s %v: got %v, want a %s reject of field %s naming %s", c.expr, c.in, rerr, pipeline.CodeDictMiss, col.Name, c.of)
		}
	}
	// a value that is a key keeps its code, even when it also is a code
	got, _, rerr := evalExpr(t, "code(s, channels)", map[string]V{"s": txt("taobao")}, keep)
	if rerr != nil || got != txt("tb") {
		t.Fatalf("taobao: got %v, %v; want tb", got, rerr)
	}
}

func TestTypeInference(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"md5(s)", "VARCHAR"}, {"hash(n)", "VARCHAR"}, {"sha1(s)", "VARCHAR"}, {"sha256(s)", "VARCHAR"},
		{"crc32(s)", "BIGINT"}, {"murmur3(s)", "BIGINT"}, {"md5(s).substr(0,4)", "VARCHAR"},
		{"reverse(n)", "VARCHAR"}, {"s + n", "VARCHAR"}, {"n + i", "BIGINT"}, {"ts % 16", "BIGINT"},
		{"n / 2", "BIGINT"}, {"n * 2", "BIGINT"}, {"long(s)", "BIGINT"}, {"int(s)", "INTEGER"},
		{"str(n)", "VARCHAR"}, {"code(s, channels)", "VARCHAR"}, {"random(10)", "BIGINT"},
		{"s", "VARCHAR"}, {"n", "BIGINT"}, {"i", "INTEGER"}, {"ts", "TIMESTAMP"}, {"d", "DECIMAL(38,18)"},
		{"b", "BOOLEAN"}, {"f", "DOUBLE"}, {"bl", "VARBINARY"}, {"v", "BIGINT"}, {"dt", "DATE"},
		{"l", "VARCHAR"}, {"u", "VARCHAR"}, {"numBuckets", "BIGINT"}, {"prefix", "VARCHAR"},
		{"'a'", "VARCHAR"}, {"1", "BIGINT"},
		{"s :: BIGINT", "BIGINT"}, {"n :: varchar", "VARCHAR"}, {"d :: DECIMAL(20,4)", "DECIMAL(20,4)"},
		{"ts % 16 :: TINYINT", "TINYINT"}, {"n :: INT", "INTEGER"}, {"s :: TEXT", "VARCHAR"},
		{"l :: JSON", "JSON"}, {"s :: SMALLINT", "SMALLINT"}, {"n :: DOUBLE", "DOUBLE"}, {"f :: FLOAT", "FLOAT"},
	}
	for _, c := range cases {
		p, err := Compile(testMapping(c.expr), nil)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		col := p.Target().Columns[p.Target().Index("x0")]
		if got := col.SQLType(); got != c.want {
			t.Errorf("type of %s = %s, want %s", c.expr, got, c.want)
		}
	}
}

func TestCarriedOverTypes(t *testing.T) {
	p, err := Compile(testMapping(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id": "BIGINT", "s": "VARCHAR", "n": "BIGINT", "i": "INTEGER", "ts": "TIMESTAMP",
		"d": "DECIMAL(38,18)", "b": "BOOLEAN", "f": "DOUBLE", "bl": "VARBINARY", "v": "BIGINT", "dt": "DATE",
		"l": "VARCHAR", "u": "VARCHAR", "userid": "VARCHAR"}
	for _, c := range p.Target().Columns {
		if want[c.Name] != c.SQLType() {
			t.Errorf("%s: %s, want %s", c.Name, c.SQLType(), want[c.Name])
		}
	}
	more := map[string]string{"ascii": "VARCHAR", "varchar": "VARCHAR", "timeuuid": "VARCHAR", "inet": "VARCHAR",
		"smallint": "SMALLINT", "tinyint": "TINYINT", "float": "FLOAT", "set<text>": "VARCHAR",
		"map<text, frozen<list<int>>>": "VARCHAR", "frozen<list<int>>": "VARCHAR", "counter": "BIGINT"}
	for cql, w := range more {
		if msg := checkCQL(cql); msg != "" {
			t.Errorf("%s: %s", cql, msg)
		}
		if got, _ := lindormType(cql); got.String() != w {
			t.Errorf("%s -> %s, want %s", cql, got, w)
		}
	}
	for _, bad := range []string{"strin", "list<>", "map<int>", "list<int", "list", "list<int>>"} {
		if checkCQL(bad) == "" {
			t.Errorf("checkCQL(%q) accepted a bad type", bad)
		}
	}
}

// A carried-over varint beyond int64 and a decimal beyond the default DECIMAL(38,18) are
// rejected with code type, naming the column.
func TestCarriedOverConversionErrors(t *testing.T) {
	p, err := Compile(testMapping(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	for col, v := range map[string]V{
		"v": pipeline.Decimal("123456789012345678901234567890"),
		"d": pipeline.Decimal("1" + strings.Repeat("0", 25)),
	} {
		rerr := e.Apply(nil, record(map[string]V{col: v}), out)
		if rerr == nil || rerr.Code != pipeline.CodeType || rerr.Field != col {
			t.Errorf("%s=%v: got %v, want a type reject on %s", col, v, rerr, col)
		}
	}
	ok := map[string]V{"v": num(5), "d": pipeline.Decimal("-12.340"), "l": txt("[1,2]"), "bl": pipeline.Bytes("\x00\xff")}
	if rerr := e.Apply(nil, record(ok), out); rerr != nil {
		t.Fatal(rerr)
	}
	for col, v := range ok {
		if got := out[p.Target().Index(col)]; !got.Equal(v) {
			t.Errorf("%s: %#v, want %#v", col, got, v)
		}
	}
}

func TestCheckDecimal(t *testing.T) {
	cases := []struct {
		s    string
		p, c int
		ok   bool
	}{
		{"0", 38, 18, true}, {"-12.340", 5, 2, true}, {"123.45", 5, 2, true}, {"1234.5", 5, 2, false},
		{"0.001", 5, 2, false}, {"1.50", 3, 1, true}, {"1E+3", 4, 0, true}, {"1E+3", 3, 0, false},
		{"1.5E-1", 3, 2, true}, {"1.5E-2", 3, 2, false}, {"000123", 3, 0, true}, {".5", 2, 1, true},
		{"abc", 38, 18, false}, {"", 38, 18, false}, {"1.2.3", 38, 18, false}, {"+7", 1, 0, true},
		{"0.000", 1, 0, true},
	}
	for _, c := range cases {
		if got := checkDecimal(c.s, c.p, c.c) == ""; got != c.ok {
			t.Errorf("checkDecimal(%q, %d, %d) ok=%v, want %v (%s)", c.s, c.p, c.c, got, c.ok, checkDecimal(c.s, c.p, c.c))
		}
	}
}

// The digest memo of an evaluator never serves a stale digest: repeated, alternating and long
// inputs, two digest call sites in one row, and an integer input canonicalised into scratch.
func TestDigestMemo(t *testing.T) {
	p, err := Compile(testMapping("md5(s).substr(0, 6)", "sha1(userid)", "md5(id)"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator()
	out := make([]pipeline.Value, len(p.Target().Columns))
	long := strings.Repeat("x", maxMemoInput+5)
	inputs := []string{"a", "a", "b", "a", long, long, long + "y", "", "a"}
	for i, s := range inputs {
		u := inputs[len(inputs)-1-i]
		if rerr := e.Apply(nil, record(map[string]V{"s": txt(s), "userid": txt(u), "id": num(int64(i % 2))}), out); rerr != nil {
			t.Fatal(rerr)
		}
		md5s := md5.Sum([]byte(s))
		sha := sha1.Sum([]byte(u))
		idSum := md5.Sum([]byte(strconv.Itoa(i % 2)))
		for col, want := range map[string]string{
			"x0": hex.EncodeToString(md5s[:])[:6], "x1": hex.EncodeToString(sha[:]), "x2": hex.EncodeToString(idSum[:]),
		} {
			if got := out[p.Target().Index(col)].Str; got != want {
				t.Errorf("row %d (%q, %q): %s = %q, want %q", i, s, u, col, got, want)
			}
		}
	}
}

// decimalFits (the cast's check of a decimal the source decoded) agrees with checkDecimal on
// the same number's text.
func TestDecimalFitsMatchesText(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 20000; n++ {
		u := rng.Int64N(1_000_000_000_000) - 500_000_000_000
		if n%3 == 0 {
			u = int64(rng.Uint64())
		}
		if n%5 == 0 {
			u = u / 1000 * 1000 // trailing zeros
		}
		sc := rng.IntN(25)
		p := 1 + rng.IntN(38)
		s := rng.IntN(p + 1)
		text := decimalText(u, sc)
		if got, want := decimalFits(u, sc, p, s), checkDecimal(text, p, s) == ""; got != want {
			t.Fatalf("%d scale %d (%s) in DECIMAL(%d,%d): decimalFits %v, checkDecimal %v", u, sc, text, p, s, got, want)
		}
	}
	// every number of digits at its edges (10^k - 1, 10^k, 10^k + 1, either sign), every scale
	// and every DECIMAL(p,s) up to p = 38
	edges := []int64{math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for k, x := 0, int64(1); k <= 18; k, x = k+1, x*10 {
		edges = append(edges, x-1, x, x+1, -x+1, -x, -x-1, x*7)
	}
	for _, u := range edges {
		for sc := 0; sc <= 24; sc++ {
			text := decimalText(u, sc)
			for p := 1; p <= 38; p++ {
				for s := 0; s <= p; s++ {
					if got, want := decimalFits(u, sc, p, s), checkDecimal(text, p, s) == ""; got != want {
						t.Fatalf("%d scale %d (%s) in DECIMAL(%d,%d): decimalFits %v, checkDecimal %v", u, sc, text, p, s, got, want)
					}
				}
			}
		}
	}
}

// decimalText writes unscaled × 10^-scale in plain notation.
func decimalText(u int64, scale int) string {
	neg := u < 0
	m := uint64(u)
	if neg {
		m = -m
	}
	d := strconv.FormatUint(m, 10)
	for len(d) <= scale {
		d = "0" + d
	}
	if scale > 0 {
		d = d[:len(d)-scale] + "." + d[len(d)-scale:]
	}
	if neg {
		d = "-" + d
	}
	return d
}
