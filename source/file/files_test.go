package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/gzip"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
)

// put writes a file under dir (gzipped when its name ends in .gz), making its directory.
func put(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte(content)
	if strings.HasSuffix(name, ".gz") {
		data = gzipBytes(content)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipBytes(content string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	return b.Bytes()
}

// runSource reads a source whole.
func runSource(t *testing.T, src pipeline.Source, resume map[string]pipeline.StreamState) []pipeline.Batch {
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

// streamRows is the rows of each batch with its stream, in order.
func streamRows(batches []pipeline.Batch) []string {
	var out []string
	for _, b := range batches {
		for _, r := range rowsOf([]pipeline.Batch{b}) {
			out = append(out, fmt.Sprintf("%s:%d %s%s", b.Stream, r.Seq, r.Values, r.Err))
		}
	}
	return out
}

// resumeAfter is the resume state a checkpoint holds once the first k batches are written.
func resumeAfter(batches []pipeline.Batch, k int) map[string]pipeline.StreamState {
	m := map[string]pipeline.StreamState{}
	for _, b := range batches[:k] {
		m[b.Stream] = pipeline.StreamState{Cursor: b.Cursor, Done: b.Done}
	}
	return m
}

func openSpec(t *testing.T, spec Spec, cfg Config) pipeline.Source {
	t.Helper()
	if cfg.Schema == nil {
		cfg.Schema = ordersSchema
	}
	src, err := Open(context.Background(), spec, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

const ordersHeader = "id,name,ts,amount\n"

// ordersRows writes rows from..to as CSV lines.
func ordersRows(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d,n%d,%d,%d.5\n", i, i, i, i)
	}
	return b.String()
}

// TestDirectoryReadsEveryFileInNameOrder: --source file: takes a directory (every
// .csv/.csv.gz/.jsonl/.jsonl.gz file in it, in name order: the way dsbulk unload leaves
// output-000001.csv...). Each file is its own stream (positions and resume per file). Hidden files,
// _SUCCESS, other extensions and subdirectories are left out; a resume after any batch reads
// exactly the rows that follow it, file by file.
func TestDirectoryReadsEveryFileInNameOrder(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "output-000002.csv", ordersHeader+ordersRows(4, 6))
	put(t, dir, "output-000001.csv", ordersHeader+ordersRows(1, 3))
	put(t, dir, "output-000010.csv.gz", ordersHeader+ordersRows(7, 9))
	put(t, dir, "z.jsonl", `{"id":10,"name":"j","ts":10,"amount":10}`+"\n"+`{"id":11}`+"\n")
	put(t, dir, "_SUCCESS", "")
	put(t, dir, ".output-000003.csv", "not,a,csv\n")
	put(t, dir, "notes.txt", "hello\n")
	put(t, dir, "sub/output-000004.csv", ordersHeader+ordersRows(100, 101))
	src := openSpec(t, Spec{Path: dir}, Config{BatchSize: 2, ChunkSize: 16, Workers: 2})
	if _, ok := src.(pipeline.Sampler); !ok {
		t.Fatal("a directory source cannot sample")
	}
	batches := runSource(t, src, nil)
	all := streamRows(batches)
	var streams, ids []string
	for _, b := range batches {
		if len(streams) == 0 || streams[len(streams)-1] != b.Stream {
			streams = append(streams, b.Stream)
		}
		for _, r := range b.Records {
			if r.Err != nil {
				t.Fatalf("%s: %v", b.Stream, r.Err)
			}
			ids = append(ids, r.Values[0].String())
		}
	}
	if want := []string{"output-000001.csv", "output-000002.csv", "output-000010.csv.gz", "z.jsonl"}; !reflect.DeepEqual(streams, want) {
		t.Fatalf("streams %v, want %v", streams, want)
	}
	if got := strings.Join(ids, ","); got != "1,2,3,4,5,6,7,8,9,10,11" {
		t.Fatalf("ids %s", got)
	}
	// each stream ends with a Done batch, its last
	for i, b := range batches {
		last := i == len(batches)-1 || batches[i+1].Stream != b.Stream
		if b.Done != last {
			t.Fatalf("batch %d of %s: Done=%v", i, b.Stream, b.Done)
		}
	}
	seen := 0
	for k := 1; k <= len(batches); k++ {
		seen += len(batches[k-1].Records)
		rest := streamRows(runSource(t, src, resumeAfter(batches, k)))
		if !reflect.DeepEqual(rest, all[seen:]) && !(len(rest) == 0 && len(all[seen:]) == 0) {
			t.Fatalf("resume after batch %d (%s %s):\n got %v\nwant %v", k, batches[k-1].Stream, batches[k-1].Cursor, rest, all[seen:])
		}
	}
	if n := src.(pipeline.Sizer).EstimatedRows(); n != -1 {
		t.Fatalf("estimate with a gzip file: %d, want -1 (unknown)", n)
	}
}

// TestDirectoryFileThatCannotBeReadIsAnError: a data file of a directory that cannot be looked at
// (a link to a file that is gone, on a volume not mounted) stops the run, naming it. Before, it was
// left out as a subdirectory, with an info line, and the run read the other files: its rows were
// lost without an error. A hidden link (an editor's lock, .#orders.csv) is still left out.
func TestDirectoryFileThatCannotBeReadIsAnError(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "output-000001.csv", ordersHeader+ordersRows(1, 3))
	gone := filepath.Join(t.TempDir(), "output-000002.csv") // never written
	if err := os.Symlink(gone, filepath.Join(dir, "output-000002.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("user@host.1234:1700000000", filepath.Join(dir, ".#output-000001.csv")); err != nil {
		t.Fatal(err)
	}
	src, err := Open(context.Background(), Spec{Path: dir}, Config{Schema: ordersSchema}, nil)
	if err == nil {
		t.Fatalf("a directory with a link to a file that is gone opened, reading %d file(s): %v", len(src.(*Files).files), streamRows(runSource(t, src, nil)))
	}
	if !strings.Contains(err.Error(), "output-000002.csv") || strings.Contains(err.Error(), ".#output") {
		t.Fatalf("the error should name the link to the file that is gone, and only it: %v", err)
	}
}

// TestGlobAndListNameStreamsByRelativePath: a glob (file:exports/*.csv) and several files; two
// part.csv in different directories are two streams named by their relative paths, a list is read
// in the order given, a name with a comma is one file when it exists, and every mistake is an error
// naming the path.
func TestGlobAndListNameStreamsByRelativePath(t *testing.T) {
	dir := t.TempDir()
	a := put(t, dir, "a/part.csv", ordersHeader+ordersRows(1, 2))
	b := put(t, dir, "b/part.csv", ordersHeader+ordersRows(3, 4))
	comma := put(t, dir, "output-1,000,000.csv", ordersHeader+ordersRows(5, 5))
	streamsOf := func(src pipeline.Source) string {
		var s []string
		for _, r := range streamRows(runSource(t, src, nil)) {
			s = append(s, strings.Fields(r)[0])
		}
		return strings.Join(s, " ")
	}
	if got := streamsOf(openSpec(t, Spec{Path: filepath.Join(dir, "*", "part.csv")}, Config{})); got != "a/part.csv:2 a/part.csv:3 b/part.csv:2 b/part.csv:3" {
		t.Errorf("glob: %s", got)
	}
	if got := streamsOf(openSpec(t, Spec{Path: b + "," + a}, Config{})); got != "b/part.csv:2 b/part.csv:3 a/part.csv:2 a/part.csv:3" {
		t.Errorf("list: %s", got)
	}
	src := openSpec(t, Spec{Path: comma}, Config{})
	if got := streamsOf(src); got != "output-1,000,000.csv:2" {
		t.Errorf("a name with commas: %s", got)
	}
	if id := src.(pipeline.Identifier).Identity(); id["file"] != comma || id["size"] == "" {
		t.Errorf("one file keeps the one-file identity: %v", id)
	}
	empty := t.TempDir()
	put(t, empty, "readme.md", "x")
	for _, c := range []struct{ path, want string }{
		{a + "," + filepath.Join(dir, "*", "part.csv"), "part.csv is read twice"},
		{filepath.Join(dir, "*.jsonl"), "the pattern matches no file"},
		{a + "," + filepath.Join(dir, "nope.csv"), "nope.csv not found: check the --source path"},
		{filepath.Join(dir, "*"), "matches the directory " + filepath.Join(dir, "a") + ": a pattern reads files"},
		{empty, "holds no files named .csv, .tsv, .jsonl or .ndjson (optionally .gz): it holds readme.md; to read files of another name as one format, add ?format="},
		{a + ",-", "file:- (stdin) must be the only input"},
	} {
		_, err := Open(context.Background(), Spec{Path: c.path}, Config{Schema: ordersSchema}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.path, err, c.want)
		}
	}
	// format= reads a directory's files whatever their names (dsbulk's JSON connector writes .json)
	jdir := t.TempDir()
	put(t, jdir, "output-000001.json", `{"id":1}`+"\n")
	put(t, jdir, "output-000002.json", `{"id":2}`+"\n")
	if got := streamsOf(openSpec(t, Spec{Path: jdir, Format: "jsonl"}, Config{})); got != "output-000001.json:1 output-000002.json:1" {
		t.Errorf("format=jsonl directory: %s", got)
	}
}

// TestFilesIdentityNamesTheChangedFile: the checkpoint records every file's identity: a resume with
// a file added, removed or changed is refused naming it.
func TestFilesIdentityNamesTheChangedFile(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "output-000001.csv", ordersHeader+ordersRows(1, 3))
	put(t, dir, "output-000002.csv", ordersHeader+ordersRows(4, 6))
	id := func() pipeline.Identity {
		return openSpec(t, Spec{Path: dir}, Config{}).(pipeline.Identifier).Identity()
	}
	first := id()
	if first["files"] != "2" || first["file[output-000001.csv].size"] == "" || first["dir"] != dir {
		t.Fatalf("identity %v", first)
	}
	if d := first.Diff(id()); len(d) != 0 {
		t.Fatalf("same files differ: %v", d)
	}
	put(t, dir, "output-000003.csv", ordersHeader+ordersRows(7, 7))
	if d := strings.Join(first.Diff(id()), "\n"); !strings.Contains(d, "file[output-000003.csv].size: not recorded then") || !strings.Contains(d, "files: 2 then, 3 now") {
		t.Errorf("a file added:\n%s", d)
	}
	os.Remove(filepath.Join(dir, "output-000003.csv"))
	os.Remove(filepath.Join(dir, "output-000002.csv"))
	if d := strings.Join(first.Diff(id()), "\n"); !strings.Contains(d, "file[output-000002.csv].size: ") || !strings.Contains(d, "then, absent now") {
		t.Errorf("a file removed:\n%s", d)
	}
	put(t, dir, "output-000002.csv", ordersHeader+ordersRows(4, 5))
	if d := strings.Join(first.Diff(id()), "\n"); !strings.Contains(d, "file[output-000002.csv].size: ") || strings.Contains(d, "output-000001") {
		t.Errorf("a file changed:\n%s", d)
	}
	// the way the files are read is part of it
	put(t, dir, "output-000002.csv", ordersHeader+ordersRows(4, 6))
	opts := openSpec(t, Spec{Path: dir, Limit: 5, CSV: CSVOptions{Null: "NULL"}}, Config{}).(pipeline.Identifier).Identity()
	if d := strings.Join(opts.Diff(id()), "\n"); !strings.Contains(d, `csv: null="NULL" then, absent now`) || !strings.Contains(d, "limit: 5 then, absent now") {
		t.Errorf("options:\n%s", d)
	}
}

// TestStdin: stdin (file:-?format=csv) is read once, from a pipe, with what was read of its head to
// find the header read again; it has no size and no sample, and cannot resume.
func TestStdin(t *testing.T) {
	content := ordersHeader + ordersRows(1, 300)
	want := rowsOf(runAll(t, mustNew(t, Config{Path: writeFile(t, "s.csv", content), Schema: ordersSchema}), nil))
	defer func(old func() io.Reader) { stdinReader = old }(stdinReader)
	for _, format := range []string{"csv", "csv.gz"} {
		data := []byte(content)
		if format == "csv.gz" {
			data = gzipBytes(content)
		}
		stdinReader = func() io.Reader { return bytes.NewReader(data) }
		// a head smaller than the header line: the header is read in steps, all of it kept
		src := openSpec(t, Spec{Path: "-", Format: format}, Config{ChunkSize: 100, BatchSize: 7, headSize: 8})
		in, ok := src.(*Stdin)
		if !ok {
			t.Fatalf("stdin source is a %T", src)
		}
		if _, ok := src.(pipeline.Sampler); ok {
			t.Fatal("stdin must not offer a sample: it would consume the input")
		}
		if n := in.EstimatedRows(); n != -1 {
			t.Fatalf("estimate %d", n)
		}
		batches := runSource(t, src, nil)
		if got := rowsOf(batches); !reflect.DeepEqual(got, want) || batches[0].Stream != "stdin" {
			t.Fatalf("%s: %d rows, stream %s", format, len(got), batches[0].Stream)
		}
		out := make(chan pipeline.Batch, 100)
		if err := src.Run(context.Background(), nil, out); err == nil || !strings.Contains(err.Error(), "can be read only once") {
			t.Fatalf("second run: %v", err)
		}
		if err := in.AdoptIdentity(in.Identity()); !errors.Is(err, ErrStdinResume) {
			t.Fatalf("resume: %v", err)
		}
		if id := in.Identity(); id["input"] != "stdin" || id["format"] != format {
			t.Fatalf("identity %v", id)
		}
	}
	if _, err := Open(context.Background(), Spec{Path: "-"}, Config{Schema: ordersSchema}, nil); err == nil || !strings.Contains(err.Error(), "add ?format=csv") {
		t.Fatalf("no format: %v", err)
	}
	stdinReader = func() io.Reader { return strings.NewReader("") }
	if _, err := Open(context.Background(), Spec{Path: "-", Format: "csv"}, Config{Schema: ordersSchema}, nil); err != nil {
		t.Fatalf("empty stdin: %v", err)
	}
}

// TestStdinStopsWhileItsWriterIsIdle: a run of stdin stops when it is told to (limit= reached, the
// run cancelled) while the writer keeps the pipe open without writing (tail -f, a topic's console
// consumer). Before, the reader waited in its read of stdin for bytes that never came, and Run
// never returned: a limit=2 trial of such a stream hung after its two rows.
func TestStdinStopsWhileItsWriterIsIdle(t *testing.T) {
	defer func(old func() io.Reader) { stdinReader = old }(stdinReader)
	for _, name := range []string{"limit reached", "cancelled"} {
		t.Run(name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			// more than a chunk, then nothing more: the reader waits in its read of the rest
			go io.WriteString(pw, ordersHeader+ordersRows(1, 15))
			stdinReader = func() io.Reader { return pr }
			spec := Spec{Path: "-", Format: "csv"}
			if name == "limit reached" {
				spec.Limit = 2
			}
			src := openSpec(t, spec, Config{headSize: 8, ChunkSize: 128, Workers: 2})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := make(chan pipeline.Batch, 100)
			var runErr error
			var returned atomic.Bool
			go func() { runErr = src.Run(ctx, nil, out); returned.Store(true) }()
			if name == "cancelled" {
				<-out // the first chunk's rows
				cancel()
			}
			wait.For(t, returned.Load, "Run to return while stdin's writer is idle")
			if name == "cancelled" {
				if !errors.Is(runErr, context.Canceled) {
					t.Fatalf("Run returned %v, want context.Canceled", runErr)
				}
				return
			}
			if runErr != nil {
				t.Fatalf("Run returned %v", runErr)
			}
			close(out)
			var rows []string
			for b := range out {
				rows = append(rows, streamRows([]pipeline.Batch{b})...)
			}
			if len(rows) != 2 {
				t.Fatalf("limit=2 read %d rows: %v", len(rows), rows)
			}
		})
	}
}

func mustNew(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCSVDialects: CSV options as URI parameters: delimiter= (one character; %09 or tab for TSV,
// .tsv files default to tab), header=false (columns then follow the mapping's source.columns
// order), null=, quote=, escape=, comment=, each read the same at every chunking, gzipped or not.
func TestCSVDialects(t *testing.T) {
	ok := func(seq int, vals string) row { return row{Seq: int64(seq), Values: vals} }
	cases := []struct {
		name, file, uri, content string
		want                     []row
	}{
		{"semicolon and single quotes", "d.csv", "?delimiter=;&quote='",
			"id;name;ts;amount\n1;'a;b';1;1\n2;'it''s';2;2\n3;x\"y;3;3\n",
			[]row{ok(2, `int:"1" text:"a;b" int:"1" decimal:"1"`), ok(3, `int:"2" text:"it's" int:"2" decimal:"2"`),
				ok(4, `int:"3" text:"x\"y" int:"3" decimal:"3"`)}},
		{".tsv is tab-separated", "d.tsv", "",
			"id\tname\tts\tamount\n1\ta,b\t1\t1\n2\t\"q\"\"x\"\t2\t2\n",
			[]row{ok(2, `int:"1" text:"a,b" int:"1" decimal:"1"`), ok(3, `int:"2" text:"q\"x" int:"2" decimal:"2"`)}},
		{"delimiter=%09", "d.csv", "?delimiter=%09",
			"id\tname\tts\tamount\n1\ta,b\t1\t1\n",
			[]row{ok(2, `int:"1" text:"a,b" int:"1" decimal:"1"`)}},
		{"escape=\\ as dsbulk unload writes", "d.csv", `?escape=\`,
			"id,name,ts,amount\n1,\"say \\\"hi\\\", ok\",1,1\n2,\"back\\\\slash\",2,2\n3,\"C:\\temp\",3,3\n4,\"end\\\\\",4,4\n5,\"multi\nline \\\"q\\\"\",5,5\n6,a\\b,6,6\n",
			[]row{ok(2, `int:"1" text:"say \"hi\", ok" int:"1" decimal:"1"`), ok(3, `int:"2" text:"back\\slash" int:"2" decimal:"2"`),
				ok(4, `int:"3" text:"C:\\temp" int:"3" decimal:"3"`), ok(5, `int:"4" text:"end\\" int:"4" decimal:"4"`),
				ok(6, `int:"5" text:"multi\nline \"q\"" int:"5" decimal:"5"`), ok(8, `int:"6" text:"a\\b" int:"6" decimal:"6"`)}},
		{"comment=#", "d.csv", "?comment=%23",
			"# exported by a tool\nid,name,ts,amount\n# a comment, \"with a quote\n1,a,1,1\n#,\"x\n2,\"#not a comment\",2,2\n",
			[]row{ok(4, `int:"1" text:"a" int:"1" decimal:"1"`), ok(6, `int:"2" text:"#not a comment" int:"2" decimal:"2"`)}},
		{"null=NULL", "d.csv", "?null=NULL",
			"id,name,ts,amount\n1,NULL,NULL,1\n2,\"NULL\",2,NULL\n3,,3,3\n",
			[]row{ok(2, `int:"1" NULL NULL decimal:"1"`), ok(3, `int:"2" text:"NULL" int:"2" NULL`), ok(4, `int:"3" NULL int:"3" decimal:"3"`)}},
		{`null=\N`, "d.csv", `?null=\N`,
			"id,name,ts,amount\n1,\\N,\\N,1\n",
			[]row{ok(2, `int:"1" NULL NULL decimal:"1"`)}},
		{"header=false", "d.csv", "?header=false",
			"1,a,1,1\n\n2,b,2,2\n",
			[]row{ok(1, `int:"1" text:"a" int:"1" decimal:"1"`), ok(3, `int:"2" text:"b" int:"2" decimal:"2"`)}},
		{"header=false reads a header line as a row", "d.csv", "?header=false",
			"id,name,ts,amount\n1,a,1,1\n",
			[]row{{Seq: 1, Raw: "id,name,ts,amount", Err: `type: field "id": invalid bigint "id": expected an integer`}, ok(2, `int:"1" text:"a" int:"1" decimal:"1"`)}},
		{"a header after blank lines", "d.csv", "",
			"\r\n\nid,name,ts,amount\n1,a,1,1\n",
			[]row{ok(4, `int:"1" text:"a" int:"1" decimal:"1"`)}},
	}
	for _, c := range cases {
		for _, gz := range []string{"", ".gz"} {
			dir := t.TempDir()
			path := put(t, dir, c.file+gz, c.content)
			spec, err := ParseURI("file:" + path + c.uri)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for _, chunk := range []int{0, 1, 2, 3, 5, 8, 13} {
				for _, workers := range []int{1, 3} {
					src := openSpec(t, spec, Config{ChunkSize: chunk, Workers: workers, BatchSize: 2})
					if got := rowsOf(runSource(t, src, nil)); !reflect.DeepEqual(got, c.want) {
						t.Fatalf("%s%s chunk %d workers %d:\n got %v\nwant %v", c.name, gz, chunk, workers, got, c.want)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		opts CSVOptions
		want string
	}{
		{CSVOptions{Delimiter: '"'}, `delimiter= and quote= are both '"': they must differ`},
		{CSVOptions{Escape: ','}, "escape= and delimiter= are both ','"},
		{CSVOptions{Comment: ','}, "comment= ',' is also the delimiter"},
		{CSVOptions{Delimiter: '\n'}, "delimiter= cannot be a line break"},
		{CSVOptions{Quote: 0xc3}, "quote= must be one ASCII character"},
	} {
		_, err := New(Config{Path: writeFile(t, "o.csv", ordersHeader), Schema: ordersSchema, CSV: c.opts}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s", c.opts, err, c.want)
		}
	}
	if _, err := New(Config{Path: writeFile(t, "o.jsonl", "{}\n"), Schema: ordersSchema, CSV: CSVOptions{NoHeader: true}}, nil); err == nil || !strings.Contains(err.Error(), "do not apply") {
		t.Errorf("CSV options on JSON Lines: %v", err)
	}
}

// A CSV parameter given with its default value (header=true, multiline=true) applies no more to
// JSON Lines than another value does: refused too, naming it, rather than ignored.
func TestCSVParamsWithDefaultValuesOnJSONLinesAreRefused(t *testing.T) {
	path := writeFile(t, "o.jsonl", `{"id":1}`+"\n")
	for _, q := range []string{"header=true", "multiline=true", "header=false"} {
		spec, err := ParseURI("file:" + path + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(context.Background(), spec, Config{Schema: ordersSchema}, nil)
		if name, _, _ := strings.Cut(q, "="); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "JSON Lines") {
			t.Errorf("%s on JSON Lines: %v, want it refused, naming %s", q, err, name)
		}
	}
}

// A link to a file that is also read (latest.csv -> orders-2024-01.csv beside it in a directory,
// or both named) is that file read twice: refused as a file named twice is, where its rows were
// read twice.
func TestSymlinkToAFileReadIsReadTwice(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(a, []byte(ordersHeader+"1,a,0,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.csv", filepath.Join(dir, "b.csv")); err != nil {
		t.Skip("no symlinks:", err)
	}
	for _, path := range []string{dir, a + "," + filepath.Join(dir, "b.csv")} {
		_, err := Open(context.Background(), Spec{Path: path}, Config{Schema: ordersSchema}, nil)
		if err == nil || !strings.Contains(err.Error(), "read twice") {
			t.Errorf("file:%s: %v, want the file named twice refused", path, err)
		}
	}
}

// TestHardLinkToAFileReadIsReadTwice: a hard link to a file that is also read (latest.csv, a second
// name of orders-1.csv in the directory) is the file read twice, refused as a symbolic link is.
// Before, both names were read and every row of the file came twice.
func TestHardLinkToAFileReadIsReadTwice(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "orders-1.csv")
	if err := os.WriteFile(a, []byte(ordersHeader+ordersRows(1, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, dir, "orders-2.csv", ordersHeader+ordersRows(4, 6)) // the same size, another file
	if err := os.Link(a, filepath.Join(dir, "latest.csv")); err != nil {
		t.Skip("no hard links:", err)
	}
	for _, path := range []string{dir, a + "," + filepath.Join(dir, "latest.csv"), filepath.Join(dir, "*.csv")} {
		src, err := Open(context.Background(), Spec{Path: path}, Config{Schema: ordersSchema}, nil)
		if err == nil {
			t.Errorf("file:%s: read %d rows, want the file named twice refused", path, len(streamRows(runSource(t, src, nil))))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "read twice") || !strings.Contains(msg, "latest.csv") || !strings.Contains(msg, "orders-1.csv") || strings.Contains(msg, "orders-2.csv") {
			t.Errorf("file:%s: %v, want latest.csv named as orders-1.csv read twice", path, err)
		}
	}
}

// TestDSBulkQuoteHint: a dsbulk export read without escape=\ rejects its rows, and the reject
// says what to add.
func TestDSBulkQuoteHint(t *testing.T) {
	path := writeFile(t, "d.csv", ordersHeader+`1,"say \"hi\"",1,1`+"\n"+`2,"{\"a\":1,\"b\":2}",2,2`+"\n")
	got := rowsOf(runAll(t, mustNew(t, Config{Path: path, Schema: ordersSchema}), nil))
	if len(got) != 2 {
		t.Fatalf("%v", got)
	}
	for _, r := range got {
		if !strings.HasSuffix(r.Err, `(a quote escaped as \", as dsbulk unload writes it? add escape=\ to the --source URI)`) {
			t.Errorf("no hint: %s", r.Err)
		}
	}
}

// TestLimitAndSkip: ?limit=N&skip=N try a mapping on the head of a big file: over the files in
// order, skip records are passed over and at most limit read; the run stops at the limit without
// reading further files; a resume continues the window; the estimate and the sample are the
// window's.
func TestLimitAndSkip(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p1.csv", ordersHeader+ordersRows(1, 5))
	put(t, dir, "p2.csv", ordersHeader+ordersRows(6, 10))
	put(t, dir, "p3.csv", ordersHeader+ordersRows(11, 15))
	ids := func(batches []pipeline.Batch) string {
		var s []string
		for _, b := range batches {
			for _, r := range b.Records {
				s = append(s, r.Values[0].String())
			}
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		skip, limit int64
		want        string
		est         int64
	}{
		{3, 6, "4,5,6,7,8,9", 6},
		{0, 2, "1,2", 2},
		{7, 0, "8,9,10,11,12,13,14,15", 8},
		{4, 100, "5,6,7,8,9,10,11,12,13,14,15", 11},
		{100, 0, "", 0},
		{5, 5, "6,7,8,9,10", 5},
	} {
		for _, chunk := range []int{0, 7, 30} {
			src := openSpec(t, Spec{Path: dir, Skip: c.skip, Limit: c.limit}, Config{ChunkSize: chunk, BatchSize: 2})
			batches := runSource(t, src, nil)
			if got := ids(batches); got != c.want {
				t.Fatalf("skip %d limit %d chunk %d: %s, want %s", c.skip, c.limit, chunk, got, c.want)
			}
			if n := src.(pipeline.Sizer).EstimatedRows(); n != c.est {
				t.Errorf("skip %d limit %d: estimate %d, want %d", c.skip, c.limit, n, c.est)
			}
			last := batches[len(batches)-1]
			if !last.Done {
				t.Fatalf("skip %d limit %d: the last batch is not done", c.skip, c.limit)
			}
			if c.skip == 3 && c.limit == 6 && last.Stream != "p2.csv" {
				t.Fatalf("the limit is reached in p2.csv, yet %s was read", last.Stream)
			}
			// a resume after any batch reads the rest of the window
			all := strings.Split(c.want, ",")
			seen := 0
			for k := 1; k <= len(batches); k++ {
				seen += len(batches[k-1].Records)
				rest := ids(runSource(t, src, resumeAfter(batches, k)))
				if want := strings.Join(all[min(seen, len(all)):], ","); c.want != "" && rest != want {
					t.Fatalf("skip %d limit %d chunk %d: resume after batch %d (%s): %s, want %s", c.skip, c.limit, chunk, k, batches[k-1].Cursor, rest, want)
				}
			}
		}
	}
	// the sample of a window is taken from its rows
	src := openSpec(t, Spec{Path: dir, Skip: 3, Limit: 6}, Config{})
	sample, err := src.(pipeline.Sampler).Sample(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sample {
		got = append(got, r.Values[0].String())
	}
	if len(got) != 3 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 3 || got[0] < "4" || got[2] > "9" {
		t.Fatalf("window sample %v, want 3 distinct rows of the window's 4..9 in order", got)
	}
}

// TestEmptyInputSameRuleForCSVAndJSONL: before, an empty .jsonl said VERDICT OK while an empty .csv
// was an error; one rule now holds for both. The rule: a file without rows reads as 0 rows with a
// warning naming it, CSV (with or without a header line) and JSON Lines alike; so a directory with
// an empty part among others reads the others.
func TestEmptyInputSameRuleForCSVAndJSONL(t *testing.T) {
	for _, c := range []struct{ name, content, warning string }{
		{"e.csv", "", "file is empty (no header line, no rows)"},
		{"bom.csv", "\ufeff", "file is empty (no header line, no rows)"},
		{"blank.csv", "\n\r\n", "file is empty (no header line, no rows)"},
		{"e.csv.gz", "", "file is empty (no header line, no rows)"},
		{"header.csv", ordersHeader, "file holds no rows"},
		{"e.jsonl", "", "file holds no rows"},
		{"blank.jsonl", "\n  \n", "file holds no rows"},
		{"e.jsonl.gz", "", "file holds no rows"},
	} {
		core, logs := observer.New(zapcore.WarnLevel)
		path := writeFile(t, c.name, c.content)
		src, err := New(Config{Path: path, Schema: ordersSchema}, zap.New(core))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		bs := runAll(t, src, nil)
		if len(bs) != 1 || !bs[0].Done || len(bs[0].Records) != 0 {
			t.Errorf("%s: %d batches, want one empty done batch", c.name, len(bs))
		}
		if n := src.EstimatedRows(); n != 0 && !strings.HasSuffix(c.name, ".gz") && c.name != "blank.jsonl" { // blank lines are bytes: an estimate
			t.Errorf("%s: estimate %d", c.name, n)
		}
		if sample, err := src.Sample(context.Background(), 10); err != nil || len(sample) != 0 {
			t.Errorf("%s: sample %v %v", c.name, sample, err)
		}
		if w := logs.All(); len(w) != 1 || !strings.HasPrefix(w[0].Message, c.warning) || w[0].ContextMap()["file"] != path {
			t.Errorf("%s: warnings %v, want %q naming the file", c.name, w, c.warning)
		}
	}
	dir := t.TempDir()
	put(t, dir, "output-000001.csv", "")
	put(t, dir, "output-000002.csv", ordersHeader+ordersRows(1, 2))
	if got := streamRows(runSource(t, openSpec(t, Spec{Path: dir}, Config{}), nil)); len(got) != 2 {
		t.Fatalf("directory with an empty file: %v", got)
	}
}

// TestFilesSampleSpreadsOverFiles: the sample of several files takes from each in proportion to
// its size.
func TestFilesSampleSpreadsOverFiles(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.csv", ordersHeader+ordersRows(1, 20000))
	put(t, dir, "b.csv", ordersHeader+ordersRows(100001, 110000))
	src := openSpec(t, Spec{Path: dir}, Config{})
	if n := src.(pipeline.Sizer).EstimatedRows(); n < 29000 || n > 31000 {
		t.Fatalf("estimate %d, want about 30000", n)
	}
	sample, err := src.(pipeline.Sampler).Sample(context.Background(), 300)
	if err != nil || len(sample) != 300 {
		t.Fatalf("%d samples, %v", len(sample), err)
	}
	inA := 0
	for _, r := range sample {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if r.Values[0].Num <= 20000 {
			inA++
		}
	}
	// a.csv holds 2/3 of the bytes, a little less (shorter ids)
	if inA < 185 || inA > 205 {
		t.Fatalf("%d of 300 samples from a.csv, want about 195", inA)
	}
	if got := shares([]int64{1, 0, 1}, 2, 3); got[1] != 0 || got[0]+got[2] != 3 {
		t.Fatalf("shares %v", got)
	}
}

func TestParseURI(t *testing.T) {
	for _, c := range []struct {
		uri  string
		want Spec
	}{
		{"file:x.csv", Spec{Path: "x.csv"}},
		{"x.csv", Spec{Path: "x.csv"}},
		{"file:exports/part-?.csv", Spec{Path: "exports/part-?.csv"}},
		{"file:exports/part-?.csv?delimiter=;", Spec{Path: "exports/part-?.csv", CSV: CSVOptions{Delimiter: ';'}}},
		{"file:d/?limit=10&skip=5", Spec{Path: "d/", Limit: 10, Skip: 5}},
		{"file:x.tsv?delimiter=tab&header=false&null=%5CN", Spec{Path: "x.tsv", CSV: CSVOptions{Delimiter: '\t', NoHeader: true, Null: `\N`}}},
		{`file:x.csv?escape=\&quote='&comment=%23&delimiter=%09`, Spec{Path: "x.csv", CSV: CSVOptions{Escape: '\\', Quote: '\'', Comment: '#', Delimiter: '\t'}}},
		{"file:-?format=csv.gz", Spec{Path: "-", Format: "csv.gz"}},
		{"file:data/dt=2024/part?.csv", Spec{Path: "data/dt=2024/part?.csv"}},
		{"file:a.csv,b.csv?null=N/A", Spec{Path: "a.csv,b.csv", CSV: CSVOptions{Null: "N/A"}}},
		{"file:x.csv?null=a+b", Spec{Path: "x.csv", CSV: CSVOptions{Null: "a+b"}}},
	} {
		got, err := ParseURI(c.uri)
		got.csvParams = nil // what was written, for messages
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v %v, want %+v", c.uri, got, err, c.want)
		}
	}
	for _, c := range []struct{ uri, want string }{
		{"file:x.csv?delimter=;", "unknown parameter delimter for file: (known: comment, delimiter, escape, format, header, limit, multiline, null, quote, skip)"},
		{"file:x.csv?delimiter=;;", "delimiter=;;: want one character"},
		{"file:x.csv?limit=0", "limit=0 reads nothing"},
		{"file:x.csv?skip=-1", "skip=-1: want a row count"},
		{"file:x.csv?header=maybe", "header=maybe: want true or false"},
		{"file:x.csv?format=parquet", "format=parquet: want csv, tsv, jsonl or ndjson"},
		{"file:x.csv?limit=1&limit=2", "limit= given twice"},
		{"file:x.csv?null=", "null= needs a value"},
		{"file:?limit=3", "no path"},
	} {
		if _, err := ParseURI(c.uri); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", c.uri, err, c.want)
		}
	}
}

// TestWindowSampleDoesNotLineUpWithRowNumber: the sample of a ?limit= window is not every k-th
// row, which would see only the ids of one parity (a stride doubled to 8 over 1,000 rows) and
// place region splits as if the other half did not exist.
func TestWindowSampleDoesNotLineUpWithRowNumber(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p.csv", ordersHeader+ordersRows(1, 1000))
	src := openSpec(t, Spec{Path: dir, Limit: 1000}, Config{})
	sample, err := src.(pipeline.Sampler).Sample(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(sample) != 100 {
		t.Fatalf("a sample of %d rows, want 100", len(sample))
	}
	var odd int
	for _, r := range sample {
		id, err := strconv.Atoi(r.Values[0].String())
		if err != nil {
			t.Fatal(err)
		}
		odd += id & 1
	}
	if odd < 30 || odd > 70 {
		t.Fatalf("%d of the 100 sampled ids are odd; a sample not lined up with the row number has about half", odd)
	}
}

// TestSpreadSampleDoesNotLineUpWithRowNumber: a large file's sample, read at spread byte offsets,
// does not line up with rows of one width (evenly spaced offsets over 100,000 rows of one width
// would each start 100 rows after the last and see ids of one last digit only).
func TestSpreadSampleDoesNotLineUpWithRowNumber(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(ordersHeader)
	for i := range 100_000 {
		fmt.Fprintf(&b, "%07d,n,1,2.5\n", i)
	}
	put(t, dir, "p.csv", b.String())
	src := openSpec(t, Spec{Path: filepath.Join(dir, "p.csv")}, Config{})
	sample, err := src.(pipeline.Sampler).Sample(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	digits := map[byte]int{}
	for _, r := range sample {
		id := r.Values[0].String()
		digits[id[len(id)-1]]++
	}
	if len(sample) < 900 || len(digits) != 10 {
		t.Fatalf("%d sampled rows end in %d distinct digits %v; a sample not lined up with the row number has all ten", len(sample), len(digits), digits)
	}
}

// TestPatternLeavesOutHiddenFiles: a pattern's matches leave out hidden files and those starting
// with '_', as a directory's files do and as a shell's * does, unless the pattern names them
// (.*.csv). Before, 'file:exports/*.csv' read exports/.orders-copy.csv and _tmp.csv, whose rows
// file:exports/ leaves out: the same folder gave other rows, a hidden copy's rows read twice.
func TestPatternLeavesOutHiddenFiles(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "exports/orders-1.csv", ordersHeader+ordersRows(1, 2))
	put(t, dir, "exports/.orders-copy.csv", ordersHeader+ordersRows(1, 2))
	put(t, dir, "exports/_tmp.csv", ordersHeader+ordersRows(3, 3))
	put(t, dir, "exports/.snapshot/orders-1.csv", ordersHeader+ordersRows(1, 2))
	put(t, dir, "exports/_temporary/orders-9.csv", ordersHeader+ordersRows(9, 9))
	put(t, dir, "exports/day1/orders-2.csv", ordersHeader+ordersRows(4, 4))
	for _, c := range []struct{ pattern, want string }{
		{"exports/*.csv", "orders-1.csv:2 orders-1.csv:3"},
		{"exports/*/*.csv", "orders-2.csv:2"},
		{"exports/.*.csv", ".orders-copy.csv:2 .orders-copy.csv:3"},                                                       // named: read
		{"exports/_*.csv", "_tmp.csv:2"},                                                                                  // named: read
		{"exports/.snapshot/*.csv", "orders-1.csv:2 orders-1.csv:3"},                                                      // a hidden folder named as such
		{"exports/.orders-copy.csv,exports/*.csv", ".orders-copy.csv:2 .orders-copy.csv:3 orders-1.csv:2 orders-1.csv:3"}, // a file named as such
	} {
		var paths []string
		for _, p := range strings.Split(c.pattern, ",") {
			paths = append(paths, filepath.Join(dir, p))
		}
		src := openSpec(t, Spec{Path: strings.Join(paths, ",")}, Config{})
		var got []string
		for _, r := range streamRows(runSource(t, src, nil)) {
			f := strings.Fields(r)[0]
			got = append(got, f[strings.LastIndexByte(f, '/')+1:])
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: read %v, want %s", c.pattern, got, c.want)
		}
	}
	// a relative pattern, ./ and all
	t.Chdir(dir)
	src := openSpec(t, Spec{Path: "./exports/*.csv"}, Config{})
	if got := streamRows(runSource(t, src, nil)); len(got) != 2 || !strings.HasPrefix(got[0], "orders-1.csv:") {
		t.Errorf("./exports/*.csv: read %v, want orders-1.csv's 2 rows", got)
	}
	// every match hidden: the error says they were left out and how to read them
	put(t, dir, "only/.x.csv", ordersHeader+ordersRows(1, 1))
	_, err := Open(context.Background(), Spec{Path: filepath.Join(dir, "only", "*.csv")}, Config{Schema: ordersSchema}, nil)
	if err == nil || !strings.Contains(err.Error(), "matches no file") || !strings.Contains(err.Error(), ".x.csv") {
		t.Errorf("a pattern matching only hidden files: %v", err)
	}
}

// A window of files whose rows are not known (gzip, stdin) is a part of unknown size (-1), not
// the whole input (0): report and check judge it a sample. Before, Part said 0 for them.
func TestUnsizedWindowIsAPart(t *testing.T) {
	dir := t.TempDir()
	gz := put(t, dir, "o.csv.gz", ordersHeader+ordersRows(1, 50))
	if rows, skip, limit := openSpec(t, Spec{Path: gz, Skip: 2, Limit: 10}, Config{}).(*Files).Part(); rows != -1 || skip != 2 || limit != 10 {
		t.Errorf("gzip window: Part %d %d %d, want -1 2 10", rows, skip, limit)
	}
	if rows, _, _ := openSpec(t, Spec{Path: gz}, Config{}).(*Files).Part(); rows != 0 {
		t.Errorf("gzip file read whole: Part %d, want 0", rows)
	}
	src, err := Open(context.Background(), Spec{Path: "-", Format: "csv", Limit: 10}, Config{Schema: ordersSchema, Stdin: strings.NewReader(ordersHeader + ordersRows(1, 50))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows, _, limit := src.(*Stdin).Part(); rows != -1 || limit != 10 {
		t.Errorf("stdin window: Part %d _ %d, want -1 _ 10", rows, limit)
	}
}

// A skip= that passes over every row of the input reads nothing, and says so, with how many rows
// the input holds. Before, the run ended with 0 rows in and no word of why.
func TestSkipPastTheInputIsWarned(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "p1.csv", ordersHeader+ordersRows(1, 5))
	put(t, dir, "p2.csv", ordersHeader+ordersRows(6, 9))
	for _, c := range []struct {
		skip  int64
		warns bool
	}{{100, true}, {9, true}, {8, false}} {
		core, logs := observer.New(zap.WarnLevel)
		src, err := Open(context.Background(), Spec{Path: dir, Skip: c.skip}, Config{Schema: ordersSchema}, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		runSource(t, src, nil)
		warned := logs.FilterMessageSnippet("skip=").All()
		switch {
		case c.warns && (len(warned) != 1 || warned[0].ContextMap()["skip"] != c.skip || warned[0].ContextMap()["rows"] != int64(9)):
			t.Errorf("skip=%d of 9 rows: warnings %v, want one naming skip= and the 9 rows", c.skip, logs.All())
		case !c.warns && len(warned) > 0:
			t.Errorf("skip=%d of 9 rows: warned %v", c.skip, warned)
		}
	}
}

// A directory or a pattern that holds a file and its gzip copy (orders.csv beside orders.csv.gz,
// as an export compressed and kept) would read every row twice: refused, naming both, where
// before both were read. Named one by one, the two files are read as asked.
func TestFileBesideItsGzipCopyIsRefused(t *testing.T) {
	dir := t.TempDir()
	content := ordersHeader + ordersRows(1, 3)
	put(t, dir, "orders.csv", content)
	if err := os.WriteFile(filepath.Join(dir, "orders.csv.gz"), gzipBytes(content), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, dir, "other.csv", ordersHeader+ordersRows(4, 6))
	for _, path := range []string{dir, filepath.Join(dir, "*")} {
		src, err := Open(context.Background(), Spec{Path: path}, Config{Schema: ordersSchema}, nil)
		if err == nil {
			t.Errorf("file:%s: read %d rows, want the file and its gzip copy refused", path, len(streamRows(runSource(t, src, nil))))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "orders.csv.gz") || !strings.Contains(msg, "orders.csv ") || strings.Contains(msg, "other.csv") {
			t.Errorf("file:%s: %v, want orders.csv and orders.csv.gz named", path, err)
		}
	}
	both := filepath.Join(dir, "orders.csv") + "," + filepath.Join(dir, "orders.csv.gz")
	src, err := Open(context.Background(), Spec{Path: both}, Config{Schema: ordersSchema}, nil)
	if err != nil {
		t.Fatalf("file:%s: %v", both, err)
	}
	if n := len(streamRows(runSource(t, src, nil))); n != 6 {
		t.Errorf("file:%s: %d rows, want 6", both, n)
	}
}
