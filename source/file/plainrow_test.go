package file

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// plainRowSource is a Source of five declared columns of several types over six CSV fields (the
// fifth field is not declared): the fields parsePlainRow sets inline (text) and through
// ParseText (numbers, decimals, timestamps), and one it skips.
func plainRowSource(t testing.TB) *Source {
	t.Helper()
	var types []cqlvalue.Type
	var kinds []cqlvalue.Kind
	for _, name := range []string{"text", "bigint", "decimal", "timestamp", "text"} {
		typ, err := cqlvalue.ParseType(name)
		if err != nil {
			t.Fatal(err)
		}
		types, kinds = append(types, typ), append(kinds, typ.Kind)
	}
	d, err := CSVOptions{}.resolve(false)
	if err != nil {
		t.Fatal(err)
	}
	return &Source{cfg: Config{MaxRecordSize: 1 << 20}, csv: d, rfc: true, nfields: 6, colMap: []int{0, 1, 2, 3, -1, 4},
		names: []string{"s", "n", "d", "ts", "t"}, types: types, kinds: kinds}
}

// FuzzPlainRow: every record parsePlainRow takes, it reads as the field-by-field parser does
// (the end, the newlines, the values and the error), whatever the bytes and wherever the commas
// and the newline fall in its eight-byte words; and it leaves every other record to it.
func FuzzPlainRow(f *testing.F) {
	f.Add("u1,10,7.5,1704067200003,x,DELIVERED\nu2,11,-1.25,1704067200004,,Shenzhen\n")
	f.Add(",-5,-0.5,-1,-,-\n")                        // a '-' after each comma: a borrow marks it as one
	f.Add("abcdefg,1234567,1.5,0,,z")                 // no newline at the end of the data
	f.Add("a,b,c\n")                                  // too few fields, and values that do not parse
	f.Add("a,1,2,3,4,5,6,7,8\n")                      // too many
	f.Add("New York,1,2.5,3,x,y z\n")                 // spaces: below '#', not a quote
	f.Add("a\"b,1,2,3,,c\n\"q\",1,2,3,,c\n")          // a quote inside a field, and opening one
	f.Add("a,1,2,3,,c\r\nd,1,2,3,,\re\n")             // CRs
	f.Add("é,1,2,3,,ü\n\xff,1,2,3,,x\n")              // non-ASCII and invalid UTF-8
	f.Add("\n\n,,,,,\n")                              // blank lines, empty fields
	f.Add(strings.Repeat("x,", 70) + "y\n")           // more fields than it keeps
	f.Add("0123456,89abcde,g\n1234567,1,2,3,,\n")     // commas and newlines on word boundaries
	f.Add("a,99999999999999999999,1e5,tomorrow,,b\n") // ParseText's errors
	f.Fuzz(func(t *testing.T, body string) {
		s := plainRowSource(t)
		vals, want := make([]pipeline.Value, 5), make([]pipeline.Value, 5)
		for pos := 0; pos < len(body); {
			clear(vals)
			next, nl, rerr, ok := s.parsePlainRow(body, pos, vals)
			clear(want)
			next2, nl2, blank2, rerr2 := s.parseRFCFields(body, pos, want)
			if next2 <= pos {
				t.Fatalf("parser stuck at %d", pos)
			}
			if ok {
				if blank2 || next != next2 || nl != nl2 || fmt.Sprint(rerr) != fmt.Sprint(rerr2) || !reflect.DeepEqual(vals, want) {
					t.Fatalf("%q at %d: plain %d %d %v %v, field by field %d %d %v %v %v", body, pos,
						next, nl, rerr, vals, next2, nl2, blank2, rerr2, want)
				}
			} else if !reflect.DeepEqual(vals, make([]pipeline.Value, 5)) {
				t.Fatalf("%q at %d: a record left to the field-by-field parser has values set: %v", body, pos, vals)
			}
			pos = next2
		}
	})
}

// The common record of an export is read by the one-pass parser, not left to the field-by-field
// one: the speed of a plain CSV depends on it.
func TestPlainRowTakesPlainRecords(t *testing.T) {
	s := plainRowSource(t)
	vals := make([]pipeline.Value, 5)
	for _, rec := range []string{
		"u1234567891,1000000000,79.96,1704067200003,x,DELIVERED\n",
		"New York,-3,-0.5,0,,a b c\n",
		"a,1,2,3,,z", // the last line, without a newline
		",,,,,\n",
	} {
		if _, _, _, ok := s.parsePlainRow(rec, 0, vals); !ok {
			t.Errorf("%q left to the field-by-field parser", rec)
		}
	}
	for _, rec := range []string{"\"q\",1,2,3,,z\n", "a,1,2,3,,z\r\n", "é,1,2,3,,z\n", "\n"} {
		if _, _, _, ok := s.parsePlainRow(rec, 0, vals); ok {
			t.Errorf("%q taken by the one-pass parser", rec)
		}
	}
}
