package file

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cqlvalue"
)

// readRows reads path whole with the given chunking and limit.
func readRows(t *testing.T, path string, chunk, workers, limit int) []row {
	t.Helper()
	src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 5, Workers: workers, ChunkSize: chunk, MaxRecordSize: limit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rowsOf(runAll(t, src, nil))
}

// TestStrayQuoteRejectsOnlyItsLine: before, a quote on line 503 of 1,000 made rows_in 501, the 499
// later rows inside one reject's raw. The stray quote opens a field that never closes: that line
// alone is rejected and the 999 other lines are read, whatever the chunking, compressed or not, and
// from any resume point.
func TestStrayQuoteRejectsOnlyItsLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name,ts,amount\n")
	for line := 2; line <= 1001; line++ {
		if line == 503 {
			fmt.Fprintf(&b, "%d,\"user%d,%d,1.5\n", line, line, line)
			continue
		}
		fmt.Fprintf(&b, "%d,user%d,%d,1.5\n", line, line, line)
	}
	for _, name := range []string{"stray.csv", "stray.csv.gz"} {
		path := writeFile(t, name, b.String())
		for _, chunk := range []int{0, 1, 7, 64, 100, 333, 4096} {
			for _, workers := range []int{1, 3} {
				got := readRows(t, path, chunk, workers, 0)
				if len(got) != 1000 {
					t.Fatalf("%s chunk %d: %d records, want 1000 (one per line)", name, chunk, len(got))
				}
				for i, r := range got {
					line := int64(i + 2)
					if r.Seq != line {
						t.Fatalf("%s chunk %d: record %d has line %d", name, chunk, i, r.Seq)
					}
					if line == 503 {
						if r.Raw != `503,"user503,503,1.5` || !strings.Contains(r.Err, `parse: field "name": the quote that opens field 2 is not closed`) {
							t.Fatalf("%s chunk %d: line 503: %+v", name, chunk, r)
						}
						continue
					}
					if r.Err != "" || !strings.Contains(r.Values, fmt.Sprintf(`text:"user%d"`, line)) {
						t.Fatalf("%s chunk %d: line %d: %+v", name, chunk, line, r)
					}
				}
			}
		}
		// Resuming from any batch's cursor reads exactly the rows after it.
		src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 7, Workers: 2, ChunkSize: 50}, nil)
		if err != nil {
			t.Fatal(err)
		}
		batches := runAll(t, src, nil)
		all := rowsOf(batches)
		seen := 0
		for i, bt := range batches {
			seen += len(bt.Records)
			if bt.Done {
				continue
			}
			rest := rowsOf(runAll(t, src, map[string]pipeline.StreamState{bt.Stream: {Cursor: bt.Cursor}}))
			if !reflect.DeepEqual(rest, all[seen:]) {
				t.Fatalf("%s: resume after batch %d (%s): %d rows, want %d", name, i, bt.Cursor, len(rest), len(all)-seen)
			}
		}
	}
}

// TestStrayQuoteNearChunkBoundary moves a stray quote over every position around small chunk
// boundaries, in a file that also holds good multi-line quoted fields: the records read never
// depend on the chunking, and the stray quote costs only its own line.
func TestStrayQuoteNearChunkBoundary(t *testing.T) {
	const limit = 200
	var lines []string
	for i := 1; i <= 60; i++ {
		if i%16 == 0 { // a good quoted field over two lines, 16 lines (> limit bytes) apart
			lines = append(lines, fmt.Sprintf("%d,\"two\nlines, %d\",%d,1", i, i, i))
		} else {
			lines = append(lines, fmt.Sprintf("%d,name%d%s,%d,1", i, i, strings.Repeat("_", 20), i))
		}
	}
	for stray := 0; stray < len(lines); stray++ {
		if n := (stray + 1) % 16; n == 0 || n > 5 {
			continue // keep the next good quote more than limit bytes away
		}
		body := make([]string, len(lines))
		copy(body, lines)
		body[stray] = strings.Replace(body[stray], ",name", `,"name`, 1)
		path := writeFile(t, "s.csv", "id,name,ts,amount\n"+strings.Join(body, "\n")+"\n")
		ref := readRows(t, path, 1<<20, 1, limit)
		if len(ref) != len(lines) {
			t.Fatalf("stray quote on data line %d: %d records, want %d", stray+1, len(ref), len(lines))
		}
		for i, r := range ref {
			if (r.Err != "") != (i == stray) {
				t.Fatalf("stray quote on data line %d: record %d: %+v", stray+1, i, r)
			}
		}
		for _, chunk := range []int{1, 2, 3, 5, 8, 13, 21, 34, 55, 89} {
			if got := readRows(t, path, chunk, 2, limit); !reflect.DeepEqual(got, ref) {
				t.Fatalf("stray quote on data line %d, chunk %d:\n got %v\nwant %v", stray+1, chunk, got, ref)
			}
		}
	}
}

// TestMaxRecordSizeBoundsQuotedField: with --max-record-size 1KiB a multi-line quoted field under
// the limit is read, one over it is rejected from its record's start to the end of the quote's
// line, and reading goes on line by line; every line ends in exactly one record.
func TestMaxRecordSizeBoundsQuotedField(t *testing.T) {
	const limit = 1 << 10
	para := func(lines int) string { // lines of 99 characters
		var p []string
		for i := 0; i < lines; i++ {
			p = append(p, fmt.Sprintf("%02d ", i)+strings.Repeat("p", 96))
		}
		return strings.Join(p, "\n")
	}
	short, long := para(9), para(15) // 899 and 1499 bytes
	content := "id,name,ts,amount\n" +
		"1,\"" + short + "\",1,1\n" +
		"2,b,2,2\n" +
		"3,\"" + long + "\",3,3\n" +
		"4,d,4,4\n"
	for _, name := range []string{"m.csv", "m.csv.gz"} {
		path := writeFile(t, name, content)
		ref := readRows(t, path, 0, 1, limit)
		want := []row{
			{Seq: 2, Values: `int:"1" text:"` + strings.ReplaceAll(short, "\n", `\n`) + `" int:"1" decimal:"1"`},
			{Seq: 11, Values: `int:"2" text:"b" int:"2" decimal:"2"`},
			{Seq: 12, Raw: "3,\"00 " + strings.Repeat("p", 96), Err: `parse: field "name": the quote that opens field 2 is not closed within --max-record-size (1 KiB) or before the end of the file: the record is taken to end with that line and reading goes on with the next one (a stray '"' at the start of a field?)`},
		}
		for i := 1; i < 14; i++ {
			want = append(want, row{Seq: int64(12 + i), Raw: fmt.Sprintf("%02d ", i) + strings.Repeat("p", 96), Err: "parse: expected 4 fields, got 1"})
		}
		want = append(want,
			row{Seq: 26, Raw: "14 " + strings.Repeat("p", 96) + `",3,3`, Err: "parse: expected 4 fields, got 3"},
			row{Seq: 27, Values: `int:"4" text:"d" int:"4" decimal:"4"`})
		if !reflect.DeepEqual(ref, want) {
			t.Fatalf("%s:\n got %v\nwant %v", name, ref, want)
		}
		for _, chunk := range []int{1, 10, 100, 500, 1000, 1024, 1025, 2000} {
			for _, workers := range []int{1, 3} {
				if got := readRows(t, path, chunk, workers, limit); !reflect.DeepEqual(got, ref) {
					t.Fatalf("%s chunk %d workers %d:\n got %v\nwant %v", name, chunk, workers, got, ref)
				}
			}
		}
		// The default limit reads the long field.
		if got := readRows(t, path, 100, 2, 0); len(got) != 4 || got[2].Err != "" || got[2].Seq != 12 {
			t.Fatalf("%s with the default limit: %v", name, got)
		}
	}
}

// TestRecordLongerThanLimit: a line longer than the limit (with or without a quote, CSV or JSON)
// is one reject holding the line's start, and the reader never buffers much more than the limit
// for it, however long the line.
func TestRecordLongerThanLimit(t *testing.T) {
	const limit = 1 << 10
	huge := strings.Repeat("x", 300<<10)
	cases := []struct{ name, content, first, last string }{
		{"plain.csv", "id,name,ts,amount\n1,a,1,1\n2," + huge + ",2,2\n3,c,3,3\n", "1", "3"},
		{"quote.csv", "id,name,ts,amount\n1,a,1,1\n2,\"" + huge + ",2,2\n3,c,3,3\n", "1", "3"},
		{"closed.csv", "id,name,ts,amount\n1,a,1,1\n2,\"" + huge + "\",2,2\n3,c,3,3\n", "1", "3"},
		{"tail.csv", "id,name,ts,amount\n1,a,1,1\n2,\"" + huge, "1", ""},
		{"j.jsonl", `{"id":1}` + "\n" + `{"id":2,"name":"` + huge + `"}` + "\n" + `{"id":3}` + "\n", "1", "3"},
	}
	for _, tc := range cases {
		for _, gz := range []string{"", ".gz"} {
			path := writeFile(t, tc.name+gz, tc.content)
			for _, chunk := range []int{100, 1000, 4096, 1 << 20} {
				got := readRows(t, path, chunk, 2, limit)
				wantN := 3
				if tc.last == "" {
					wantN = 2
				}
				if len(got) != wantN || got[0].Err != "" || got[1].Err == "" ||
					(wantN == 3 && (got[2].Err != "" || !strings.HasPrefix(got[2].Values, `int:"3"`))) {
					t.Fatalf("%s%s chunk %d: %.300v", tc.name, gz, chunk, got)
				}
				bad := got[1]
				size := len(tc.content[strings.Index(tc.content, "\n2,")+1:])
				if i := strings.Index(tc.content, "\n3,"); i > 0 {
					size = i + 1 - (strings.Index(tc.content, "\n2,") + 1)
				}
				if strings.HasSuffix(tc.name, ".jsonl") {
					size = len(`{"id":2,"name":"`+huge+`"}`) + 1
				}
				wantErr := fmt.Sprintf("parse: record of %d bytes is longer than --max-record-size (1 KiB)", size)
				if bad.Seq != 3 && !(strings.HasSuffix(tc.name, ".jsonl") && bad.Seq == 2) || !strings.HasPrefix(bad.Err, wantErr) ||
					len(bad.Raw) != limit || !strings.Contains(tc.content, "\n"+bad.Raw) {
					t.Fatalf("%s%s chunk %d: reject seq %d raw %d bytes: %s (want %s)", tc.name, gz, chunk, bad.Seq, len(bad.Raw), bad.Err, wantErr)
				}
			}
			// The reader's chunks stay within the limit (+1 byte) or the chunk size.
			src, err := New(Config{Path: path, Schema: ordersSchema, ChunkSize: 100, MaxRecordSize: limit}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := src.openAt(context.Background(), src.dataStart, src.size)
			if err != nil {
				t.Fatal(err)
			}
			largest := 0
			err = src.readChunks(context.Background(), r, src.dataStart, src.dataLine, func(c *chunk) bool {
				largest = max(largest, len(c.data))
				return true
			})
			r.Close()
			if err != nil || largest > limit+1 {
				t.Fatalf("%s%s: largest chunk %d bytes (limit %d): %v", tc.name, gz, largest, limit, err)
			}
		}
	}
}

// fuzzDialects are the CSV dialects the fuzz tests try (those the URI options set): the splitter
// and the parser must agree on record boundaries in each.
var fuzzDialects = []CSVOptions{
	{},                              // RFC 4180
	{Delimiter: ';', Quote: '\''},   // another delimiter and quote; '' is an escaped '
	{Delimiter: '\t', Escape: '\\'}, // TSV with dsbulk's backslash escape
	{Escape: '\\', Comment: '#'},    // comments, where a quote opens nothing
	{Comment: '#', NoHeader: true, Null: "N"}, // comment lines with RFC 4180 quotes, no header
}

// FuzzCSVSplitPoint checks the splitter against the row parser directly: for a body parsed whole,
// every cut the splitter makes in a prefix starting at any record boundary is a record boundary,
// a record it gives up on (head > 0) is longer than the limit and ends where the parser says,
// and it asks for more bytes only while the record may still end within the limit. It does so in
// every dialect of fuzzDialects.
func FuzzCSVSplitPoint(f *testing.F) {
	f.Add("1,\"a\nb\",2,3\n", uint8(5), uint8(0))
	f.Add("1,\"stray\n2,b,c,d\n3,\"long\nquoted\nfield\",x,y\n4,e,f,g", uint8(9), uint8(0))
	f.Add("\"x\"y\"z,\n\"\n,\"\n\"\"\"\"\"\n", uint8(2), uint8(0))
	f.Add("aaaaaaaaaaaaaaaaaaa\nb,\"c\"\"\nd\",e\r\n", uint8(7), uint8(0))
	f.Add("1;'a;''b\n';x\n2;'\n", uint8(6), uint8(1))
	f.Add("1\t\"a\\\"b\\\\\"\tc\n2\t\"\\\"\n\\\\\"\n", uint8(9), uint8(2))
	f.Add("#c,\"x\n1,\"a\\\"\n#\",y\n#,\"\n2,b\n", uint8(4), uint8(3))
	f.Add("1,\"#a\n#b\",c\n#,\"q\n\"\"\n", uint8(8), uint8(4))
	f.Fuzz(func(t *testing.T, body string, limit, dialect uint8) {
		lim := int(limit%40) + 1
		d, err := fuzzDialects[int(dialect)%len(fuzzDialects)].resolve(false)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := cqlvalue.ParseType("text")
		s := &Source{cfg: Config{MaxRecordSize: lim}, csv: d, rfc: d.isRFC(), nfields: 4, colMap: []int{0, 1, 2, -1},
			names: []string{"a", "b", "c"}, types: []cqlvalue.Type{text, text, text}, kinds: []cqlvalue.Kind{cqlvalue.Text, cqlvalue.Text, cqlvalue.Text}}
		vals, vals2 := make([]pipeline.Value, 3), make([]pipeline.Value, 3)
		end := map[int]int{} // record start -> end, as the parser reads the whole body
		for pos := 0; pos < len(body); {
			clear(vals)
			next, nl, blank, rerr := s.parseCSVRow(body, pos, vals)
			if next <= pos {
				t.Fatalf("parser stuck at %d", pos)
			}
			if s.rfc {
				// the fast path and the dialect parser read the same records and values
				clear(vals2)
				next2, nl2, blank2, rerr2 := s.parseDialectRow(body, pos, vals2)
				if next2 != next || nl2 != nl || blank2 != blank || fmt.Sprint(rerr2) != fmt.Sprint(rerr) || !reflect.DeepEqual(vals, vals2) {
					t.Fatalf("%q at %d: RFC 4180 parser %d %d %v %v %v, dialect parser %d %d %v %v %v", body, pos,
						next, nl, blank, rerr, vals, next2, nl2, blank2, rerr2, vals2)
				}
			}
			end[pos] = next
			pos = next
		}
		end[len(body)] = len(body)
		for start := range end {
			for n := start + 1; n <= len(body); n++ {
				b := []byte(body[start:n])
				cut, head := s.csv.splitPoint(b, lim)
				switch {
				case cut > 0:
					if _, ok := end[start+cut]; !ok {
						t.Fatalf("limit %d: %q: cut %d is no record boundary", lim, b, cut)
					}
				case head > 0:
					e := strings.IndexByte(body[start+head:], '\n')
					want := len(body)
					if e >= 0 {
						want = start + head + e + 1
					}
					if head > n-start || end[start] != want || end[start]-start <= lim && end[start] != len(body) {
						t.Fatalf("limit %d: %q: head %d, but the record ends at %d (want %d)", lim, b, head, end[start]-start, want-start)
					}
					if strings.IndexByte(body[start+head:n], '\n') >= 0 {
						t.Fatalf("limit %d: %q: head %d but the record ends in the buffer", lim, b, head)
					}
				default:
					if len(b) > lim {
						t.Fatalf("limit %d: %q: %d bytes and no decision", lim, b, len(b))
					}
				}
			}
		}
	})
}

// TestChunksShrinkAfterALongRecord: a record longer than the chunk size grows the read buffer to
// hold it; the chunks after it go back to the chunk size. Before, the buffer stayed grown (up to
// --max-record-size, 16 MiB) for the rest of the file, and every later chunk, with the records
// parsed from it, was that large: one stray quote took a --memory 256MiB run from 225 to 440 MB.
func TestChunksShrinkAfterALongRecord(t *testing.T) {
	const chunkSize = 256
	var b strings.Builder
	b.WriteString("id,name,ts,amount\n")
	fmt.Fprintf(&b, "1,\"%s\",1,1.5\n", strings.Repeat("long\n", 400)) // 2 KB, quoted, within the limit
	for line := 2; line <= 500; line++ {
		fmt.Fprintf(&b, "%d,user%d,%d,1.5\n", line, line, line)
	}
	src, err := New(Config{Path: writeFile(t, "long.csv", b.String()), Schema: ordersSchema, ChunkSize: chunkSize, MaxRecordSize: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.openAt(context.Background(), src.dataStart, src.size)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sizes []int
	err = src.readChunks(context.Background(), r, src.dataStart, src.dataLine, func(c *chunk) bool {
		sizes = append(sizes, len(c.data))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) < 3 || sizes[0] <= chunkSize {
		t.Fatalf("chunk sizes %v: want a first chunk holding the long record, then more", sizes)
	}
	for i, n := range sizes[1:] {
		if n > chunkSize {
			t.Fatalf("chunk %d after the long record is %d bytes, more than the chunk size %d (all: %v)", i+1, n, chunkSize, sizes)
		}
	}
}
