package replicate

import (
	"math"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// Every key a delete file holds reads back as the values it was written from, whatever the type
// and however the literal is quoted (X'..' for text a client could misread).
func TestParseDeletesReadsBackWhatWasWritten(t *testing.T) {
	schema := pipeline.TargetSchema{Table: "select", KeyLen: 7, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeVarchar, KeyPos: 0}, {Name: "n", Type: pipeline.TypeBigint, KeyPos: 1},
		{Name: "ts", Type: pipeline.TypeTimestamp, KeyPos: 2}, {Name: "d", Type: pipeline.TypeDate, KeyPos: 3},
		{Name: "b", Type: pipeline.TypeVarbinary, KeyPos: 4}, {Name: "f", Type: pipeline.TypeDouble, KeyPos: 5},
		{Name: "dec", Type: pipeline.TypeDecimal, KeyPos: 6, Precision: 10, Scale: 2}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1},
	}}
	rows := [][]pipeline.Value{
		{pipeline.Text("it's"), pipeline.Int(-42), pipeline.Int(1700000000123), pipeline.Int(19000), pipeline.Bytes("\x00\xff"), pipeline.Float(1.5), pipeline.Decimal("12.50")},
		{pipeline.Text("back\\slash\n"), pipeline.Int(math.MaxInt64), pipeline.Int(0), pipeline.Int(-1), pipeline.Bytes(""), pipeline.Float(-0.25), pipeline.Decimal("-1")},
	}
	d := newDeleteStmt(schema)
	data := []byte(deleteHeader(schema.Table, 0, 1, 2))
	for _, r := range rows {
		data = d.append(data, r)
	}
	got, err := ParseDeletes(data, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d keys, want %d", len(got), len(rows))
	}
	for i := range rows {
		for j := range rows[i] {
			if got[i][j] != rows[i][j] {
				t.Errorf("key %d column %s: %#v, want %#v", i, schema.Columns[j].Name, got[i][j], rows[i][j])
			}
		}
	}
	// times beyond four-digit years, as Go's formatting writes them (10000-01-01, -0001-12-31),
	// which the sources read and a delete file holds: verify read such a file as an error
	// 10000-01-01; 0000-12-31T23:59:59.999 and 0000-12-31; -0001-01-01 and -0001-12-31;
	// -0002-03-01 and -0001-02-28
	wide := [][]pipeline.Value{
		{pipeline.Text("a"), pipeline.Int(1), pipeline.Int(253402300800000), pipeline.Int(2932897), pipeline.Bytes(""), pipeline.Float(0), pipeline.Decimal("0")},
		{pipeline.Text("b"), pipeline.Int(2), pipeline.Int(-62135596800001), pipeline.Int(-719163), pipeline.Bytes(""), pipeline.Float(0), pipeline.Decimal("0")},
		{pipeline.Text("c"), pipeline.Int(3), pipeline.Int(-62198755200000), pipeline.Int(-719529), pipeline.Bytes(""), pipeline.Float(0), pipeline.Decimal("0")},
		{pipeline.Text("d"), pipeline.Int(4), pipeline.Int(-62230291200000 + 59*86400000), pipeline.Int(-719894 + 59), pipeline.Bytes(""), pipeline.Float(0), pipeline.Decimal("0")},
	}
	data = []byte(deleteHeader(schema.Table, 0, 1, 2))
	for _, r := range wide {
		data = d.append(data, r)
	}
	if got, err = ParseDeletes(data, schema); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	for i := range wide {
		for j := range wide[i] {
			if got[i][j] != wide[i][j] {
				t.Errorf("wide key %d column %s: %#v, want %#v\n%s", i, schema.Columns[j].Name, got[i][j], wide[i][j], data)
			}
		}
	}
	if _, err := ParseDeletes([]byte("DROP TABLE x;\n"), schema); err == nil {
		t.Error("a line that is not a DELETE was read")
	}
}

// Each literal form reads as the value and the rest of the line it stands for: NULL and a
// quoted text of a type without a text form included, and an unclosed or bad literal is an
// error that leaves the line as it was.
func TestParseLiteralForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		typ  pipeline.Type
		want pipeline.Value
		rest string
	}{
		{"NULL AND", pipeline.TypeBigint, pipeline.Value{}, " AND"},
		{"NULL;", pipeline.TypeVarchar, pipeline.Value{}, ";"},
		{"'NULL';", pipeline.TypeVarchar, pipeline.Text("NULL"), ";"},
		{"'a''b' AND", pipeline.TypeVarchar, pipeline.Text("a'b"), " AND"},
		{"X'41'", pipeline.TypeVarbinary, pipeline.Bytes("A"), ""},
		{"X'41';", pipeline.TypeBigint, pipeline.Text("A"), ";"},
		{"'7';", pipeline.TypeBigint, pipeline.Text("7"), ";"},
		{"true;", pipeline.TypeBoolean, pipeline.Bool(true), ";"},
		{"-3", pipeline.TypeInteger, pipeline.Int(-3), ""},
		{"86400000;", pipeline.TypeTimestamp, pipeline.Int(86400000), ";"},
		{"'1970-01-02';", pipeline.TypeDate, pipeline.Int(1), ";"},
	} {
		got, rest, err := parseLiteral(c.in, c.typ)
		if err != nil || got != c.want || rest != c.rest {
			t.Errorf("%q as %s: %#v, rest %q, %v; want %#v, rest %q", c.in, c.typ, got, rest, err, c.want, c.rest)
		}
	}
	for _, c := range []struct {
		in  string
		typ pipeline.Type
	}{{"X'41", pipeline.TypeVarbinary}, {"X'4G';", pipeline.TypeVarbinary}, {"'open", pipeline.TypeVarchar}} {
		if _, rest, err := parseLiteral(c.in, c.typ); err == nil || rest != c.in {
			t.Errorf("%q: rest %q, error %v; want an error and the line untouched", c.in, rest, err)
		}
	}
	if _, _, err := parseLiteral("maybe;", pipeline.TypeBoolean); err == nil {
		t.Error("a boolean that is not one was read")
	}
}
