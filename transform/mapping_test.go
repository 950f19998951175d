package transform

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

func decodeErr(t *testing.T, yml string) *MappingError {
	t.Helper()
	_, err := Decode([]byte(yml), "test.yaml")
	if err == nil {
		t.Fatalf("decode accepted:\n%s", yml)
	}
	var me *MappingError
	if !errors.As(err, &me) {
		t.Fatalf("error %T is not a *MappingError: %v", err, err)
	}
	return me
}

// wantProblems checks that every (path, message fragment) is reported, and nothing else.
func wantProblems(t *testing.T, me *MappingError, want [][2]string) {
	t.Helper()
	used := make([]bool, len(me.Problems))
	for _, w := range want {
		found := false
		for i, p := range me.Problems {
			if !used[i] && p.Path == w[0] && strings.Contains(p.Message, w[1]) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing problem %s: ...%s...", w[0], w[1])
		}
	}
	for i, p := range me.Problems {
		if !used[i] {
			t.Errorf("unexpected problem %s", p)
		}
	}
	if t.Failed() {
		t.Logf("all problems:\n%v", me)
	}
}

func TestDecodeReportsAllProblems(t *testing.T) {
	me := decodeErr(t, `version: 2
source:
  name: shop.orders
  colums: {}
  columns:
    userid: text
    orderid: bigint
    status: strin
vars:
  n: 16
target:
  table: orders
  primary_key: "[md5(userid).substr(0,4)][md6(userid)][nosuch][userid % n][orderid][userid][x]"
  columns:
    a: code(userid, nodict)
    b: userid % 2
    c: userid + undefinedvar
    pk: md5(
    x: "'fine'"
  exclude: [ghost]
  on_missing_code: maybe
  option: {}
regions:
  count: 4
  size: 8GiB
`)
	wantProblems(t, me, [][2]string{
		{"version", "unsupported version 2"},
		{"source.colums", `unknown field "colums"`},
		{"source.columns.status", `unknown type 'strin'`},
		{"target.option", `unknown field "option"`},
		{"target.on_missing_code", `want reject or keep, found "maybe"`},
		{"regions", "set only one of count, size and split_keys"},
		{"target.exclude[0]", `"ghost" is not a source column`},
		{"target.columns.pk", "at column 5: expected a value"},
		{"target.primary_key", "7 key columns: Lindorm allows at most 5"},
		{"target.primary_key[1]", `unknown function "md6"`},
		{"target.primary_key[2]", `unknown column "nosuch"`},
		{"target.primary_key[3]", "operator % needs integers, but its left side is VARCHAR"},
		{"target.columns.a", `unknown dictionary "nodict"`},
		{"target.columns.b", "operator % needs integers, but its left side is VARCHAR"},
		{"target.columns.c", `unknown column "undefinedvar"`},
	})
	// one per line, with the line numbers of the file
	msg := me.Error()
	lines := strings.Split(msg, "\n")
	if len(lines) != len(me.Problems)+1 || !strings.HasPrefix(lines[0], "test.yaml: 15 problems") {
		t.Errorf("Error() = %s", msg)
	}
	if !strings.Contains(msg, `target.primary_key[1]: unknown function "md6": did you mean md5? (functions: `) || !strings.Contains(msg, "(line 13)") {
		t.Errorf("Error() lacks the path, message or line:\n%s", msg)
	}
}

const goodHead = `version: 1
source:
  columns:
    userid: text
    orderid: bigint
    blob: blob
    tags: list<text>
    ts: timestamp
`

func TestDecodeKeyRules(t *testing.T) {
	cases := []struct {
		body string
		want [][2]string
	}{
		{`target: {table: t, primary_key: "[blob][userid]"}`, [][2]string{{"target.primary_key[0]", "VARBINARY only as the last key column"}}},
		{`target: {table: t, primary_key: "[tags :: JSON]"}`, [][2]string{{"target.primary_key[0]", "JSON"}}},
		{`target: {table: t, primary_key: "[userid][orderid][ts][blob][tags][userid AS u2]"}`, [][2]string{{"target.primary_key", "6 key columns"}, {"target.primary_key[3]", "VARBINARY only as the last"}}},
		{`target: {table: t, primary_key: "[userid][userid]"}`, [][2]string{{"target.primary_key[1]", "already key element 0"}}},
		{`target: {table: t, primary_key: "[md5(userid) AS orderid]"}`, [][2]string{{"source.columns.orderid", `duplicate target column name "orderid"`}}},
		{`target: {table: t, primary_key: "[userid]", columns: {OrderID: orderid}}`, [][2]string{{"source.columns.orderid", `duplicate target column name "orderid"`}}},
		{`target: {table: t, primary_key: "[a]", columns: {a: b + 'x', b: a + 'y'}}`, [][2]string{{"target.columns.a", "circular definition: a -> b -> a"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nvars: {userid: 1}", [][2]string{{"vars.userid", "has the name of a source column"}}},
		{`target: {table: t, primary_key: "[userid]", exclude: [userid]}`, [][2]string{{"target.primary_key[0]", "listed in target.exclude"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nregions: {count: 2, split_keys: [a]}", [][2]string{{"regions", "only one"}}},
		{`target: {table: t, primary_key: "[orderid]"}` + "\nregions: {split_keys: [10, 5, x]}", [][2]string{
			{"regions.split_keys[1]", `split keys must be strictly increasing: "5" follows "10"`},
			{"regions.split_keys[2]", `"x" is not a BIGINT value`}}},
		{`target: {table: t, primary_key: "[orderid DESC]"}` + "\nregions: {split_keys: [1, 5]}", [][2]string{
			{"regions.split_keys[1]", "strictly decreasing (the first key column is DESC)"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nregions: {size: 8G}", [][2]string{{"regions.size", "ambiguous"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nregions: {count: 0}", [][2]string{{"regions.count", "from 1"}}},
		{`target: {table: t, primary_key: "[userid]", options: {SPLITKEYS: "a"}}`, [][2]string{{"target.options.SPLITKEYS", "regions: section"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nregions: {split_keys: ['a,b', " + `"m\\'); DROP TABLE canary; -- "]}`, [][2]string{
			{"regions.split_keys[0]", "a comma (SPLITKEYS separates"}, {"regions.split_keys[1]", "a backslash"}}},
		{`target: {table: t, primary_key: "[userid]", options: {COMMENT: "x\\'); DROP TABLE canary; -- "}}`, [][2]string{{"target.options.COMMENT", "holds a backslash"}}},
		{`target: {table: t, primary_key: "[userid]", options: {TTL: 7d}}`, [][2]string{{"target.options.TTL", "a whole number of seconds"}}},
		{`target: {table: t, primary_key: "[userid]", options: {ttl: "30 days"}}`, [][2]string{{"target.options.ttl", "a whole number of seconds"}}},
		{`target: {table: t, primary_key: "[userid]", options: {TTL: 0}}`, [][2]string{{"target.options.TTL", "a whole number of seconds"}}},
		{`target: {table: t, primary_key: "[userid]", options: {"COMPRESSION/*": ZSTD}}`, [][2]string{{"target.options.COMPRESSION/*", "not an option name ddl.sql can write"}}},
		{`target: {table: t, primary_key: "[userid]", options: {"storage-policy": HOT}}`, [][2]string{{"target.options.storage-policy", "not an option name ddl.sql can write"}}},
		{`target: {table: t, primary_key: "[random(n)]"}` + "\nvars: {n: x}", [][2]string{{"target.primary_key[0]", "positive integer constant"}}},
		{`target: {table: t, primary_key: "[orderid + 1 :: BOOLEAN]"}`, [][2]string{{"target.primary_key[0]", "cannot convert BIGINT to BOOLEAN"}}},
		{`target: {table: t, primary_key: "[userid.substr(3,1)]"}`, [][2]string{{"target.primary_key[0]", "want 0 <= begin <= end"}}},
		{`target: {table: t, primary_key: "[orderid / 0]"}`, [][2]string{{"target.primary_key[0]", "division by zero"}}},
		{`target: {table: t, primary_key: "[md5(userid, orderid)]"}`, [][2]string{{"target.primary_key[0]", "wrong number of arguments, want md5(x)"}}},
		{`target: {table: t, primary_key: "[blob + 1]"}`, [][2]string{{"target.primary_key[0]", "operator + adds integers or concatenates text, found VARBINARY + BIGINT"}}},
		{`target: {table: t, primary_key: "[code(userid, 'x')]"}`, [][2]string{{"target.primary_key[0]", "names a dictionary"}}},
		{`target: {table: "shop/orders", primary_key: "[userid]"}`, [][2]string{{"target.table", "letters, digits, '-', '_' and '.'"}}},
		{`target: {table: "-orders", primary_key: "[userid]"}`, [][2]string{{"target.table", "not starting with '-' or '.'"}}},
		{`target: {table: "bestellungen_ä", primary_key: "[userid]"}`, [][2]string{{"target.table", "letters, digits, '-', '_' and '.'"}}},
		{`target: {table: ` + strings.Repeat("t", 256) + `, primary_key: "[userid]"}`, [][2]string{{"target.table", "1 to 255"}}},
		{`target: {table: t, primary_key: "[userid]", columns: {` + strings.Repeat("c", 256) + `: orderid + 1}}`, [][2]string{{"target.columns." + strings.Repeat("c", 256), "256 characters: Lindorm's column names have at most 255"}}},
		{`target: {primary_key: "[userid]"}`, [][2]string{{"target.table", "missing"}}},
		{`target: {table: t}`, [][2]string{{"target.primary_key", "missing"}}},
		{`target: {table: t, primary_key: "[userid]"}` + "\nextra: 1", [][2]string{{"extra", `unknown field "extra"`}}},
	}
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			wantProblems(t, decodeErr(t, goodHead+c.body), c.want)
		})
	}
	me := decodeErr(t, "source: {columns: {a: text}}\ntarget: {table: t, primary_key: '[a]'}\n")
	wantProblems(t, me, [][2]string{{"version", "missing"}})
	me = decodeErr(t, "version: [1\n")
	if len(me.Problems) != 1 || !strings.Contains(me.Problems[0].Message, "not valid YAML") {
		t.Errorf("bad YAML: %v", me)
	}
	me = decodeErr(t, "")
	if !strings.Contains(me.Error(), "empty") {
		t.Errorf("empty file: %v", me)
	}
}

func TestDecodeKeepsOrder(t *testing.T) {
	m, err := Decode([]byte(`version: 1
source:
  columns: {z: text, a: bigint, m: "map<text, int>", "log-event": text}
target:
  table: t
  primary_key: "[a]"
  columns:
    zz: z + 'x'
    bb: str(a)
    aa: "'lit'"
  exclude: [m]
  options: {TTL: 86400, COMPRESSION: ZSTD, VERSIONS: 1}
`), "order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Target().Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "a,zz,bb,aa,z,log-event" {
		t.Errorf("target columns %s", got)
	}
	if got := p.Options(); len(got) != 3 || got[0] != [2]string{"TTL", "86400"} || got[1] != [2]string{"COMPRESSION", "ZSTD"} || got[2] != [2]string{"VERSIONS", "1"} {
		t.Errorf("options %v", got)
	}
	if p.Name() != "order" || p.Table() != "t" {
		t.Errorf("name %q table %q", p.Name(), p.Table())
	}
}

func TestOrdersLayout(t *testing.T) {
	p := loadProgram(t, "orders.yaml")
	want := []pipeline.Column{
		{Name: "pk1", Type: pipeline.TypeVarchar, KeyPos: 0},
		{Name: "orderid", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "channel", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "amount", Type: pipeline.TypeDecimal, Precision: 18, Scale: 2, KeyPos: -1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: -1},
		{Name: "status", Type: pipeline.TypeVarchar, KeyPos: -1},
		{Name: "location", Type: pipeline.TypeVarchar, KeyPos: -1},
	}
	got := p.Target()
	if got.Table != "orders" || got.KeyLen != 2 || len(got.Columns) != len(want) {
		t.Fatalf("target %+v", got)
	}
	for i := range want {
		if got.Columns[i] != want[i] {
			t.Errorf("column %d: %+v, want %+v", i, got.Columns[i], want[i])
		}
	}
	ke := p.KeyElements()
	if len(ke) != 2 || ke[0] != (KeyElement{Name: "pk1", Expr: "md5(userid).substr(0, 4) + userid", Type: pipeline.TypeVarchar}) ||
		ke[1] != (KeyElement{Name: "orderid", Expr: "orderid", Type: pipeline.TypeBigint}) {
		t.Errorf("key elements %+v", ke)
	}
	d := p.Describe()
	for _, s := range []string{"pk1 VARCHAR = md5(userid).substr(0, 4) + userid", "channel VARCHAR = code(channel, channels)",
		"amount DECIMAL(18,2) = amount :: DECIMAL(18,2)", "COMPRESSION='ZSTD'", "Regions: count 16", "Fingerprint: " + p.Fingerprint()} {
		if !strings.Contains(d, s) {
			t.Errorf("Describe lacks %q:\n%s", s, d)
		}
	}
	if p.RegionSize() != DefaultRegionSize {
		t.Errorf("RegionSize %d", p.RegionSize())
	}
}

func TestCompileAgainstSourceSchema(t *testing.T) {
	m, err := Decode([]byte(`version: 1
source:
  columns: {userid: varchar, orderid: bigint}
target: {table: t, primary_key: "[md5(userid).substr(0,2) + userid AS k][orderid]"}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Cassandra's schema: more columns, text for varchar, in its own order
	src := pipeline.SourceSchema{{Name: "orderid", Type: "bigint"}, {Name: "extra", Type: "frozen<map<text, int>>"}, {Name: "userid", Type: "text"}}
	p, err := Compile(m, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Source()) != 3 || p.Source()[0].Name != "orderid" {
		t.Errorf("source %v", p.Source())
	}
	var names []string
	for _, c := range p.Target().Columns {
		names = append(names, c.Name+" "+c.SQLType())
	}
	if got := strings.Join(names, ", "); got != "k VARCHAR, orderid BIGINT, extra VARCHAR, userid VARCHAR" {
		t.Errorf("target %s", got)
	}
	e := p.NewEvaluator()
	out := make([]pipeline.Value, 4)
	r := &pipeline.Record{Values: []pipeline.Value{pipeline.Int(7), pipeline.Text(`{"a":1}`), pipeline.Text("abc")}}
	if rerr := e.Apply(nil, r, out); rerr != nil || out[0] != pipeline.Text("90abc") || out[1] != pipeline.Int(7) {
		t.Errorf("apply: %v %v", out, rerr)
	}

	_, err = Compile(m, pipeline.SourceSchema{{Name: "userid", Type: "int"}})
	var me *MappingError
	if !errors.As(err, &me) {
		t.Fatalf("want a MappingError, got %v", err)
	}
	wantProblems(t, me, [][2]string{
		{"source.columns.userid", "declared as varchar but the source has int"},
		{"source.columns.orderid", `column "orderid" is not in the source`},
		{"target.primary_key[1]", `unknown column "orderid"`},
	})
	if me.File != "" {
		t.Errorf("Compile errors leave the file name to the caller: %q", me.File)
	}
}

func TestNamesResolution(t *testing.T) {
	src := pipeline.SourceSchema{{Name: "userid", Type: "text"}, {Name: "orderid", Type: "bigint"}, {Name: "channel", Type: "text"}}
	compile := func(key string, cols ...ColumnExpr) (*Program, error) {
		m := &Mapping{Version: 1, Source: SourceSpec{Columns: src}, Target: TargetSpec{Table: "t", PrimaryKey: key, Columns: cols,
			OnMissingCode: "keep", Codes: []Dict{{Name: "ch", Entries: [][2]string{{"taobao", "tb"}}}}}}
		return Compile(m, nil)
	}
	// [userId] matches userid (case-insensitive fallback); the key column keeps the source's name
	p, err := compile("[md5(userid).subStr(0,4)][userId][orderid]")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Target().Columns; got[0].Name != "userid_md5_4" || got[1].Name != "userid" || got[2].Name != "orderid" || len(got) != 4 {
		t.Errorf("columns %+v", got)
	}
	// back-quoted names match exactly
	if _, err := compile("[`USERID`]"); err == nil || !strings.Contains(err.Error(), `unknown column "USERID"`) {
		t.Errorf("quoted: %v", err)
	}
	// in the key a name is the target column first: [channel] is the coded channel
	p, err = compile("[channel][orderid]", ColumnExpr{Name: "channel", Expr: "code(channel, ch)"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]pipeline.Value, len(p.Target().Columns))
	r := &pipeline.Record{Values: []pipeline.Value{pipeline.Text("u"), pipeline.Int(1), pipeline.Text("taobao")}}
	if rerr := p.NewEvaluator().Apply(nil, r, out); rerr != nil || out[0] != pipeline.Text("tb") || len(out) != 3 {
		t.Errorf("coded key: %v %v", out, rerr)
	}
	// derived names avoid collisions
	p, err = compile("[md5(userid).substr(0,4)][orderid]", ColumnExpr{Name: "userid_md5_4", Expr: "'x'"})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Target().Columns[0].Name; n != "k0" {
		t.Errorf("derived name %q, want k0", n)
	}
	// entries can use other entries; the key can use an entry inside an expression
	p, err = compile("[md5(h).substr(0,2)][orderid]", ColumnExpr{Name: "h", Expr: "g + '!'"}, ColumnExpr{Name: "g", Expr: "userid + channel"})
	if err != nil {
		t.Fatal(err)
	}
	if rerr := p.NewEvaluator().Apply(nil, r, make([]pipeline.Value, len(p.Target().Columns))); rerr != nil {
		t.Error(rerr)
	}
}

// Names differing only in case are ambiguous when matched case-insensitively.
func TestAmbiguousName(t *testing.T) {
	m := &Mapping{Version: 1, Target: TargetSpec{Table: "t", PrimaryKey: "[USERID]"}}
	_, err := Compile(m, pipeline.SourceSchema{{Name: "UserID", Type: "text"}, {Name: "userid", Type: "text"}})
	if err == nil || !strings.Contains(err.Error(), "ignoring case") {
		t.Errorf("ambiguous: %v", err)
	}
}

func TestNullAndLongKeys(t *testing.T) {
	p, err := Compile(testMapping(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]pipeline.Value, len(p.Target().Columns))
	e := p.NewEvaluator()
	r := record(nil)
	r.Values[0] = pipeline.Null
	if rerr := e.Apply(nil, r, out); rerr == nil || rerr.Code != pipeline.CodeNullKey || rerr.Field != "id" {
		t.Errorf("null key: %v", rerr)
	}
	m := testMapping()
	m.Target.PrimaryKey = "[s][id]"
	p, err = Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	e = p.NewEvaluator()
	if rerr := e.ApplyKey(nil, record(map[string]V{"s": txt(strings.Repeat("x", 2040))}), out); rerr != nil {
		t.Errorf("2048-byte key rejected: %v", rerr)
	}
	if n := p.KeyBytes(out); n != 2048 {
		t.Errorf("KeyBytes %d, want 2048", n)
	}
	if rerr := e.Apply(nil, record(map[string]V{"s": txt(strings.Repeat("x", 2041))}), out); rerr == nil || rerr.Code != pipeline.CodeKeyTooLong {
		t.Errorf("2049-byte key: %v", rerr)
	}
	// a short record is a parse reject, not a panic
	if rerr := e.Apply(nil, &pipeline.Record{Values: []pipeline.Value{pipeline.Int(1)}}, out); rerr == nil || rerr.Code != pipeline.CodeParse {
		t.Errorf("short record: %v", rerr)
	}
}

func TestRowBytes(t *testing.T) {
	p := loadProgram(t, "orders.yaml")
	row := []pipeline.Value{txt("9001abc"), num(42), txt("tb"), pipeline.Decimal("1.5"), num(1), pipeline.Null, pipeline.Null}
	key := 7 + 8
	if got := p.KeyBytes(row); got != key {
		t.Errorf("KeyBytes %d, want %d", got, key)
	}
	want := (key + len("channel") + 2 + 21) + (key + len("amount") + 3 + 21) + (key + len("ts") + 8 + 21)
	if got := p.RowBytes(row); got != want {
		t.Errorf("RowBytes %d, want %d", got, want)
	}
}

func TestFingerprint(t *testing.T) {
	a := loadProgram(t, "orders.yaml")
	b := loadProgram(t, "orders.yaml")
	if a.Fingerprint() != b.Fingerprint() || len(a.Fingerprint()) != 64 {
		t.Fatalf("fingerprint not stable: %s %s", a.Fingerprint(), b.Fingerprint())
	}
	base := `version: 1
source: {name: %s, columns: {u: text, n: bigint}}
vars: {k: %s}
target: {table: t, primary_key: "[md5(u).substr(0,k)][n]", options: {COMPRESSION: %s}}
`
	fp := func(name, k, comp string) string {
		s := strings.Replace(base, "%s", name, 1)
		s = strings.Replace(s, "%s", k, 1)
		s = strings.Replace(s, "%s", comp, 1)
		m, err := Decode([]byte(s), "f.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.Fingerprint()
	}
	x := fp("a", "4", "ZSTD")
	if fp("b", "4", "LZ4") != x {
		t.Error("labels and options changed the fingerprint")
	}
	if fp("a", "5", "ZSTD") == x {
		t.Error("a var's value did not change the fingerprint")
	}
}

func loadProgram(t testing.TB, file string) *Program {
	t.Helper()
	m, err := Load("../mappings/" + file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Without source.columns (read from the source at Compile time) Decode still checks syntax and
// functions; Compile then checks names and types against the source schema.
func TestDecodeWithoutSourceColumns(t *testing.T) {
	me := decodeErr(t, "version: 1\nsource: {name: ks.t}\ntarget: {table: t, primary_key: '[md6(a)][b :: BIGNUM][(c]', columns: {x: 'a +'}}\n")
	wantProblems(t, me, [][2]string{
		{"target.primary_key[0]", `unknown function "md6"`},
		{"target.primary_key[1]", `unknown Lindorm type "BIGNUM"`},
		{"target.primary_key[2]", "at column 25: expected ')'"},
		{"target.columns.x", "at column 4: expected a value"},
	})
	m, err := Decode([]byte("version: 1\nsource: {name: ks.t}\ntarget: {table: t, primary_key: '[md5(a).substr(0,2) + a AS k]'}\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(m, nil); err == nil || !strings.Contains(err.Error(), "source.columns: empty") {
		t.Errorf("compile without any schema: %v", err)
	}
	p, err := Compile(m, pipeline.SourceSchema{{Name: "a", Type: "text"}, {Name: "b", Type: "int"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Target().Columns[0].Name != "k" || len(p.Target().Columns) != 3 {
		t.Errorf("target %+v", p.Target())
	}
	if _, err := Compile(m, pipeline.SourceSchema{{Name: "b", Type: "int"}}); err == nil || !strings.Contains(err.Error(), `unknown column "a"`) {
		t.Errorf("missing column: %v", err)
	}
}

// An unquoted cast says to quote it: before, it gave YAML's raw "mapping values are not allowed in
// this context".
func TestUnquotedCastSaysToQuote(t *testing.T) {
	_, err := Decode([]byte("version: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n  columns:\n    c: b :: TINYINT\n"), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), `quote the expression, c: "b :: TINYINT"`) || !strings.Contains(err.Error(), "line 8") {
		t.Fatalf("error %v", err)
	}
}

// Before, "key column bucket is null" when the real cause was the missing device_id it is computed
// from: the reject names the source column.
func TestNullKeyNamesTheSourceColumn(t *testing.T) {
	p := compileYAML(t, "version: 1\nsource: {columns: {device_id: bigint, ts: timestamp, v: text}}\n"+
		"target:\n  table: t\n  primary_key: '[bucket][ts]'\n  columns: {bucket: device_id % 16}\n")
	rec := pipeline.Record{Values: []pipeline.Value{pipeline.Null, pipeline.Int(1700000000000), pipeline.Text("x")}}
	row := make([]pipeline.Value, len(p.Target().Columns))
	rerr := p.NewEvaluator().Apply(&pipeline.Batch{Stream: "s"}, &rec, row)
	if rerr == nil || rerr.Code != pipeline.CodeNullKey || rerr.Field != "device_id" ||
		!strings.Contains(rerr.Message, "key column bucket is null: it is computed from source column device_id") {
		t.Fatalf("reject %+v", rerr)
	}
}

// A dictionary entry without a value (taobao:, taobao: ~) is a mistake, not the empty code: it
// would write the empty text for every taobao row. The empty code is written as two quotes.
func TestDecodeRefusesACodeWithoutValue(t *testing.T) {
	me := decodeErr(t, goodHead+`target:
  table: t
  primary_key: "[code(userid, d) AS u][orderid]"
  codes:
    d: {taobao: , alipay: ~, wechat: '', jd: jd}
`)
	wantProblems(t, me, [][2]string{
		{"target.codes.d.taobao", "no code"},
		{"target.codes.d.alipay", "no code"},
	})
}

// An unquoted cast followed by a comment (as docs/mapping.md's sample writes its lines) is told to
// quote the expression alone and keep the comment after it. Before, the suggestion put the comment
// inside the quotes: `amount: "amount :: DECIMAL(18,2)   # a note"`, an expression that does not
// parse.
func TestUnquotedCastWithCommentSaysToQuoteTheExpressionOnly(t *testing.T) {
	_, err := Decode([]byte("version: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n  columns:\n    c: b :: TINYINT   # quote expressions that contain ': '\n"), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), `quote the expression, c: "b :: TINYINT"   # quote expressions that contain ': '`) {
		t.Fatalf("error %v", err)
	}
}

// A mapping path that names no file says so and what to check. Before, the error was the
// operating system's alone: `read mapping: open mappings/order.yaml: no such file or directory`.
func TestLoadMissingMappingSaysWhatToCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "order.yaml")
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "mapping file "+path+" not found: check the -m/--mapping path") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error %v", err)
	}
}

// TestFingerprintHasTheSourceTable: source.table decides which events of a Debezium topic a run
// applies, so a resume (or a replication continued) with another one would write a second
// table's rows beside the first's: the fingerprint, which --resume compares, holds it.
func TestFingerprintHasTheSourceTable(t *testing.T) {
	fp := func(table string) string {
		m := &Mapping{Version: 1, Source: SourceSpec{Table: table, Columns: pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "text"}}},
			Target: TargetSpec{Table: "t", PrimaryKey: "[id]", OnMissingCode: "reject"}}
		p, err := Compile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.Fingerprint()
	}
	none, a, b := fp(""), fp("shop.orders"), fp("shop.refunds")
	if a == b || a == none || b == none {
		t.Errorf("source.table does not change the fingerprint (none %.12s, shop.orders %.12s, shop.refunds %.12s): a resume could apply another table's events", none, a, b)
	}
}
