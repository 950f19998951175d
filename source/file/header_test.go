package file

import (
	"strings"
	"testing"
	"unicode/utf16"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
)

// TestDuplicateHeaderColumn: before, a duplicate header name (amount,amount) silently used the
// first. Two fields that the same declared column would match are an error naming both positions;
// an exact match wins over one that differs in case only, with a warning.
func TestDuplicateHeaderColumn(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"id,amount,name,ts,amount", `header names column "amount" twice (fields 2 and 5): rename or drop one of them in the header line`},
		{"amount,id,amount,name,ts,amount", `header names column "amount" 3 times (fields 1, 3 and 6)`},
		{"id,Amount,name,ts,AMOUNT ", `header has no column "amount" but 2 that match it ignoring case ("Amount" field 2, "AMOUNT " field 5)`},
	} {
		path := writeFile(t, "d.csv", tc.header+"\n1,2,3,4,5,6\n")
		_, err := New(Config{Path: path, Schema: ordersSchema}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("header %s: %v\nwant an error naming the file and: %s", tc.header, err, tc.want)
		}
	}

	// An exact match wins over a field that differs in case only; both that field and the
	// undeclared one are reported at warn level (the default log level shows them).
	core, logs := observer.New(zapcore.WarnLevel)
	path := writeFile(t, "e.csv", "Amount,id,name,ts,amount,extra\n9.5,1,a,0,2.5,x\n")
	src, err := New(Config{Path: path, Schema: ordersSchema}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(runAll(t, src, nil))
	if len(got) != 1 || got[0].Values != `int:"1" text:"a" int:"0" decimal:"2.5"` {
		t.Fatalf("exact match: %v", got)
	}
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
		if e.Message == "ignoring CSV columns that the mapping does not declare" {
			if cols := e.ContextMap()["columns"]; !strings.Contains(strings.Join(toStrings(cols), ","), "Amount,extra") {
				t.Errorf("extra columns logged: %v", cols)
			}
		}
	}
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0], "ignoring CSV columns") || !strings.Contains(msgs[1], "only in case") {
		t.Fatalf("warnings: %q", msgs)
	}
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, e.(string))
		}
		return out
	}
	return nil
}

// TestNullTextThatNoFieldCanBeIsRefused: null= names the text of an unquoted field, so a text
// that starts with the quote character, or holds the delimiter or a line break, is no field's:
// refused, naming it. Before, null=%22%22 (an export's nulls written as "") and null=%22NULL%22
// were taken and never matched: every such field was read as the text "" or "NULL" instead of
// null, without a word.
func TestNullTextThatNoFieldCanBeIsRefused(t *testing.T) {
	for _, c := range []struct {
		file string
		opts CSVOptions
		want string
	}{
		{"o.csv", CSVOptions{Null: `""`}, `null="\"\"" starts with the quote character '"'`},
		{"o.csv", CSVOptions{Null: `"NULL"`}, `null="\"NULL\"" starts with the quote character '"'`},
		{"o.csv", CSVOptions{Null: `'N'`, Quote: '\''}, `starts with the quote character '\''`},
		{"o.csv", CSVOptions{Null: "N,A"}, `null="N,A" holds the delimiter ','`},
		{"o.tsv", CSVOptions{Null: "N\tA"}, `holds the delimiter tab`},
		{"o.csv", CSVOptions{Null: "N\nA"}, `holds a line break`},
	} {
		header := ordersHeader
		if strings.HasSuffix(c.file, ".tsv") {
			header = strings.ReplaceAll(header, ",", "\t")
		}
		path := writeFile(t, c.file, header)
		_, err := New(Config{Path: path, Schema: ordersSchema, CSV: c.opts}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want an error saying %s", c.file, c.opts, err, c.want)
		}
	}
	// a null text that an unquoted field can be is taken, the quote inside it included
	for _, null := range []string{"NULL", `\N`, `N"A`, " "} {
		if _, err := New(Config{Path: writeFile(t, "o.csv", ordersHeader), Schema: ordersSchema, CSV: CSVOptions{Null: null}}, nil); err != nil {
			t.Errorf("null=%q: %v", null, err)
		}
	}
}

// TestCROnlyLineEndsAreRefused: a file whose lines end with a carriage return alone (classic Mac
// OS, Excel for Mac's "CSV (Macintosh)") holds no line end rekey reads, so the whole file is one
// line: refused when it opens, saying so and how to convert it. Before, its header was one field
// run into the rows ("header has no column "name" (header: id,name1,a2,b)", the CRs hidden), and
// with header=false or JSON Lines the whole file was read as one record: a reject, or, for one
// text column, one row whose value held every line ("x\r1\r2").
func TestCROnlyLineEndsAreRefused(t *testing.T) {
	for _, c := range []struct {
		file, content string
		opts          CSVOptions
		schema        pipeline.SourceSchema
	}{
		{"o.csv", "id,name,ts,amount\r1,a,1,1\r2,b,2,2\r", CSVOptions{}, ordersSchema},
		{"o.csv", "1,a,1,1\r2,b,2,2\r", CSVOptions{NoHeader: true}, ordersSchema},
		{"o.csv", "x\r1\r2\r", CSVOptions{NoHeader: true}, pipeline.SourceSchema{{Name: "v", Type: "text"}}},
		{"o.jsonl", `{"id":1}` + "\r" + `{"id":2}` + "\r", CSVOptions{}, ordersSchema},
		{"o.csv.gz", "\ufeffid,name,ts,amount\r1,a,1,1\r", CSVOptions{}, ordersSchema},
	} {
		_, err := New(Config{Path: writeFile(t, c.file, c.content), Schema: c.schema, CSV: c.opts}, nil)
		if err == nil || !strings.Contains(err.Error(), "carriage return alone") || !strings.Contains(err.Error(), `tr '\r' '\n'`) {
			t.Errorf("%s %q: %v, want an error saying its lines end with a carriage return alone", c.file, c.content, err)
		}
	}
	// a CR within a line, or in a quoted field, of a file whose lines end otherwise is read
	for _, c := range []struct {
		content string
		opts    CSVOptions
	}{
		{"id,name,ts,amount\r\n1,a,1,1\r\n", CSVOptions{}},
		{"id,name,ts,amount\n1,a\rb,1,1\n", CSVOptions{}},
		{"1,\"a\rb\",1,1", CSVOptions{NoHeader: true}},
		{"1,a,1,1\r", CSVOptions{NoHeader: true}},
	} {
		if _, err := New(Config{Path: writeFile(t, "o.csv", c.content), Schema: ordersSchema, CSV: c.opts}, nil); err != nil {
			t.Errorf("%q: %v", c.content, err)
		}
	}
	// binary bytes (not UTF-8) that hold a CR are no text with CR line ends: not said to be
	if _, err := New(Config{Path: writeFile(t, "b.csv", "\x8b\x08\x00\xc3\r\x91\x02"), Schema: ordersSchema}, nil); err == nil || strings.Contains(err.Error(), "carriage return") {
		t.Errorf("binary bytes: %v, want an error that does not speak of line ends", err)
	}
}

// encodeUTF16 encodes s as UTF-16 with its byte order mark, little- or big-endian.
func encodeUTF16(s string, little bool) string {
	b := []byte{0xfe, 0xff}
	if little {
		b = []byte{0xff, 0xfe}
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if little {
			b = append(b, byte(u), byte(u>>8))
		} else {
			b = append(b, byte(u>>8), byte(u))
		}
	}
	return string(b)
}

// TestUTF16FileIsRefused: a UTF-16 file (Excel's "Unicode Text", PowerShell's Out-File) is refused
// when it opens, saying what it is and how to convert it. Before, its header failed to match,
// quoted with its zero bytes ("header has no column "id" (header: \xff\xfei\x00d\x00...)"), and
// with header=false its text columns were read as text with a zero byte between characters.
func TestUTF16FileIsRefused(t *testing.T) {
	text := pipeline.SourceSchema{{Name: "a", Type: "text"}, {Name: "b", Type: "text"}}
	for _, c := range []struct {
		file, content string
		opts          CSVOptions
		schema        pipeline.SourceSchema
	}{
		{"o.csv", encodeUTF16("id,name,ts,amount\n1,a,1,1\n", true), CSVOptions{}, ordersSchema},
		{"o.tsv", encodeUTF16("id\tname\tts\tamount\r\n1\ta\t1\t1\r\n", false), CSVOptions{}, ordersSchema},
		{"o.csv", encodeUTF16("x,y\nz,w\n", true), CSVOptions{NoHeader: true}, text},
		{"o.jsonl.gz", encodeUTF16(`{"a":"x"}`+"\n", true), CSVOptions{}, text},
	} {
		_, err := New(Config{Path: writeFile(t, c.file, c.content), Schema: c.schema, CSV: c.opts}, nil)
		if err == nil || !strings.Contains(err.Error(), "UTF-16") || !strings.Contains(err.Error(), "iconv -f UTF-16 -t UTF-8") {
			t.Errorf("%s %q: %v, want an error saying it is UTF-16", c.file, c.content, err)
		}
	}
}

// TestHeaderWithInvisibleCharactersSaysSo: a header field that names a declared column but for
// characters that do not show (a second byte order mark, as two exports concatenated leave; a
// zero-width space) fails naming the field escaped and what to remove.
// Before, the error printed the header as it is: "header has no column "id" (header:
// id,name,ts,amount)", the column seemingly there.
func TestHeaderWithInvisibleCharactersSaysSo(t *testing.T) {
	for _, c := range []struct{ header, want string }{
		{"\ufeff\ufeffid,name,ts,amount\n", `field 1 is "\ufeffid"`},
		{"id,name,\u200bts,amount\n", `field 3 is "\u200bts"`},
	} {
		_, err := New(Config{Path: writeFile(t, "o.csv", c.header+"1,a,1,1\n"), Schema: ordersSchema}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "characters that do not show") {
			t.Errorf("%q: %v, want an error saying %s, with characters that do not show", c.header, err, c.want)
		}
	}
}
