package file

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourcetest"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// The boundary a part starts at is the first line start at or after its nominal offset (the data's
// start before it, the end of the file after the last line), for every offset: on the header, on
// a '\n', inside a "\r\n", at the end of the file, with and without a last '\n'.
func TestPartBoundaryIsTheNextLineStart(t *testing.T) {
	for _, content := range []string{
		"id,name\n1,a\n\n22,bb\r\n333,ccc\n",
		"id,name\r\n1,a\r\n22,\"b,b\"\r\n333,ccc",
		"\ufeffid,name\n4444,dddd\n",
		"id,name\n",
	} {
		path := writeFile(t, "in.csv", content)
		s := mustNew(t, Config{Path: path, Schema: conformanceSchema, CSV: CSVOptions{SingleLine: true}})
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(content))
		for off := int64(0); off <= size+1; off++ {
			want := size
			for p := max(off, s.dataStart); p < size; p++ {
				if p == s.dataStart || content[p-1] == '\n' {
					want = p
					break
				}
			}
			got, err := s.recordStart(f, off)
			if err != nil || got != want {
				t.Errorf("%q: the first record at or after offset %d: %d, %v; want %d", content, off, got, err, want)
			}
		}
		f.Close()
	}
}

// lineAt is line k (1-based) of content counting from offset base, without its terminator.
func lineAt(content string, base, k int64) string {
	lines := strings.SplitAfter(content[base:], "\n")
	if k < 1 || k > int64(len(lines)) {
		return fmt.Sprintf("(no line %d after offset %d)", k, base)
	}
	return rawLine(lines[k-1])
}

// readParts reads parts 0..n-1 of a file and checks that their byte ranges tile the data after the
// header, that together they hold the whole file's records in order, and that each record's
// position (stream@base:line) finds its line in the file.
func readParts(t *testing.T, content string, cfg Config, n int) {
	t.Helper()
	whole := rowsOf(runAll(t, mustNew(t, cfg), nil))
	var got []row
	var next int64 = -1
	for i := range n {
		pc := cfg
		pc.Part = pipeline.Shard{Index: i, Count: n}
		s := mustNew(t, pc)
		if i == 0 {
			next = s.dataStart
		}
		if s.from != next || s.to < s.from {
			t.Fatalf("part %d/%d of %q: bytes %d-%d, want it to start at %d", i, n, content, s.from, s.to, next)
		}
		next = s.to
		batches := runAll(t, s, nil)
		if len(batches) == 0 || !batches[len(batches)-1].Done {
			t.Fatalf("part %d/%d of %q: its last batch is not Done", i, n, content)
		}
		for _, b := range batches {
			if b.Stream != fmt.Sprintf("in@%d", s.base) {
				t.Fatalf("part %d/%d: stream %q, want in@%d", i, n, b.Stream, s.base)
			}
			for _, r := range b.Records {
				if line := lineAt(content, s.base, r.Seq); !strings.HasPrefix(line, r.Raw) {
					t.Fatalf("part %d/%d of %q: the record at %s:%d is %q, but that line is %q", i, n, content, b.Stream, r.Seq, r.Raw, line)
				}
			}
		}
		for _, r := range rowsOf(batches) {
			r.Seq = 0 // a part's lines count from its start
			got = append(got, r)
		}
	}
	if next != int64(len(content)) {
		t.Fatalf("%d parts of %q end at %d, not at the end of the file (%d)", n, content, next, len(content))
	}
	for i := range whole {
		whole[i].Seq = 0
	}
	if !reflect.DeepEqual(got, whole) {
		t.Fatalf("%d parts of %q read\n%v\nthe whole file reads\n%v", n, content, got, whole)
	}
}

// randomLines writes a file of lines of random lengths: empty ones, CRLF ones, long ones (past a
// chunk), rejects (for CSV: stray quotes, a quote left open; for JSON Lines: broken JSON), with
// or without a last '\n' (but for a broken JSON line: one cut without its line end is a file cut
// short, which fails the run).
func randomLines(rng *rand.Rand, format string) string {
	var b strings.Builder
	if format == "csv" {
		b.WriteString("id,name\n")
	}
	n := rng.IntN(40)
	for i := range n {
		name := strings.Repeat("x", rng.IntN(8))
		if rng.IntN(8) == 0 {
			name = strings.Repeat("long", 50+rng.IntN(100))
		}
		k := rng.IntN(10)
		switch {
		case k == 0:
			// an empty line
		case k == 1 && format == "csv":
			fmt.Fprintf(&b, "%d,\"open %s", i, name) // the quote is not closed on its line
		case k == 1:
			fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"%s", i, name)
		case k == 2 && format == "csv":
			fmt.Fprintf(&b, "%d,\"quoted, \"\"%s\"\"\"", i, name)
		case format == "csv":
			fmt.Fprintf(&b, "%d,%s", i, name)
		default:
			fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"%s\"}", i, name)
		}
		if rng.IntN(4) == 0 {
			b.WriteByte('\r')
		}
		if i < n-1 || rng.IntN(2) == 0 || k == 1 && format != "csv" {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// A file read in N parts (N from 1 to more than it has lines) gives the whole file's records, each
// once, in order, whatever the line lengths and wherever the offsets fall; records keep their
// position in the file as stream@offset:line.
func TestPartsTileTheFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 20 {
		for _, format := range []string{"jsonl", "csv"} {
			content := randomLines(rng, format)
			path := writeFile(t, "in."+format, content)
			cfg := Config{Path: path, Stream: "in", Schema: conformanceSchema, BatchSize: 1 + rng.IntN(5), ChunkSize: 16 + rng.IntN(200),
				Workers: 1 + rng.IntN(3), MaxRecordSize: 64 + rng.IntN(1000)}
			if format == "csv" {
				cfg.CSV.SingleLine = true
			}
			for _, n := range []int{2, 3, 7, 40} {
				t.Run(fmt.Sprintf("%d/%s/%d", iter, format, n), func(t *testing.T) { readParts(t, content, cfg, n) })
			}
		}
	}
}

// multiline=false reads each line as one record: a quoted field does not go on past its line end,
// a quote left open on its line is a stray quote (the line is rejected, code parse) and the next
// line is a record of its own. The same file reads the same whole or in parts; without the
// parameter the quoted field spans two lines, and the file cannot be read in parts.
func TestCSVSingleLine(t *testing.T) {
	const content = "id,name\r\n" +
		"1,\"a, \"\"quoted\"\" name\"\r\n" +
		"2,\"two\n" +
		"lines\"\n" +
		"3,stray\"quote\n" +
		"4,\"open\n" +
		"5,e\n"
	path := writeFile(t, "in.csv", content)
	cfg := Config{Path: path, Stream: "in", Schema: conformanceSchema, ChunkSize: 16, Workers: 2}
	multi := rowsOf(runAll(t, mustNew(t, cfg), nil))
	if len(multi) != 5 || multi[1].Values != `int:"2" text:"two\nlines"` {
		t.Fatalf("without multiline=false, a quoted field spans lines: %v", multi)
	}
	cfg.CSV.SingleLine = true
	got := rowsOf(runAll(t, mustNew(t, cfg), nil))
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%d %s%s", r.Seq, r.Values, r.Err))
	}
	want := []string{
		`2 int:"1" text:"a, \"quoted\" name"`,
		`3 parse: field "name": the quote that opens field 2 is not closed on its line (multiline=false: each line is one record): the record is rejected and reading goes on with the next line (a stray '"' at the start of a field, or a quoted field with a line break? then leave multiline=false out)`,
		`4 parse: expected 2 fields, got 1`,
		`5 int:"3" text:"stray\"quote"`,
		`6 parse: field "name": the quote that opens field 2 is not closed on its line (multiline=false: each line is one record): the record is rejected and reading goes on with the next line (a stray '"' at the start of a field, or a quoted field with a line break? then leave multiline=false out)`,
		`7 int:"5" text:"e"`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("multiline=false read\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for n := 2; n <= 8; n++ {
		readParts(t, content, cfg, n)
	}
	// The header is one line too.
	header := writeFile(t, "h.csv", "id,\"na\nme\"\n1,a\n")
	if _, err := New(Config{Path: header, Schema: conformanceSchema, CSV: CSVOptions{SingleLine: true}}, nil); err == nil || !strings.Contains(err.Error(), "cannot read the CSV header") {
		t.Fatalf("a header with a line break in a quoted field under multiline=false: %v", err)
	}
	spec, err := ParseURI("file:" + path + "?multiline=false")
	if err != nil || !spec.CSV.SingleLine || spec.CSV.String() != "multiline=false" {
		t.Fatalf("ParseURI(multiline=false) = %+v, %v", spec.CSV, err)
	}
	if _, err := ParseURI("file:" + path + "?multiline=no"); err == nil || !strings.Contains(err.Error(), "multiline=no: want true or false") {
		t.Fatalf("multiline=no: %v", err)
	}
}

// With fewer files than shards, each shard reads its byte range of every file, so the shards
// together read every record once and, sampling whole files, plan the same regions. A file that
// cannot be split (gzip; CSV whose quoted fields may hold line breaks) is refused, saying what to
// do; with as many files as shards, files are still dealt whole (gzip ones too).
func TestShardsSplitFilesFewerThanShards(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.jsonl", conformanceRows("jsonl", 300, 17))
	put(t, dir, "b.csv", conformanceRows("csv", 200, 40))
	cfg := Config{Schema: conformanceSchema, ChunkSize: 256, Workers: 2}
	spec := Spec{Path: dir, CSV: CSVOptions{SingleLine: true}}
	whole := openSpec(t, spec, cfg)
	want := rowsOf(runSource(t, whole, nil))
	wantSample, err := whole.(pipeline.Sampler).Sample(t.Context(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	ranges := map[string][]string{}
	for i := range 3 {
		spec.Shard = pipeline.Shard{Index: i, Count: 3}
		src := openSpec(t, spec, cfg)
		id := pipeline.SourceIdentity(src)
		if id["shard"] != spec.Shard.String() || id["files"] != "2" {
			t.Fatalf("shard %s: identity %v", spec.Shard, id)
		}
		for _, f := range []string{"a.jsonl", "b.csv"} {
			ranges[f] = append(ranges[f], id["file["+f+"].range"])
		}
		if sample, err := src.(pipeline.Sampler).Sample(t.Context(), 50); err != nil || !reflect.DeepEqual(sample, wantSample) {
			t.Fatalf("shard %s samples other records than the whole input (%v): the shards would plan other regions", spec.Shard, err)
		}
		if est := src.(pipeline.Sizer).EstimatedRows(); est < 120 || est > 220 {
			t.Errorf("shard %s estimates %d rows, about a third of 500", spec.Shard, est)
		}
		got = append(got, rowsOf(runSource(t, src, nil))...)
	}
	// every shard's ranges: the file's bytes in order, none twice
	for f, rs := range ranges {
		st, _ := os.Stat(dir + "/" + f)
		end := "0"
		for _, r := range rs {
			from, to, _ := strings.Cut(r, "-")
			if from != end {
				t.Fatalf("%s's ranges %v do not tile it", f, rs)
			}
			end = to
		}
		if end != fmt.Sprint(st.Size()) {
			t.Fatalf("%s's ranges %v end before its %d bytes", f, rs, st.Size())
		}
	}
	key := func(r row) string { return r.Values + r.Err + r.Raw }
	count := map[string]int{}
	for _, r := range want {
		count[key(r)]++
	}
	for _, r := range got {
		count[key(r)]--
	}
	for k, c := range count {
		if c != 0 {
			t.Fatalf("the shards read %q %d times more than the whole input", k, -c)
		}
	}

	put(t, dir, "c.jsonl.gz", string(gzipBytes(conformanceRows("jsonl", 10, 3))))
	for _, c := range []struct {
		spec Spec
		want []string
	}{
		{Spec{Path: dir, Shard: pipeline.Shard{Index: 0, Count: 4}}, []string{
			"--shard 0/4 of " + dir + ": 3 file(s) for 4 shards, so each shard reads a byte range of every file (or run at most 3 shards, each reading whole files)",
			"b.csv cannot be read in 4 byte ranges: it is CSV, where a quoted field may hold a line break, so a line end is not always a record's end: if no field holds one, add multiline=false to the --source URI",
			"c.jsonl.gz cannot be read in 4 byte ranges: it is gzip, which cannot be read from the middle: decompress it (gunzip), or split the input into more files"}},
	} {
		_, err := Open(context.Background(), c.spec, cfg, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v\nwant it to say %q", c.spec, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "a.jsonl") {
			t.Errorf("a.jsonl can be split, and is named: %v", err)
		}
	}
	// as many files as shards: whole files, gzip or not
	spec = Spec{Path: dir, Shard: pipeline.Shard{Index: 2, Count: 3}}
	if id := pipeline.SourceIdentity(openSpec(t, spec, cfg)); id["file[c.jsonl.gz].range"] != "" || len(id) == 0 {
		t.Fatalf("3 files for 3 shards are read whole: %v", id)
	}
}

// An object in a bucket is read in parts through ranged reads: the parts' records are the whole
// object's, and a part resumes after any batch.
func TestBucketFileInParts(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	content := conformanceRows("jsonl", 3000, 1234)
	putObjects(t, srv, map[string]string{"big.jsonl": content})
	uri := "s3://rekey/big.jsonl?" + strings.SplitN(srv.URI, "?", 2)[1]
	cfg := Config{Schema: conformanceSchema, ChunkSize: 4096, Workers: 2}
	want := rowsOf(runSource(t, openSpec(t, openBucket(t, srv, uri), cfg), nil))
	var got []row
	for i := range 3 {
		spec := openBucket(t, srv, uri)
		spec.Shard = pipeline.Shard{Index: i, Count: 3}
		src := openSpec(t, spec, cfg)
		for _, r := range rowsOf(runSource(t, src, nil)) {
			if i > 0 {
				r.Seq = want[len(got)].Seq // a part's lines count from its start
			}
			got = append(got, r)
		}
		if i == 1 {
			sourcetest.Run(t, sourcetest.Case{Open: opener(func() (pipeline.Source, error) {
				return Open(context.Background(), spec, cfg, nil)
			})})
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("3 parts of the object read %d records, the whole object %d (or other ones)", len(got), len(want))
	}
}

// With at least as many files as shards, each shard reads whole files but samples every file of
// the input, as the whole run does: before, each sampled only its own files, so shards written
// into one output (--shared-out) placed other quantile splits and all but the first were refused.
func TestShardsOfWholeFilesSampleTheWholeInput(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"} {
		put(t, dir, name, conformanceRows("jsonl", 100+50*i, 7+i))
	}
	cfg := Config{Schema: conformanceSchema, ChunkSize: 256, Workers: 2}
	spec := Spec{Path: dir}
	want, err := openSpec(t, spec, cfg).(pipeline.Sampler).Sample(t.Context(), 40)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		spec.Shard = pipeline.Shard{Index: i, Count: 2}
		src := openSpec(t, spec, cfg)
		if id := pipeline.SourceIdentity(src); id["files"] != "2" {
			t.Fatalf("shard %s reads %s files, want 2 of the 4", spec.Shard, id["files"])
		}
		if got, err := src.(pipeline.Sampler).Sample(t.Context(), 40); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("shard %s samples other records than the whole input (%v): the shards would plan other regions", spec.Shard, err)
		}
	}
}

// The shards of one input have the same identity but for the shard and their own files; a file
// added (or one grown) between two shards' starts changes it. Before, each shard's identity named
// only the files it read, so a file added after one shard ran could be dealt to that shard's share
// by the next ones' split and read by none: merge accepted the shards, its rows lost.
func TestShardsIdentityNamesTheWholeInput(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  int // 2: each shard reads byte ranges of every file; 4: whole files
		change func(dir string)
	}{
		{"whole files, one added", 4, func(dir string) { put(t, dir, "e.jsonl", conformanceRows("jsonl", 20, 3)) }},
		{"byte ranges, one grown", 2, func(dir string) { put(t, dir, "a.jsonl", conformanceRows("jsonl", 140, 7)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range c.files {
				put(t, dir, string(rune('a'+i))+".jsonl", conformanceRows("jsonl", 100+50*i, 7+i))
			}
			cfg := Config{Schema: conformanceSchema, ChunkSize: 256, Workers: 2}
			shard := func(i int) pipeline.Identity {
				return pipeline.SourceIdentity(openSpec(t, Spec{Path: dir, Shard: pipeline.Shard{Index: i, Count: 3}}, cfg))
			}
			first := shard(0)
			if a, b := first.WithoutShard(), shard(1).WithoutShard(); !reflect.DeepEqual(a, b) {
				t.Fatalf("two shards of one input: %v and %v", a, b)
			}
			c.change(dir)
			if d := first.WithoutShard().DiffNamed(shard(1).WithoutShard(), "then", "now"); len(d) == 0 {
				t.Fatalf("a shard of the changed input has the identity of the first's: %v", first)
			}
		})
	}
}

// A shard estimates its own rows (the progress) and, for its region plan, the whole input's.
func TestShardsEstimateTheWholeInputForThePlan(t *testing.T) {
	for _, files := range []int{2, 4} { // byte ranges of every file; whole files
		dir := t.TempDir()
		for i := range files {
			put(t, dir, string(rune('a'+i))+".jsonl", conformanceRows("jsonl", 300, 7+i))
		}
		cfg := Config{Schema: conformanceSchema, ChunkSize: 256, Workers: 2}
		want := openSpec(t, Spec{Path: dir}, cfg).(pipeline.Sizer).EstimatedRows()
		src := openSpec(t, Spec{Path: dir, Shard: pipeline.Shard{Index: 1, Count: 3}}, cfg)
		if got := src.(pipeline.WholeSizer).WholeEstimatedRows(); got != want {
			t.Errorf("%d files: shard 1/3 estimates %d rows of the whole input, the whole run %d", files, got, want)
		}
		if own := src.(pipeline.Sizer).EstimatedRows(); own >= want*3/4 {
			t.Errorf("%d files: shard 1/3 estimates %d rows of its own, of %d", files, own, want)
		}
	}
}

// A shard's checkpoint written before shards recorded the whole input ("input") resumes: the
// shard's own files are compared as before.
func TestShardResumesACheckpointWithoutTheInput(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 {
		put(t, dir, string(rune('a'+i))+".jsonl", conformanceRows("jsonl", 100+50*i, 7+i))
	}
	cfg := Config{Schema: conformanceSchema, ChunkSize: 256, Workers: 2}
	src := openSpec(t, Spec{Path: dir, Shard: pipeline.Shard{Index: 1, Count: 3}}, cfg)
	recorded := pipeline.SourceIdentity(src)
	delete(recorded, "input")
	if err := src.(pipeline.IdentityAdopter).AdoptIdentity(recorded); err != nil {
		t.Fatal(err)
	}
	if d := recorded.Diff(pipeline.SourceIdentity(src)); len(d) != 0 {
		t.Errorf("resume of an earlier checkpoint: %v", d)
	}
}
