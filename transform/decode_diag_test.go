package transform

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A file of two YAML documents (two mappings pasted into one, or a '---' line left in) is
// refused naming the line where the second begins. Before, Decode read the first document and
// silently dropped the rest: target: sections, regions: or codes written after the '---' were
// never applied.
func TestDecodeRefusesASecondDocument(t *testing.T) {
	yml := "version: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n---\nregions:\n  count: 16\n"
	me := decodeErr(t, yml)
	if len(me.Problems) != 1 || me.Problems[0].Line != 7 || !strings.Contains(me.Problems[0].Message, "more than one YAML document") ||
		!strings.Contains(me.Problems[0].Message, "one mapping per file") {
		t.Fatalf("problems: %v", me)
	}
	// reported with the first document's own problems
	wantProblems(t, decodeErr(t, strings.Replace(yml, "table: t", "table: t\n  colums: {}", 1)), [][2]string{
		{"", "more than one YAML document"},
		{"target.colums", "unknown field"},
	})
	// a leading '---', and a trailing one with nothing after it, leave one document
	if _, err := Decode([]byte("---\nversion: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n---\n# end\n"), "m.yaml"); err != nil {
		t.Fatalf("one document between '---' lines: %v", err)
	}
}

// A substr past the end of a value that always has the same length (a digest: md5 gives 32 hex
// characters, sha1 40, sha256 64) would reject every row, so the mapping is refused naming the
// length. Before, `md5(userid).substr(0,40)` was accepted by check and every row of a migration
// went to the rejects.
func TestDecodeRefusesASubstrPastAFixedLength(t *testing.T) {
	for _, c := range []struct{ key, columns, want string }{
		{key: "[md5(userid).substr(0,40)][orderid]", want: "substr(0, 40): md5(userid) always has 32 characters"},
		{key: "[sha256(userid).substr(60,66)][orderid]", want: "substr(60, 66): sha256(userid) always has 64 characters"},
		{key: "[sha1(userid).substr(41)][orderid]", want: "substr(41): sha1(userid) always has 40 characters"},
		{key: "[h.substr(0,33) AS p][orderid]", columns: "  columns: {h: md5(userid)}\n", want: "substr(0, 33): h always has 32 characters"},
	} {
		me := decodeErr(t, goodHead+"target:\n  table: t\n  primary_key: \""+c.key+"\"\n"+c.columns)
		wantProblems(t, me, [][2]string{{"target.primary_key[0]", c.want}})
		if !strings.Contains(me.Error(), "every row would be rejected") {
			t.Errorf("%s: %v", c.key, me)
		}
	}
	for _, key := range []string{"[md5(userid).substr(0,32)][orderid]", "[userid.substr(0,40)][orderid]", "[sha1(userid).substr(36)][orderid]"} {
		if _, err := Decode([]byte(goodHead+"target:\n  table: t\n  primary_key: \""+key+"\"\n"), "m.yaml"); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// Every mapping written out in the manual and in this package's README decodes: a reader copies
// them. Before, the README's sample excluded a column "status" and coded a column "channel" that
// its source.columns did not list, and was refused.
func TestDocMappingExamplesDecode(t *testing.T) {
	for _, path := range []string{"../docs/mapping.md", "README.md"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, block := range strings.Split(string(data), "```yaml\n")[1:] {
			yml, _, ok := strings.Cut(block, "```")
			if !ok || !strings.Contains(yml, "version: 1") {
				continue
			}
			n++
			if _, err := Decode([]byte(yml), path); err != nil {
				t.Errorf("%s, sample %d: %v", path, n, err)
			}
		}
		if n == 0 {
			t.Errorf("%s: no mapping sample found", path)
		}
	}
}

// YAML's "found character that cannot start any token" says what is wrong and how to fix it: a
// tab in the indentation (YAML indents with spaces only), or a value that starts with a
// back-quoted name, which YAML reserves. Before, the message was the parser's alone, naming
// neither the tab nor the back-quote.
func TestDecodeExplainsATabAndABackQuote(t *testing.T) {
	head := "version: 1\nsource:\n  columns: {a: text, b: int}\ntarget:\n  table: t\n  primary_key: \"[a]\"\n  columns:\n"
	for _, c := range []struct{ yml, want string }{
		{head + "\tc: b\n", "line 8 is indented with a tab: YAML indents with spaces only, replace the tab with spaces"},
		{head + "  \t  c: b\n", "line 8 is indented with a tab: YAML indents with spaces only, replace the tab with spaces"},
		{head + "    c: `b` + 1   # note\n", "the value on line 8 starts with '`', which YAML reserves: quote the expression, c: \"`b` + 1\"   # note"},
	} {
		_, err := Decode([]byte(c.yml), "m.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v", c.yml, err)
		}
	}
}

// A column with an empty name ("": text in source.columns, "": expr in target.columns) is
// refused naming its line. Before, the source column became a nameless target column that ddl.sql
// declared and Lindorm refuses, and the entry was silently given a name derived from its
// expression (channel_code).
func TestDecodeRefusesAnEmptyColumnName(t *testing.T) {
	me := decodeErr(t, "version: 1\nsource:\n  columns:\n    a: text\n    \"\": int\n    b: int\ntarget:\n  table: t\n  primary_key: \"[a]\"\n  columns:\n    \"\": str(b)\n")
	wantProblems(t, me, [][2]string{
		{"source.columns", "empty column name"},
		{"target.columns", "empty column name"},
	})
	if len(me.Problems) == 2 && (me.Problems[0].Line != 5 || me.Problems[1].Line != 11) {
		t.Errorf("lines: %v", me)
	}
}

// ASC or DESC after a target.columns expression says where an order belongs: on a key element
// in target.primary_key. Before, the message was only "expected an operator ... found name DESC".
func TestDecodeSaysDescBelongsToTheKey(t *testing.T) {
	for _, expr := range []string{"b DESC", "str(b) asc"} {
		me := decodeErr(t, goodHead+"target:\n  table: t\n  primary_key: \"[userid]\"\n  columns:\n    b: "+expr+"\n")
		wantProblems(t, me, [][2]string{{"target.columns.b", "ASC and DESC order key columns: write the order on the column's key element in target.primary_key ([name DESC])"}})
	}
}

// A line indented out of step with its neighbours is named, with what to do, when YAML fails on
// it. Before, YAML's message named the line where the enclosing section starts ("line 2: did not
// find expected key" for a column on line 8), or told to quote a value that holds no ': '.
func TestDecodeNamesAMisIndentedLine(t *testing.T) {
	good := "version: 1\nsource:\n  name: shop.orders\n  columns:\n    userid: text\n    orderid: bigint\n    ts: timestamp\n" +
		"target:\n  table: orders\n  primary_key: \"[userid][orderid]\"\n  codes:\n    d: {a: b,\n          c: e}\nqueries:\n  - equal: [userid]\n    range: orderid\n"
	if _, err := Decode([]byte(good), "m.yaml"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(good, "\n")
	for _, c := range []struct {
		line   int // 1-based
		indent string
		want   string
	}{
		{7, "   ", "line 7 (ts: timestamp) is indented by 3 spaces, which lines up with no section above it (4, 2 or 0 spaces): indent it as the keys beside it"},
		{6, "     ", "line 6 (orderid: bigint) is indented by 5 spaces, deeper than line 5 (userid: text), which already has a value: indent it as the keys beside it"},
		{10, "   ", "line 10 (primary_key: \"[userid][orderid]\") is indented by 3 spaces, deeper than line 9 (table: orders)"},
		{11, " ", "line 11 (codes:) is indented by 1 space, which lines up with no section above it (2 or 0 spaces)"},
		{16, "   ", "line 16 (range: orderid) is indented by 3 spaces, which lines up with no section above it (4, 2 or 0 spaces)"},
	} {
		bad := slices.Clone(lines)
		bad[c.line-1] = c.indent + strings.TrimLeft(bad[c.line-1], " ")
		_, err := Decode([]byte(strings.Join(bad, "\n")), "m.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "must be quoted") {
			t.Errorf("line %d indented %q: error %v", c.line, c.indent, err)
		}
	}
}

// A source column typed as SQL writes it (a size or precision, or an SQL or Java type name) is
// told what to write instead: the CQL type, and where a target type goes. Before, the message
// listed every CQL type and said only "unexpected (10,2)" or "unknown type 'string'"; a REAL was
// told float alone.
func TestDecodeSaysWhatToWriteForAnSQLType(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{"decimal(10,2)", `source.columns take the source's CQL types, which have no size or precision: write amount: decimal, and give the target column its type in target.columns, amount: "amount :: DECIMAL(10,2)"`},
		{"VARCHAR(255)", `source.columns take the source's CQL types, which have no size or precision: write amount: varchar (read as Lindorm's VARCHAR)`},
		{"string", "the CQL type for it is text"},
		{"long", "the CQL type for it is bigint"},
		{"datetime", "the CQL type for it is timestamp"},
		// REAL is 4 bytes in PostgreSQL and SQL Server, a double in MySQL: float alone would
		// round MySQL's values to 32 bits without a word
		{"real", "the CQL type for it is float for a 4-byte REAL (PostgreSQL's, SQL Server's: amount: float), double for MySQL's, which is 8 bytes (amount: double)"},
	} {
		me := decodeErr(t, "version: 1\nsource:\n  columns:\n    a: text\n    amount: '"+c.typ+"'\ntarget:\n  table: t\n  primary_key: \"[a]\"\n")
		wantProblems(t, me, [][2]string{{"source.columns.amount", c.want}})
	}
}

// A key whose every column is a constant (vars, literals, expressions of them) gives every row
// one key, so all but the last row written would be lost: the mapping is refused. Before, it was
// accepted, and check said the mapping followed the design rules.
func TestDecodeRefusesAConstantKey(t *testing.T) {
	me := decodeErr(t, "version: 1\nsource: {columns: {ts: bigint, v: text}}\nvars: {numBuckets: 16}\n"+
		"target:\n  table: t\n  primary_key: \"[numBuckets]['x' AS tag]\"\nregions: {count: 1}\n")
	wantProblems(t, me, [][2]string{{"target.primary_key", "every key column is a constant (numBuckets, tag): every row would get one key, and the last one written would be the table's only row"}})
}

// A key column that is a constant (a var or a literal written as a key element, or computed from
// constants alone) holds one value for every row: it tells no rows apart, and as the first key
// column it puts every row in one region. The rule names the column and what it is. Before, check
// said the mapping followed the design rules: [numBuckets][ts][host], meaning the bucket column
// bucket: ts % numBuckets, wrote every row with the key prefix 16.
func TestDesignRulesConstantKeyColumn(t *testing.T) {
	for _, c := range []struct{ key, cols, path, want string }{
		{"[numBuckets][ts][host]", "", "target.primary_key[0]", "key column numBuckets is a constant (16, the var numBuckets): every row has this one value, so it tells no rows apart, and as the first key column it puts every row in one region (a write hotspot)"},
		{"[host]['x' AS tag][ts]", "", "target.primary_key[1]", "key column tag is a constant ('x'): every row has this one value, so it tells no rows apart; leave it out of the key"},
		{"[k][host]", "k: md5('salt')", "target.columns.k", "key column k is a constant (md5('salt'))"},
		{"[ts % numBuckets AS bucket][ts][host]", "", "", ""},
		{"[random(numBuckets) AS salt][ts][host]", "", "", ""},
	} {
		cols := ""
		if c.cols != "" {
			cols = "\n  columns:\n    " + c.cols
		}
		p := compileYAML(t, "version: 1\nsource: {columns: {ts: bigint, host: text, v: text}}\nvars: {numBuckets: 16}\n"+
			"target:\n  table: t\n  primary_key: \""+c.key+"\""+cols+"\nregions: {count: 1}\n")
		var got *DesignRule
		for _, r := range p.DesignRules(false) {
			if r.Code == RuleConstantKey {
				got = &r
			}
		}
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: %+v", c.key, got)
		case c.want != "" && (got == nil || got.Error || got.Path != c.path || !strings.Contains(got.Message, c.want)):
			t.Errorf("%s: %+v", c.key, got)
		}
	}
}

// An integer YAML reads in another notation (1_000, 0x10, 0o20) is refused as not decimal, saying
// how to write it, in vars and in regions.count alike. Before, a var said "integer 1_000 is out of
// the 64-bit range", which it is not.
func TestDecodeSaysToWriteIntegersInDecimal(t *testing.T) {
	for _, v := range []string{"1_000", "0x10", "0o20"} {
		me := decodeErr(t, goodHead+"vars:\n  n: "+v+"\ntarget:\n  table: t\n  primary_key: \"[userid]\"\nregions:\n  count: "+v+"\n")
		for _, path := range []string{"vars.n", "regions.count"} {
			found := false
			for _, p := range me.Problems {
				if p.Path == path && strings.Contains(p.Message, "want a decimal integer (as 1000), found "+strconv.Quote(v)) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: %s: %v", v, path, me)
			}
		}
	}
	me := decodeErr(t, goodHead+"vars:\n  n: 99999999999999999999\ntarget:\n  table: t\n  primary_key: \"[userid]\"\n")
	if !strings.Contains(me.Error(), "vars.n: integer 99999999999999999999 is out of the 64-bit range") {
		t.Errorf("out of range: %v", me)
	}
}

// A cast to a type Lindorm has but rekey does not write (CHAR(n), VARCHAR(n), BINARY(n), TIME)
// says so and which type to cast to. Before, it said "unknown Lindorm type", which they are not.
func TestDecodeSaysWhichTypeForALindormTypeRekeyDoesNotWrite(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{"CHAR(10)", `CHAR(10) is a Lindorm type rekey does not write: cast to VARCHAR`},
		{"varchar(255)", `VARCHAR(255) is a Lindorm type rekey does not write: cast to VARCHAR, without a length`},
		{"BINARY(16)", `BINARY(16) is a Lindorm type rekey does not write: cast to VARBINARY`},
		{"TIME", `TIME is a Lindorm type rekey does not write: cast to BIGINT`},
	} {
		me := decodeErr(t, goodHead+"target:\n  table: t\n  primary_key: \"[userid]\"\n  columns:\n    c: \"userid :: "+c.typ+"\"\n")
		wantProblems(t, me, [][2]string{{"target.columns.c", c.want}})
	}
}

// A mapping path that names a folder says that -m takes one file, naming the folder's mapping
// files. Before, the error was the operating system's alone: "read mapping: read mappings: is a
// directory".
func TestLoadFolderSaysToNameAFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"orders.yaml", "users.yml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(dir)
	want := "mapping " + dir + " is a folder: -m/--mapping takes one mapping file, such as " + filepath.Join(dir, "orders.yaml") + " or " + filepath.Join(dir, "users.yml")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v", err)
	}
}

// A file whose top level is a list (each section written "- version: 1") or a single value is
// one problem that says what the top level must be. Before, "want a mapping (name: value), found
// a list" came with no path, followed by "missing" for version, source and target.
func TestDecodeTopLevelListSaysWhatTheFileHolds(t *testing.T) {
	for _, yml := range []string{"- version: 1\n- source: {columns: {a: text}}\n", "orders\n"} {
		me := decodeErr(t, yml)
		if len(me.Problems) != 1 || me.Problems[0].Line != 1 ||
			!strings.Contains(me.Problems[0].Message, "a mapping file is a YAML mapping with version:, source: and target: at its top level, each at the start of its line") {
			t.Errorf("%q: %v", yml, me)
		}
	}
}

// A misspelled field, column or function is answered with the name it is closest to. Before,
// an unknown column said only that it was not an entry, a source column or a var.
func TestDecodeSuggestsTheNearestName(t *testing.T) {
	me := decodeErr(t, `version: 1
source:
  colums: {}
  columns: {userid: text, amount: decimal, v: text}
targte: {}
target:
  table: t
  primary_key: "[md6(userid) AS h][userId]"
  columns:
    a: amout
    b: nosuch
`)
	wantProblems(t, me, [][2]string{
		{"source.colums", `unknown field "colums": did you mean columns? (allowed here:`},
		{"targte", `unknown field "targte": did you mean target? (allowed here:`},
		{"target.primary_key[0]", `unknown function "md6": did you mean md5? (functions:`},
		{"target.columns.a", `unknown column "amout": did you mean amount? (not a target.columns entry, a source column or a var)`},
		{"target.columns.b", `unknown column "nosuch" (not a target.columns entry, a source column or a var)`},
	})
}

// A field written in the wrong section (regions: indented under target:, write_time under
// source:, primary_key at the top) says where it belongs. Before, it was an "unknown field", which
// it is not.
func TestDecodeSaysWhereAMisplacedFieldBelongs(t *testing.T) {
	me := decodeErr(t, `version: 1
primary_key: "[userid]"
source:
  columns: {userid: text, v: text}
  write_time: true
target:
  table: t
  primary_key: "[userid]"
  timestamp_unit: ms
  regions:
    count: 4
queries:
  - equal: [userid]
    count: 2
`)
	wantProblems(t, me, [][2]string{
		{"primary_key", `field "primary_key" does not go at the top level: it belongs under target:`},
		{"source.write_time", `field "write_time" does not go under source: it belongs under target:`},
		{"target.timestamp_unit", `field "timestamp_unit" does not go under target: it belongs under source:`},
		{"target.regions", `field "regions" does not go under target: it belongs at the top level (not indented)`},
		{"queries[0].count", `field "count" does not go in a queries entry: it belongs under regions:`},
	})
	// a field of no section is still unknown
	wantProblems(t, decodeErr(t, goodHead+"target:\n  table: t\n  primary_key: \"[userid]\"\n  bogus: 1\n"), [][2]string{
		{"target.bogus", `unknown field "bogus" (allowed here:`},
	})
}

// target.exclude naming no source column says which it is nearest to and lists the source
// columns, as queries: and write_order do. Before: only `"UserID" is not a source column`.
func TestDecodeExcludeNamesTheSourceColumns(t *testing.T) {
	me := decodeErr(t, goodHead+"target:\n  table: t\n  primary_key: \"[orderid]\"\n  exclude: [UserID]\n")
	wantProblems(t, me, [][2]string{{"target.exclude[0]", `"UserID" is not a source column: did you mean userid? (source columns: userid, orderid, blob, tags, ts; a name is matched exactly here)`}})
}

// An expression that writes a column whose name holds a space (or another character names do
// not take) without back-quotes says to back-quote it. Before, the parser's message alone:
// `expected an operator ... found name "id"` for [order id].
func TestDecodeSaysToBackQuoteANameWithASpace(t *testing.T) {
	head := "version: 1\nsource:\n  columns: {id: bigint, \"order id\": text, v: text}\ntarget:\n  table: t\n"
	wantProblems(t, decodeErr(t, head+"  primary_key: \"[order id][id]\"\n"), [][2]string{
		{"target.primary_key[0]", "found name \"id\" in \"[order id][id]\": column \"order id\" holds characters a name does not take: write it back-quoted, `order id`"},
	})
	wantProblems(t, decodeErr(t, head+"  primary_key: \"[id]\"\n  columns:\n    x: md5(order id)\n"), [][2]string{
		{"target.columns.x", "column \"order id\" holds characters a name does not take: write it back-quoted, `order id`"},
	})
}

// source.timestamp_unit applies to timestamp columns and to integer text cast to TIMESTAMP: in a
// mapping with neither it would change nothing, so it is refused, saying what it applies to; a
// BIGINT cast to TIMESTAMP (read as epoch milliseconds whatever the unit) is named. Before, it was
// accepted and ignored: epoch seconds in a bigint column cast to TIMESTAMP became dates of 1970.
func TestDecodeRefusesATimestampUnitThatAppliesToNothing(t *testing.T) {
	head := "version: 1\nsource:\n  timestamp_unit: s\n  columns: {id: bigint, ts: bigint, s: text, v: text}\ntarget:\n  table: t\n  primary_key: \"[id]\"\n"
	wantProblems(t, decodeErr(t, head+"  columns:\n    t: \"ts :: TIMESTAMP\"\n"), [][2]string{
		{"source.timestamp_unit", "s applies to timestamp columns and to integer text cast to TIMESTAMP, and this mapping has neither: target.columns.t casts the BIGINT ts to TIMESTAMP, which reads it as epoch milliseconds whatever the unit: declare ts: timestamp in source.columns (and write t: ts) for the unit to apply"},
	})
	wantProblems(t, decodeErr(t, head), [][2]string{
		{"source.timestamp_unit", "s applies to timestamp columns and to integer text cast to TIMESTAMP, and this mapping has neither: declare the epoch columns as timestamp in source.columns, or remove source.timestamp_unit"},
	})
	for _, ok := range []string{
		strings.Replace(head, "ts: bigint", "ts: timestamp", 1),
		strings.Replace(head, "ts: bigint", "ts: list<timestamp>", 1),
		head + "  columns:\n    t: \"s :: TIMESTAMP\"\n",
	} {
		if _, err := Decode([]byte(ok), "m.yaml"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A primary key written without quotes, as the guide prints it, is read by YAML as a list (or
// fails to parse); the error says to quote it. Before: "want a single value, found a list" and
// "empty", or YAML's "did not find expected key" on the line of target:.
func TestDecodeSaysToQuoteABracketedKey(t *testing.T) {
	head := "version: 1\nsource:\n  columns: {userid: text, orderid: bigint, v: text}\ntarget:\n  table: t\n"
	wantProblems(t, decodeErr(t, head+"  primary_key: [userid]\n  colums: {}\n"), [][2]string{
		{"target.primary_key", `YAML reads [userid] as a list: quote the key, primary_key: "[userid]"`},
		{"target.colums", "unknown field"}, // reported with it
	})
	_, err := Decode([]byte(head+"  primary_key: [md5(userid).substr(0,4)][orderid]   # the guide's\n"), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), `the value on line 6 starts with '[', which YAML reads as a list: quote the key, primary_key: "[md5(userid).substr(0,4)][orderid]"   # the guide's`) {
		t.Errorf("error %v", err)
	}
}

// A quoted value whose closing quote is missing names the line the quote opens on. Before: YAML's
// "found unexpected end of stream" alone.
func TestDecodeNamesAnUnclosedQuote(t *testing.T) {
	head := "version: 1\nsource:\n  columns: {userid: text, v: text}\ntarget:\n  table: t\n"
	for _, c := range []struct{ yml, want string }{
		{head + "  primary_key: \"[userid]\n  columns: {a: v}\n", `the value on line 6 opens a quote, ", that the line does not close (YAML read on to the end of the file for it): end the value with "`},
		{head + "  primary_key: '[userid]\n", `the value on line 6 opens a quote, ', that the line does not close (YAML read on to the end of the file for it): end the value with '`},
	} {
		_, err := Decode([]byte(c.yml), "m.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v", c.yml, err)
		}
	}
}
