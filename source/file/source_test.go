package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/gen"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	data := []byte(content)
	if strings.HasSuffix(name, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runAll(t *testing.T, src *Source, resume map[string]pipeline.StreamState) []pipeline.Batch {
	t.Helper()
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), resume, out); close(out) }()
	var batches []pipeline.Batch
	for b := range out {
		batches = append(batches, b)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return batches
}

// row is a record in comparable form.
type row struct {
	Seq    int64
	Values string
	Raw    string
	Err    string
}

func rowsOf(batches []pipeline.Batch) []row {
	var rows []row
	for _, b := range batches {
		for _, r := range b.Records {
			x := row{Seq: r.Seq}
			if r.Err != nil {
				x.Err, x.Raw = r.Err.Error(), r.Raw
			} else {
				x.Values = fmtValues(r.Values)
				if r.Raw == "" { // good rows keep their line too, for rejects made downstream
					x.Values += " (no raw line)"
				}
			}
			rows = append(rows, x)
		}
	}
	return rows
}

func fmtValues(vs []pipeline.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		if v.IsNull() {
			parts[i] = "NULL"
		} else {
			parts[i] = fmt.Sprintf("%s:%q", v.Kind, v.String())
		}
	}
	return strings.Join(parts, " ")
}

// ts is read as explicit epoch milliseconds: the rows use small numbers (1, 2, ...), which
// without a unit would be rejected as looking like epoch seconds.
var ordersSchema = pipeline.SourceSchema{
	{Name: "id", Type: "bigint"}, {Name: "name", Type: "text"}, {Name: "ts", Type: "timestamp(ms)"},
	{Name: "amount", Type: "decimal"},
}

const trickyCSV = "\ufeffid,name,extra,ts,amount\r\n" +
	"1,alice,x,2024-01-02T03:04:05Z,1.50\r\n" +
	"2,\"bob, jr.\",x,1704067200000,2\r\n" +
	"3,\"multi\nline \"\"quoted\"\"\",x,2024-01-01,-0.5\r\n" +
	"4,,x,,\r\n" +
	"5,\"\",x,\"\",\"\"\r\n" +
	"\r\n" +
	"6,too,many,fields,here,now\r\n" +
	"7,carol,x,not-a-time,3\r\n" +
	"8,dan,x,2024-01-02 03:04:05.678000+0000,1E2\r\n" +
	"9,stray\"quote,x,0,0\n" +
	"10,\"é漢字\",x,0,0"

func trickyWant() []row {
	return []row{
		{Seq: 2, Values: `int:"1" text:"alice" int:"1704164645000" decimal:"1.50"`},
		{Seq: 3, Values: `int:"2" text:"bob, jr." int:"1704067200000" decimal:"2"`},
		{Seq: 4, Values: `int:"3" text:"multi\nline \"quoted\"" int:"1704067200000" decimal:"-0.5"`},
		{Seq: 6, Values: `int:"4" NULL NULL NULL`},
		{Seq: 7, Values: `int:"5" text:"" NULL NULL`},
		{Seq: 9, Raw: "6,too,many,fields,here,now", Err: "parse: expected 5 fields, got 6"},
		{Seq: 10, Raw: "7,carol,x,not-a-time,3", Err: `type: field "ts": invalid timestamp "not-a-time": expected epoch milliseconds or ISO-8601 like 2024-01-02T03:04:05.678Z`},
		{Seq: 11, Values: `int:"8" text:"dan" int:"1704164645678" decimal:"100"`},
		{Seq: 12, Values: `int:"9" text:"stray\"quote" int:"0" decimal:"0"`},
		{Seq: 13, Values: `int:"10" text:"é漢字" int:"0" decimal:"0"`},
	}
}

func TestCSVTricky(t *testing.T) {
	for _, name := range []string{"t.csv", "t.csv.gz"} {
		path := writeFile(t, name, trickyCSV)
		for _, chunk := range []int{0, 1, 2, 3, 5, 7, 16, 31} {
			for _, workers := range []int{1, 3} {
				src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 3, Workers: workers, ChunkSize: chunk}, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := rowsOf(runAll(t, src, nil))
				if want := trickyWant(); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s chunk %d workers %d:\n got %v\nwant %v", name, chunk, workers, got, want)
				}
			}
		}
	}
}

// TestCSVUnterminatedQuote: a quote the file ends inside rejects only its own line; the next
// line is read as a record of its own.
func TestCSVUnterminatedQuote(t *testing.T) {
	path := writeFile(t, "u.csv", "id,name,ts,amount\n1,a,0,0\n2,\"open\nstill open,0,0\n")
	src, err := New(Config{Path: path, Schema: ordersSchema, ChunkSize: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(runAll(t, src, nil))
	want := []row{
		{Seq: 2, Values: `int:"1" text:"a" int:"0" decimal:"0"`},
		{Seq: 3, Raw: "2,\"open", Err: `parse: field "name": the quote that opens field 2 is not closed within --max-record-size (16 MiB) or before the end of the file: the record is taken to end with that line and reading goes on with the next one (a stray '"' at the start of a field?)`},
		{Seq: 4, Raw: "still open,0,0", Err: `parse: expected 4 fields, got 3`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestCSVLongRecordGrowsChunk(t *testing.T) {
	long := strings.Repeat("x", 10000)
	path := writeFile(t, "l.csv", "id,name,ts,amount\n1,"+long+",0,0\n2,\""+long+"\n"+long+"\",0,0\n")
	src, err := New(Config{Path: path, Schema: ordersSchema, ChunkSize: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(runAll(t, src, nil))
	if len(got) != 2 || got[0].Values != `int:"1" text:"`+long+`" int:"0" decimal:"0"` || got[1].Seq != 3 ||
		got[1].Values != `int:"2" text:"`+long+`\n`+long+`" int:"0" decimal:"0"` {
		t.Fatalf("got %.200v", got)
	}
}

func TestBatchesOrderedAndResume(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name,ts,amount\n")
	for i := 1; i <= 500; i++ {
		switch {
		case i%97 == 0:
			fmt.Fprintf(&b, "%d,bad row\n", i)
		case i%13 == 0:
			fmt.Fprintf(&b, "%d,\"multi\nline, %d\",%d,%d.5\n", i, i, i, i)
		default:
			fmt.Fprintf(&b, "%d,name%d,%d,%d.25\n", i, i, i, i)
		}
	}
	var jb strings.Builder
	for i := 1; i <= 500; i++ {
		switch {
		case i%97 == 0:
			fmt.Fprintf(&jb, "{\"id\": %d, bad json\n", i)
		case i%31 == 0:
			jb.WriteString("\n")
		default:
			fmt.Fprintf(&jb, `{"id":%d,"name":"n\u00e9%d","ts":"2024-01-01T00:00:%02dZ","amount":%d.5,"other":[1,{"a":2}]}`+"\n", i, i, i%60, i)
		}
	}
	cases := []struct{ name, content string }{
		{"r.csv", b.String()}, {"r.csv.gz", b.String()},
		{"r.jsonl", jb.String()}, {"r.ndjson.gz", jb.String()},
	}
	for _, tc := range cases {
		path := writeFile(t, tc.name, tc.content)
		src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 7, Workers: 3, ChunkSize: 100}, nil)
		if err != nil {
			t.Fatal(err)
		}
		batches := runAll(t, src, nil)
		all := rowsOf(batches)
		// Every input row is counted: records + blank lines = lines.
		wantRecords := 500
		if strings.HasPrefix(tc.name, "r.jsonl") || strings.HasPrefix(tc.name, "r.ndjson") {
			wantRecords = 500 - (500 / 31)
		}
		if len(all) != wantRecords {
			t.Fatalf("%s: %d records, want %d", tc.name, len(all), wantRecords)
		}
		var errs int
		for _, r := range all {
			if r.Err != "" {
				errs++
				// The bad rows are i%97 == 0; for CSV, line = i+1 plus the extra lines of the
				// multi-line rows before it; JSON lines are i.
				i := r.Seq
				if strings.HasSuffix(tc.name, ".csv") || strings.HasSuffix(tc.name, ".csv.gz") {
					i = r.Seq - 1 - (r.Seq-1)/14
				}
				if i%97 != 0 || !strings.HasPrefix(r.Raw, fmt.Sprint(i)) && !strings.Contains(r.Raw, fmt.Sprintf(`"id": %d,`, i)) {
					t.Fatalf("%s: reject %+v", tc.name, r)
				}
			}
		}
		if errs != 5 {
			t.Fatalf("%s: %d rejects, want 5", tc.name, errs)
		}
		// Order: Seq strictly increasing, cursors monotonic, Done only on the last batch.
		var lastSeq, lastOff int64 = 0, -1
		for i, bt := range batches {
			if bt.Stream != filepath.Base(path) {
				t.Fatalf("stream %q", bt.Stream)
			}
			if bt.Done != (i == len(batches)-1) {
				t.Fatalf("%s: batch %d/%d Done=%v", tc.name, i, len(batches), bt.Done)
			}
			off, _, err := parseCursor(bt.Cursor)
			if err != nil || off < lastOff {
				t.Fatalf("%s: cursor %q after %d: %v", tc.name, bt.Cursor, lastOff, err)
			}
			lastOff = off
			for _, r := range bt.Records {
				if r.Seq <= lastSeq {
					t.Fatalf("%s: seq %d after %d", tc.name, r.Seq, lastSeq)
				}
				lastSeq = r.Seq
			}
		}
		// Resume from every batch's cursor gives exactly the remaining rows.
		seen := 0
		for i, bt := range batches {
			seen += len(bt.Records)
			resume := map[string]pipeline.StreamState{bt.Stream: {Cursor: bt.Cursor, Done: bt.Done}}
			rest := rowsOf(runAll(t, src, resume))
			want := all[seen:]
			if len(rest) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(rest, want) {
				t.Fatalf("%s: resume after batch %d (%s): got %d rows, want %d\n%v\n%v", tc.name, i, bt.Cursor, len(rest), len(want), rest, want)
			}
		}
	}
}

func TestCSVMatchesAcrossChunkSizes(t *testing.T) {
	// Quoted fields full of separators, newlines and escaped quotes, with chunk sizes that put
	// boundaries everywhere.
	var b strings.Builder
	b.WriteString("id,name,ts,amount\n")
	for i := 1; i <= 200; i++ {
		name := strings.Repeat(fmt.Sprintf("a,\"\"b\n%d", i), i%4)
		fmt.Fprintf(&b, "%d,\"%s\",%d,1\n", i, name, i)
	}
	path := writeFile(t, "q.csv", b.String())
	ref := []row(nil)
	for _, chunk := range []int{0, 1, 2, 3, 4, 5, 8, 13, 64, 1000} {
		src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 5, Workers: 2, ChunkSize: chunk}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := rowsOf(runAll(t, src, nil))
		if ref == nil {
			ref = got
			if len(ref) != 200 {
				t.Fatalf("%d rows", len(ref))
			}
			for i, r := range ref {
				name := strings.Repeat(fmt.Sprintf("a,\"b\n%d", i+1), (i+1)%4)
				if r.Err != "" || !strings.Contains(r.Values, fmt.Sprintf("text:%q", name)) {
					t.Fatalf("row %d: %+v", i, r)
				}
			}
			continue
		}
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("chunk %d differs", chunk)
		}
	}
}

func TestJSONL(t *testing.T) {
	content := `{"id": 1, "name": "a\"b\u00e9", "ts": 1704067200000, "amount": 0.10, "extra": {"x": [1,2]}}
{"id": "2", "ts": "2024-01-02T03:04:05+08:00", "amount": "1e-3"}

{"id": 3, "name": null, bad}
{"id": 4.5}
{"name": {"nested": true}, "amount": 12345678901234567890.5}
`
	for _, name := range []string{"j.jsonl", "j.ndjson", "j.jsonl.gz"} {
		path := writeFile(t, name, content)
		src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 2, ChunkSize: 16}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := rowsOf(runAll(t, src, nil))
		want := []row{
			{Seq: 1, Values: `int:"1" text:"a\"bé" int:"1704067200000" decimal:"0.10"`},
			{Seq: 2, Values: `int:"2" NULL int:"1704135845000" decimal:"0.001"`},
			{Seq: 4, Raw: `{"id": 3, "name": null, bad}`, Err: `parse: invalid JSON: expected a member name at offset 24`},
			{Seq: 5, Raw: `{"id": 4.5}`, Err: `type: field "id": invalid bigint "4.5": expected an integer`},
			{Seq: 6, Values: `NULL text:"{\"nested\":true}" NULL decimal:"12345678901234567890.5"`},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
}

// TestTruncatedJSONLinesFailsRun: a JSON Lines file whose last line has no line end and stops
// inside its JSON (a copy or download cut short, a writer killed mid-line) fails the run as damaged
// input, naming the line. Before, the cut line was one reject among others and the run completed,
// the rows the file lost after it missing without a word. A last line without a line end that is
// whole JSON is a row, one that is whole but not valid JSON is a reject, as a cut line with a line
// end after it is.
func TestTruncatedJSONLinesFailsRun(t *testing.T) {
	const head = `{"id":1,"name":"a"}` + "\n" + `{"id":2,"na` + "\n"
	cases := []struct {
		last    string
		damaged bool
		rows    int // rows and rejects read when not damaged
	}{
		{`{"id":3,"name":"c"}`, false, 3},
		{`{"id":3,"name":"c"}  `, false, 3},
		{`{"id":3,}`, false, 3},
		{`{"id":3,"name":"c"`, true, 0},
		{`{"id":3,"name":"c`, true, 0},
		{`{"id":3,"na`, true, 0},
		{`{"id":3,`, true, 0},
		{`{"id":3`, true, 0},
		{`{"id":tru`, true, 0},
		{`{`, true, 0},
	}
	for _, c := range cases {
		for _, name := range []string{"t.jsonl", "t.jsonl.gz"} {
			for _, chunk := range []int{1 << 20, 5} {
				src, err := New(Config{Path: writeFile(t, name, head+c.last), Schema: conformanceSchema, ChunkSize: chunk, BatchSize: 2}, nil)
				if err != nil {
					t.Fatal(err)
				}
				out := make(chan pipeline.Batch)
				errc := make(chan error, 1)
				go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
				var rows []row
				for b := range out {
					rows = append(rows, rowsOf([]pipeline.Batch{b})...)
				}
				err = <-errc
				switch {
				case c.damaged && (!errors.Is(err, pipeline.ErrDamagedInput) || !strings.Contains(err.Error(), "line 3")):
					t.Errorf("%s ending %q (chunk %d): %d rows and rejects %v, error %v; want the run failed as damaged input, naming line 3", name, c.last, chunk, len(rows), rows, err)
				case !c.damaged && (err != nil || len(rows) != c.rows):
					t.Errorf("%s ending %q (chunk %d): rows %v, error %v; want %d rows and rejects", name, c.last, chunk, rows, err, c.rows)
				}
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{Path: filepath.Join(t.TempDir(), "orders.csv"), Schema: ordersSchema}, nil)
	if err == nil || !strings.Contains(err.Error(), "orders.csv not found: check the --source path") {
		t.Fatalf("missing file: %v", err)
	}
	path := writeFile(t, "h.csv", "id,nome,ts\n1,a,0\n")
	_, err = New(Config{Path: path, Schema: ordersSchema}, nil)
	if err == nil || !strings.Contains(err.Error(), `header has no column "name", "amount" (header: id,nome,ts)`) {
		t.Fatalf("missing column: %v", err)
	}
	path = writeFile(t, "h.txt", "x")
	if _, err = New(Config{Path: path, Schema: ordersSchema}, nil); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("format: %v", err)
	}
	path = writeFile(t, "long.csv", strings.Repeat("id", 1<<20))
	if _, err = New(Config{Path: path, Schema: ordersSchema}, nil); err == nil || !strings.Contains(err.Error(), "long.csv: the CSV header (line 1) does not end within the first 1 MiB") {
		t.Fatalf("header without an end: %v", err)
	}
	path = writeFile(t, "t.csv", "id\n")
	if _, err = New(Config{Path: path, Schema: pipeline.SourceSchema{{Name: "id", Type: "bigintt"}}}, nil); err == nil || !strings.Contains(err.Error(), `column "id"`) {
		t.Fatalf("type: %v", err)
	}
	// Case-insensitive header match; a header-only file gives one empty Done batch.
	path = writeFile(t, "c.csv", "ID,Name,TS,Amount\n")
	src, err := New(Config{Path: path, Schema: ordersSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs := runAll(t, src, nil)
	if len(bs) != 1 || !bs[0].Done || len(bs[0].Records) != 0 {
		t.Fatalf("header-only: %+v", bs)
	}
	if n := src.EstimatedRows(); n != 0 {
		t.Fatalf("estimate %d", n)
	}
}

func TestEstimateAndSample(t *testing.T) {
	const rows = 20000
	path := writeOrdersCSV(t, rows)
	schema := pipeline.SourceSchema{{Name: "orderid", Type: "bigint"}, {Name: "userid", Type: "text"}}
	src, err := New(Config{Path: path, Schema: schema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := src.EstimatedRows(); n < rows*95/100 || n > rows*105/100 {
		t.Fatalf("estimate %d, want about %d", n, rows)
	}
	sample, err := src.Sample(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(sample) != 100 {
		t.Fatalf("%d samples", len(sample))
	}
	const base = 1000000000
	prev := int64(-1)
	for _, r := range sample {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		id := r.Values[0].Num - base
		if id <= prev || id >= rows || len(r.Values[1].Str) != 11 {
			t.Fatalf("sample not increasing or bad: %d after %d (%v)", id, prev, r.Values)
		}
		prev = id
	}
	if first, last := sample[0].Values[0].Num-base, sample[99].Values[0].Num-base; first > rows/50 || last < rows*97/100 {
		t.Fatalf("sample not spread: %d..%d", first, last)
	}
	// Small sample relative to n: reads everything, spread evenly, with line numbers.
	small, err := src.Sample(context.Background(), rows*2)
	if err != nil || len(small) != rows || small[0].Seq != 2 || small[rows-1].Seq != rows+1 {
		t.Fatalf("whole-file sample: %d rows, %v", len(small), err)
	}
	// gzip: the first n rows, size unknown.
	data, _ := os.ReadFile(path)
	gz := writeFile(t, "o.csv.gz", string(data))
	src, err = New(Config{Path: gz, Schema: schema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := src.EstimatedRows(); n != -1 {
		t.Fatalf("gz estimate %d", n)
	}
	sample, err = src.Sample(context.Background(), 10)
	if err != nil || len(sample) != 10 || sample[9].Values[0].Num != base+9 || sample[9].Seq != 11 {
		t.Fatalf("gz sample: %v %v", sample, err)
	}
}

func TestCancel(t *testing.T) {
	path := writeOrdersCSV(t, 200000)
	schema := pipeline.SourceSchema{{Name: "orderid", Type: "bigint"}}
	for _, name := range []string{"plain", "gz"} {
		p := path
		if name == "gz" {
			data, _ := os.ReadFile(path)
			p = writeFile(t, "o.csv.gz", string(data))
		}
		src, err := New(Config{Path: p, Schema: schema, BatchSize: 100, ChunkSize: 64 << 10}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan pipeline.Batch)
		errc := make(chan error, 1)
		go func() { errc <- src.Run(ctx, nil, out) }()
		<-out
		<-out
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: Run returned %v", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: Run did not stop", name)
		}
	}
}

func TestResumeDone(t *testing.T) {
	path := writeFile(t, "d.csv", "id,name,ts,amount\n1,a,0,0\n")
	src, err := New(Config{Path: path, Schema: ordersSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bs := runAll(t, src, map[string]pipeline.StreamState{"d.csv": {Cursor: "off=18,line=2", Done: true}}); len(bs) != 0 {
		t.Fatalf("done stream sent %d batches", len(bs))
	}
	out := make(chan pipeline.Batch, 10)
	if err := src.Run(context.Background(), map[string]pipeline.StreamState{"d.csv": {Cursor: "bogus"}}, out); err == nil {
		t.Fatal("bad cursor accepted")
	}
}

// A file written to while it is read (an export still running, a file rewritten in place) fails
// the run as damaged input: its last line may be cut (2,b of 2,bob), and rows written since its
// size was taken are not all read. Before, the run read to wherever the file ended then and
// completed.
func TestFileChangedWhileReadFailsRun(t *testing.T) {
	for _, name := range []string{"w.csv", "w.jsonl"} {
		first, more := "id,name,ts,amount\n1,a,0,0\n2,b", "ob,0,0\n3,c,0,0\n"
		if name == "w.jsonl" {
			first, more = `{"id":1}`+"\n"+`{"id":2,"name":"b`, `ob"}`+"\n"
		}
		path := writeFile(t, name, first)
		src, err := New(Config{Path: path, Schema: ordersSchema}, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(more) // the writer goes on
		f.Close()
		out := make(chan pipeline.Batch, 100)
		err = src.Run(context.Background(), nil, out)
		if !errors.Is(err, pipeline.ErrDamagedInput) || !strings.Contains(err.Error(), "changed while it was read") {
			t.Fatalf("%s: run over a file written to meanwhile: %v, want it to fail as damaged input", name, err)
		}
	}
}

// A pipe named as a file (bash's <(zcat rows.jsonl.gz), /dev/fd/63) is refused: New reads a
// file's head and Run opens it again, which on a pipe went on after the head, so the rows in it
// were silently lost (the first ~1 MiB of a migration of <(cat ...)). stdin reads a pipe once.
func TestPipeNamedAsFileIsRefused(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	const rows = 2000
	go func() {
		for i := range rows {
			fmt.Fprintf(w, `{"id":%d,"name":"n%d"}`+"\n", i, i)
		}
		w.Close()
	}()
	src, err := New(Config{Path: path, Format: "jsonl", Schema: ordersSchema, headSize: 4096}, nil)
	if err == nil {
		n := 0
		for _, r := range rowsOf(runAll(t, src, nil)) {
			if r.Err == "" {
				n++
			}
		}
		t.Fatalf("a pipe read as a file: %d of its %d rows read, and no error", n, rows)
	}
	if !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), "file:-") {
		t.Fatalf("refused with %v, want it named as not a regular file, with stdin (file:-) to use", err)
	}
}

// FuzzCSVChunking checks that chunk boundaries never change what is read, whatever the input
// (malformed quotes included), the record size limit and the dialect (fuzzDialects): the splitter
// and the row parser follow the same rules.
func FuzzCSVChunking(f *testing.F) {
	f.Add("1,\"a\nb\",2,3\n", uint8(0))
	f.Add(trickyCSV[len("\ufeffid,name,extra,ts,amount\r\n"):], uint8(0))
	f.Add("1,a\"b,\"c\"\"\n\",4\r\n\"\"\"\",\n", uint8(0))
	f.Add("\"x\"y\"z,\n\"\n,\"\n", uint8(0))
	f.Add("1,\"stray\n2,b,c,d\n3,\"long\nquoted\nfield\",x,y\n4,e,f,g", uint8(0))
	f.Add("1,aaaaaaaaaaaaaaaaaaaaaaaaa,\"b\"\r\n,\"\n\n\n\"\"\"\n", uint8(0))
	f.Add("1;'a;''b\n';x;y\n2;'\n", uint8(1))
	f.Add("1\t\"a\\\"b\\\\\"\tc\td\n2\t\"\\\"\n\\\\\"\tx\ty\n", uint8(2))
	f.Add("#c,\"x\n1,\"a\\\"\n#\",y,z,w\n#,\"\n2,b,c,d\n", uint8(3))
	f.Add("1,N,\"#a\n#b\",c\n#,\"q\n\"\"\n", uint8(4))
	f.Fuzz(func(t *testing.T, body string, dialect uint8) {
		opts := fuzzDialects[int(dialect)%len(fuzzDialects)]
		header := ""
		if !opts.NoHeader {
			d := opts.Delimiter
			if d == 0 {
				d = ','
			}
			header = strings.ReplaceAll("id,name,ts,amount\n", ",", string(rune(d)))
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(path, []byte(header+body), 0o644); err != nil {
			t.Fatal(err)
		}
		first := int64(2) // the line of the first record
		if opts.NoHeader {
			first = 1
		}
		schema := pipeline.SourceSchema{{Name: "id", Type: "text"}, {Name: "name", Type: "text"}, {Name: "ts", Type: "text"}, {Name: "amount", Type: "text"}}
		for _, limit := range []int{0, 3, 8, 21} {
			var ref []row
			for i, chunk := range []int{1 << 20, 1, 2, 5, 16} {
				src, err := New(Config{Path: path, Schema: schema, BatchSize: 3, Workers: 2, ChunkSize: chunk, MaxRecordSize: limit, CSV: opts}, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := rowsOf(runAll(t, src, nil))
				if i == 0 {
					ref = got
					lines := int64(strings.Count(body, "\n"))
					last := int64(0)
					for _, r := range got {
						if r.Seq < first || r.Seq > lines+first || r.Seq <= last {
							t.Fatalf("limit %d: seq %d after %d, outside %d..%d", limit, r.Seq, last, first, lines+first)
						}
						last = r.Seq
					}
					continue
				}
				if !reflect.DeepEqual(got, ref) {
					t.Fatalf("limit %d chunk %d:\n got %+v\nwant %+v", limit, chunk, got, ref)
				}
			}
		}
	})
}

// A spread sample copies each sampled record, not the window it read around it: sampling costs
// the records' bytes, whatever the read size (a copy of every 4 KiB window made `rekey report`'s
// 20,000-row plan sample of a 5M-row CSV take 0.3 s of allocation).
func TestSpreadSampleCopiesOnlyItsRecords(t *testing.T) {
	const rows, n = 200000, 2000
	path := writeOrdersCSV(t, rows)
	schema, _ := gen.Columns("orders")
	src, err := New(Config{Path: path, Schema: schema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sample, err := src.Sample(context.Background(), n)
	runtime.ReadMemStats(&after)
	if err != nil || len(sample) != n {
		t.Fatalf("%d samples: %v", len(sample), err)
	}
	for _, r := range sample {
		if r.Err != nil || len(r.Values[0].Str) != 11 {
			t.Fatalf("bad sample record %v: %v", r.Values, r.Err)
		}
	}
	// the records: n values slabs and row strings (about 70 bytes each), one read buffer
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 1024 {
		t.Fatalf("the sample allocated %d bytes a record, want the record's own (under 1 KiB)", per)
	}
}

// Batches carry Release: a consumer that releases each batch once it is done with it gets the
// same records (a reused batch's values start empty: a JSON member missing from a line, or an
// empty CSV field, is null, not what an earlier line held there) and the reader allocates far less.
func TestReleasedBatchesAreReusedClean(t *testing.T) {
	var jb, cb strings.Builder
	cb.WriteString("id,name,ts,amount\n")
	for i := 1; i <= 60000; i++ {
		if i%3 == 0 {
			fmt.Fprintf(&jb, `{"id":%d}`+"\n", i)
		} else {
			fmt.Fprintf(&jb, `{"id":%d,"name":"n%d","ts":%d,"amount":%d.5}`+"\n", i, i, i, i)
		}
		if i%3 == 0 { // empty fields: null, whatever a reused batch's values held there
			fmt.Fprintf(&cb, "%d,,%d,\n", i, i)
		} else {
			fmt.Fprintf(&cb, "%d,name%d,%d,%d.25\n", i, i, i, i)
		}
	}
	// no collection while measuring: a collection empties the pool of slabs (a real run's heap
	// is large enough that one is rare)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, tc := range []struct{ name, content string }{{"r.jsonl", jb.String()}, {"r.csv", cb.String()}} {
		path := writeFile(t, tc.name, tc.content)
		seed := maphash.MakeSeed()
		// read digests every record (without allocating: the allocations measured are the reader's)
		read := func(release bool) (digests []uint64, allocated uint64) {
			digests = make([]uint64, 0, 60000)
			var h maphash.Hash
			h.SetSeed(seed)
			src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 256, Workers: 2, ChunkSize: 64 << 10}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out := make(chan pipeline.Batch)
			errc := make(chan error, 1)
			go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
			for b := range out {
				if b.Release == nil && len(b.Records) > 0 {
					t.Fatalf("%s: a batch of %d records without Release", tc.name, len(b.Records))
				}
				for _, r := range b.Records {
					h.Reset()
					maphash.WriteComparable(&h, r.Seq)
					maphash.WriteComparable(&h, r.Err == nil)
					for _, v := range r.Values {
						maphash.WriteComparable(&h, v)
					}
					digests = append(digests, h.Sum64())
				}
				if release && b.Release != nil {
					b.Release()
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			return digests, after.TotalAlloc - before.TotalAlloc
		}
		kept, keptAlloc := read(false)
		released, releasedAlloc := read(true)
		if len(kept) != 60000 || !reflect.DeepEqual(kept, released) {
			t.Fatalf("%s: %d records kept, %d released; they differ", tc.name, len(kept), len(released))
		}
		t.Logf("%s: %d bytes allocated keeping the batches, %d releasing them", tc.name, keptAlloc, releasedAlloc)
		if releasedAlloc*4 > keptAlloc*3 {
			t.Errorf("%s: releasing the batches allocated %d bytes, keeping them %d: not reused", tc.name, releasedAlloc, keptAlloc)
		}
	}
}

// The records' strings point into the read buffer of their chunk, which is read into again once
// every batch parsed from it is released: a batch still held keeps its values, however many of
// its chunk's other batches (and of later chunks) were released meanwhile.
func TestHeldBatchesKeepTheirValues(t *testing.T) {
	var cb strings.Builder
	cb.WriteString("id,name,ts,amount\n")
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&cb, "%d,name%d,%d,%d.25\n", i, i*7, i, i)
	}
	path := writeFile(t, "held.csv", cb.String())
	src, err := New(Config{Path: path, Schema: ordersSchema, BatchSize: 16, Workers: 2, ChunkSize: 4 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := func(b *pipeline.Batch) string {
		var sb strings.Builder
		for _, r := range b.Records {
			fmt.Fprintf(&sb, "%d:%v;", r.Seq, r.Values)
		}
		return sb.String()
	}
	type held struct {
		b      pipeline.Batch
		digest string
	}
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
	// every batch is held while the next 37 arrive (more than a chunk's), and every other one
	// is released at once: a chunk's batches are released out of order, some long after the
	// reader moved on
	var window []held
	n := 0
	check := func(h held) {
		if got := digest(&h.b); got != h.digest {
			t.Fatalf("a held batch's values changed before it was released:\n got %.200s\nwant %.200s", got, h.digest)
		}
		h.b.Release()
	}
	for b := range out {
		n += len(b.Records)
		h := held{b, digest(&b)}
		if n%2 == 0 {
			check(h)
			continue
		}
		window = append(window, h)
		if len(window) > 37 {
			check(window[0])
			window = window[1:]
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, h := range window {
		check(h)
	}
	if n != 20000 {
		t.Fatalf("%d records, want 20000", n)
	}
}

// A JSON member that names a declared column only ignoring case ("Name" for name) is read as that
// column, as CSV headers are, and the read is logged once; a member of the exact name, even null,
// wins. Before, such a member was ignored: the column was null in every row, silently.
func TestJSONLMembersIgnoringCase(t *testing.T) {
	// the first line is the first member read ignoring case: read again, its exact member wins
	content := `{"id": 0, "name": null, "Name": "zed"}
{"id": 1, "Name": "alice", "AMOUNT": 1.5}
{"id": 2, "name": null, "Name": "bob"}
{"Name": "carol", "id": 3, "name": "exact"}
{"id": 4, "NAME": "dan"}
`
	path := writeFile(t, "c.jsonl", content)
	core, logs := observer.New(zap.WarnLevel)
	src, err := New(Config{Path: path, Schema: ordersSchema}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(runAll(t, src, nil))
	want := []row{
		{Seq: 1, Values: `int:"0" NULL NULL NULL`},
		{Seq: 2, Values: `int:"1" text:"alice" NULL decimal:"1.5"`},
		{Seq: 3, Values: `int:"2" NULL NULL NULL`},
		{Seq: 4, Values: `int:"3" text:"exact" NULL NULL`},
		{Seq: 5, Values: `int:"4" text:"dan" NULL NULL`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("\n got %v\nwant %v", got, want)
	}
	var warned []string
	for _, e := range logs.All() {
		warned = append(warned, fmt.Sprint(e.ContextMap()["member"], "->", e.ContextMap()["column"]))
	}
	slices.Sort(warned)
	if want := []string{"AMOUNT->amount", "NAME->name", "Name->name"}; !reflect.DeepEqual(warned, want) {
		t.Errorf("warnings %v, want one per member name read ignoring case: %v", warned, want)
	}
}

// TestCSVLastLineWithoutLineEndIsWarned: a CSV file whose last line has no line end may have
// been cut short (a copy or download that did not finish), and its last row read with a cut
// value (2,bob,2,12 of 2,bob,2,1234.56), which no parse error shows: the run warns, once, naming
// the file and the line. Before, such a row was written without a word.
func TestCSVLastLineWithoutLineEndIsWarned(t *testing.T) {
	for _, c := range []struct {
		name, content string
		limit         int
		warn          bool
	}{
		{"cut.csv", ordersHeader + "1,alice,1,1.50\n2,bob,2,12", 0, true},
		{"cut.csv.gz", ordersHeader + "1,alice,1,1.50\r\n2,bob,2,12", 0, true},
		{"quoted.csv", ordersHeader + "1,alice,1,1.50\n2,\"bob\nsmith\",2,12", 0, true},
		{"long.csv", ordersHeader + "1,alice,1,1.50\n2," + strings.Repeat("b", 100), 40, true},
		{"whole.csv", ordersHeader + "1,alice,1,1.50\n2,bob,2,12\n", 0, false},
		{"crlf.csv", ordersHeader + "1,alice,1,1.50\r\n2,bob,2,12\r\n", 0, false},
		{"header-only.csv", "id,name,ts,amount", 0, false},
	} {
		for _, chunk := range []int{0, 3, 7} {
			core, logs := observer.New(zap.WarnLevel)
			src, err := New(Config{Path: writeFile(t, c.name, c.content), Schema: ordersSchema, ChunkSize: chunk, Workers: 2, MaxRecordSize: c.limit}, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			runAll(t, src, nil)
			warned := logs.FilterMessageSnippet("no line end").All()
			switch {
			case c.warn && (len(warned) != 1 || warned[0].ContextMap()["file"] != src.cfg.Path || warned[0].ContextMap()["line"] != int64(3+strings.Count(c.name, "quoted"))):
				t.Errorf("%s chunk %d: warnings %v, want one naming the file and its last line", c.name, chunk, logs.All())
			case !c.warn && len(warned) > 0:
				t.Errorf("%s chunk %d: warned %v of a file that ends with a line end", c.name, chunk, warned)
			}
		}
	}
}

// TestJSONLDuplicateMemberIsRejected: a JSON line that names a declared column twice
// ({"id":1,"name":"a","id":2}) is rejected, naming the member: which value is meant would be a
// guess, as it is for a CSV header that names a column twice (an error). Before, the last one
// was read without a word (the row written with id 2), as encoding/json does.
func TestJSONLDuplicateMemberIsRejected(t *testing.T) {
	content := `{"id":1,"name":"a","id":2}
{"id":3,"name":"b","extra":1,"extra":2}
{"id":4,"Name":"c","NAME":"d"}
{"id":5,"name":null,"name":"e"}
{"id":6,"name":"f","Name":"g"}
`
	path := writeFile(t, "d.jsonl", content)
	for _, chunk := range []int{0, 5} {
		got := rowsOf(runAll(t, mustNew(t, Config{Path: path, Schema: ordersSchema, ChunkSize: chunk, Workers: 2}), nil))
		want := []row{
			{Seq: 1, Raw: `{"id":1,"name":"a","id":2}`, Err: `parse: field "id": the row names "id" twice: which value is meant would be a guess; fix the row where it was written`},
			{Seq: 2, Values: `int:"3" text:"b" NULL NULL`},
			{Seq: 3, Raw: `{"id":4,"Name":"c","NAME":"d"}`, Err: `parse: field "name": the row names "name" twice: which value is meant would be a guess; fix the row where it was written`},
			{Seq: 4, Raw: `{"id":5,"name":null,"name":"e"}`, Err: `parse: field "name": the row names "name" twice: which value is meant would be a guess; fix the row where it was written`},
			{Seq: 5, Values: `int:"6" text:"f" NULL NULL`}, // the exact member wins over one that differs in case
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunk %d:\n got %v\nwant %v", chunk, got, want)
		}
	}
}

// TestEstimatedRowsCountsRecordsNotLines: a CSV file's rows are estimated from the bytes of the
// records in its head, not of its lines: a quoted field's line breaks do not make more rows.
// Before, a file of 1,000 rows of three lines each was estimated at 3,000 rows, so a limit=2000
// window that holds the whole file was judged a sample of it (report and check: "the first 2,000
// of about 3,000 rows the files hold", sizes scaled up by 1.5, the uniqueness check not exact),
// and the region count of regions.size was planned for three times the rows.
func TestEstimatedRowsCountsRecordsNotLines(t *testing.T) {
	var b strings.Builder
	b.WriteString(ordersHeader)
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "%d,\"line one\nline two\r\nline three\",%d,1\n", i, i)
	}
	for _, name := range []string{"m.csv", "m.tsv"} {
		content := b.String()
		if name == "m.tsv" {
			content = strings.ReplaceAll(content, ",", "\t")
		}
		path := writeFile(t, name, content)
		src := openSpec(t, Spec{Path: path, Limit: 2000}, Config{})
		if rows, _, _ := src.(*Files).Part(); rows != 0 {
			t.Errorf("%s: limit=2000 of a file of 1,000 rows is judged part of %d rows", name, rows)
		}
		whole := openSpec(t, Spec{Path: path}, Config{}).(pipeline.Sizer).EstimatedRows()
		if whole < 950 || whole > 1050 {
			t.Errorf("%s: %d rows estimated, want about 1,000", name, whole)
		}
	}
	// multiline=false: every line is a record, as before
	single := openSpec(t, Spec{Path: writeFile(t, "s.csv", ordersHeader+ordersRows(1, 100)), CSV: CSVOptions{SingleLine: true}}, Config{})
	if n := single.(pipeline.Sizer).EstimatedRows(); n != 100 {
		t.Errorf("multiline=false: %d rows estimated, want 100", n)
	}
}
