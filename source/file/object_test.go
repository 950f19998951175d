package file

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/sourcetest"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// openBucket opens the store SplitObjectURI names for uri on srv, and the spec of its files.
func openBucket(t *testing.T, srv *s3test.Server, uri string) Spec {
	t.Helper()
	storeURI, pattern, fileURI, err := SplitObjectURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseURI(fileURI)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Store, err = s3store.Open(t.Context(), storeURI, s3test.Getenv(srv.Env)); err != nil {
		t.Fatal(err)
	}
	spec.Pattern = pattern
	return spec
}

func putObjects(t *testing.T, srv *s3test.Server, objects map[string]string) {
	t.Helper()
	st, err := s3store.Open(t.Context(), srv.URIFor(""), s3test.Getenv(srv.Env))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range objects {
		if err := st.Put(t.Context(), name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
}

// Files in a bucket (a prefix, a pattern, one object) read as local ones do: the conformance
// suite's resume after every batch, an identity that a rewritten object changes (by its ETag).
func TestBucketFilesConformance(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	endpoint := strings.SplitN(srv.URI, "?", 2)[1]
	putObjects(t, srv, map[string]string{
		"export/a.csv":        conformanceRows("csv", 20, 3),
		"export/b.jsonl":      conformanceRows("jsonl", 25, 4),
		"export/c.csv.gz":     string(gzipBytes(conformanceRows("csv", 30, 5))),
		"export/_SUCCESS":     "",
		"export/sub/d.csv":    conformanceRows("csv", 5, 1),
		"export/big/one.csv":  conformanceRows("csv", 60, 17),
		"export/notes.txt":    "not data",
		"other/unrelated.csv": conformanceRows("csv", 3, 1),
	})
	for _, c := range []struct {
		name, uri, change string
		files             int
	}{
		{"prefix", "s3://rekey/export?" + endpoint, "export/b.jsonl", 3},
		{"pattern", "s3://rekey/export/*.csv*?" + endpoint, "export/a.csv", 2},
		{"one object", "s3://rekey/export/big/one.csv?" + endpoint, "export/big/one.csv", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			open := opener(func() (pipeline.Source, error) {
				return Open(context.Background(), openBucket(t, srv, c.uri), Config{Schema: conformanceSchema, BatchSize: 6, ChunkSize: 64, Workers: 2}, nil)
			})
			if got := len(open(t).(*Files).files); got != c.files {
				t.Fatalf("%s: %d files, want %d", c.uri, got, c.files)
			}
			sourcetest.Run(t, sourcetest.Case{
				Open: open,
				OpenChanged: func(t *testing.T) pipeline.Source {
					putObjects(t, srv, map[string]string{c.change: conformanceRows("csv", 27, 2)})
					return open(t)
				},
			})
		})
	}
}

// A bucket URI splits into the store's part and the files' part.
func TestSplitObjectURI(t *testing.T) {
	for _, c := range []struct{ uri, store, pattern, file string }{
		{"s3://b/export/*.csv?region=r&header=false", "s3://b/export?region=r", "*.csv", "file:s3://b/export/*.csv?header=false"},
		{"oss://b/x/y.csv.gz?region=cn-hangzhou", "oss://b/x?region=cn-hangzhou", "y.csv.gz", "file:oss://b/x/y.csv.gz"},
		{"s3://b/dump/?format=csv&endpoint=http://h:1&path_style=true", "s3://b/dump?endpoint=http%3A%2F%2Fh%3A1&path_style=true", "", "file:s3://b/dump/?format=csv"},
		{"s3://b/part-*/rows.jsonl", "s3://b/", "part-*/rows.jsonl", "file:s3://b/part-*/rows.jsonl"},
	} {
		st, pat, f, err := SplitObjectURI(c.uri)
		if err != nil || st != c.store || pat != c.pattern || f != c.file {
			t.Errorf("SplitObjectURI(%q) = %q, %q, %q, %v; want %q, %q, %q", c.uri, st, pat, f, err, c.store, c.pattern, c.file)
		}
	}
}

// The file parameters of a bucket URI read as those of a local file: a space delimiter (%20), a
// semicolon one, a '+' in a null text.
func TestObjectURIFileParamsReadAsLocal(t *testing.T) {
	for _, q := range []string{"delimiter=%20", "delimiter=;", "null=a+b", "null=N%2FA&delimiter=%7C", "comment=%23&quote='"} {
		local, err := ParseURI("file:x.csv?" + q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		_, _, fileURI, err := SplitObjectURI("s3://b/x.csv?region=r&" + q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		spec, err := ParseURI(fileURI)
		if err != nil {
			t.Fatalf("%s: %s: %v", q, fileURI, err)
		}
		if spec.CSV != local.CSV {
			t.Errorf("%s: in a bucket %+v (%s), as a local file %+v", q, spec.CSV, fileURI, local.CSV)
		}
	}
}

// A spread sample of an object reads a few places of it, not one request per row, and still
// spans the whole object.
func TestBucketFileSampleSpansTheObject(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	putObjects(t, srv, map[string]string{"big.csv": conformanceRows("csv", 20000, -1)})
	spec := openBucket(t, srv, "s3://rekey/big.csv?"+strings.SplitN(srv.URI, "?", 2)[1])
	src, err := Open(context.Background(), spec, Config{Schema: conformanceSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := src.(pipeline.Sampler).Sample(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 900 {
		t.Fatalf("%d records sampled, want about 1000", len(recs))
	}
	lo, hi := int64(1<<62), int64(-1)
	for _, r := range recs {
		if r.Err != nil {
			t.Fatalf("a sampled record failed to parse: %v (%q)", r.Err, r.Raw)
		}
		lo, hi = min(lo, r.Values[0].Num), max(hi, r.Values[0].Num)
	}
	if lo > 200 || hi < 19800 {
		t.Fatalf("the sample spans ids %d..%d of 0..19999", lo, hi)
	}
}

// An object longer than many read-ahead blocks reads back byte for byte, whatever the sizes of the
// reads that consume it: its block buffers are fetched into again once read out, never while a
// block is still being read. (A store on local disk answers at once, so a buffer handed back
// too early is overwritten under the reader.)
func TestObjectReadAheadReusesBlocks(t *testing.T) {
	defer func(b int64) { readAheadBlock = b }(readAheadBlock)
	readAheadBlock = 1000
	want := make([]byte, 37*1000+123)
	for i := range want {
		want[i] = byte(i*7 + i/1000)
	}
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), "long.bin", want); err != nil {
		t.Fatal(err)
	}
	info, err := st.Stat(t.Context(), "long.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 999, 1500} {
		rc, err := openObject(t.Context(), &Object{Store: st, Info: info}, off, int64(len(want)))
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, 0, 4096)
		for step := 1; ; step = step%1777 + 311 { // reads of odd sizes, across block edges
			n, err := rc.Read(buf[:step])
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rc.Close()
		if !bytes.Equal(got, want[off:]) {
			t.Fatalf("from offset %d: %d bytes read, want %d; the first difference at %d", off, len(got), len(want)-int(off), firstDiff(got, want[off:]))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// An object rewritten after the source listed it (the same size, other bytes: an export written
// again) is not read: the run's identity, which a resume and merge compare, names the object by
// the ETag listed, so what is read must be that version, as a local file that changed while it
// was read fails the run. Reading the new bytes would also cut a part's records at boundaries
// found in another version.
func TestBucketObjectRewrittenAfterListingIsNotRead(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	endpoint := strings.SplitN(srv.URI, "?", 2)[1]
	putObjects(t, srv, map[string]string{"export/a.csv": "id,name\n1,one\n2,two\n"})
	src, err := Open(context.Background(), openBucket(t, srv, "s3://rekey/export/a.csv?"+endpoint), Config{Schema: conformanceSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	putObjects(t, srv, map[string]string{"export/a.csv": "id,name\n7,six\n8,ate\n"})
	out := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), nil, out); close(out) }()
	var ids []int64
	for b := range out {
		for _, r := range b.Records {
			ids = append(ids, r.Values[0].Num)
		}
	}
	err = <-errc
	if err == nil || !strings.Contains(err.Error(), "changed since it was listed") {
		t.Fatalf("a run over an object rewritten since its listing: rows with ids %v, error %v; want it refused", ids, err)
	}
}

// A read of an object stopped before its end (the run's context cancelled: a graceful stop, which
// still hands out what the source sends) ends in an error, never in io.EOF, which made the source
// take the bytes read so far for the whole object: a gzip object's stream was then cut short and
// the stop failed the run as damaged input ("truncated gzip data ... replace it with a complete
// copy"); a plain one's last chunk, cut where a block ended, was the object's last, its batch
// marking the object done.
func TestObjectReadStoppedEarlyIsNotTheEnd(t *testing.T) {
	defer func(b int64) { readAheadBlock = b }(readAheadBlock)
	readAheadBlock = 1000
	want := bytes.Repeat([]byte("0123456789"), 3700)
	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), "long.csv", want); err != nil {
		t.Fatal(err)
	}
	info, err := st.Stat(t.Context(), "long.csv")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rc, err := openObject(ctx, &Object{Store: st, Info: info}, 0, int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 500)
	if _, err := io.ReadFull(rc, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	got := 500
	for {
		n, err := rc.Read(buf)
		got += n
		if err == io.EOF {
			if got < len(want) {
				t.Fatalf("the stopped read ended as if the object did, after %d of its %d bytes", got, len(want))
			}
			return
		}
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the stopped read: %v, want an error wrapping context.Canceled", err)
			}
			return
		}
	}
}

// A pattern over a bucket leaves out hidden objects and those starting with '_', as a prefix's
// listing does, unless the pattern names them: 's3://b/export/*.csv' read export/.copy.csv
// and export/_tmp.csv before, which 's3://b/export/' leaves out. (The objects are listed through
// a folder's store: what is picked is the listing's names, whatever the store.)
func TestBucketPatternLeavesOutHiddenObjects(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.csv", ".copy.csv", "_tmp.csv", "p/_x/r.csv", "hidden/.only.csv"} {
		put(t, dir, name, conformanceRows("csv", 2, 0))
	}
	st, err := store.Open(t.Context(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string]string{
		"*.csv":        "a.csv",
		".*.csv":       ".copy.csv",
		"_*.csv":       "_tmp.csv",
		"p/*/*.csv":    "",
		"hidden/*.csv": "",
	} {
		objs, err := listObjects(t.Context(), st, pattern, "", zap.NewNop())
		if want == "" {
			if err == nil || !strings.Contains(err.Error(), "matches no object but hidden ones") {
				t.Errorf("%s: %v, want an error saying its matches are hidden", pattern, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Info.Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: reads %v, want %s", pattern, got, want)
		}
	}
}

// A bucket prefix or pattern holding an object and its gzip copy (orders.csv beside
// orders.csv.gz) is refused, naming both, as a local directory is: every row would be read twice.
func TestBucketObjectBesideItsGzipCopyIsRefused(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "orders.csv", conformanceRows("csv", 2, 0))
	if err := os.WriteFile(filepath.Join(dir, "orders.csv.gz"), gzipBytes(conformanceRows("csv", 2, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, dir, "other.csv", conformanceRows("csv", 2, 0))
	st, err := store.Open(t.Context(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{"", "*"} {
		objs, err := listObjects(t.Context(), st, pattern, "", zap.NewNop())
		if err == nil || !strings.Contains(err.Error(), "orders.csv and orders.csv.gz") {
			t.Errorf("pattern %q: %d objects, %v; want orders.csv and orders.csv.gz refused", pattern, len(objs), err)
		}
	}
}

// An object's name is written in the URI as a URI writes it, its folder and its own name alike:
// %20 is a space, %25 a '%', %2A a '*' that is no wildcard. The folder was decoded and the name
// was not, so 's3://b/export/orders%202024.csv' matched no object.
func TestBucketObjectNamedWithEscapes(t *testing.T) {
	srv := s3test.StartGofakes3(t, nil)
	endpoint := strings.SplitN(srv.URI, "?", 2)[1]
	putObjects(t, srv, map[string]string{
		"export/orders 2024.csv":   conformanceRows("csv", 2, 0),
		"export/orders 2025.csv":   conformanceRows("csv", 2, 0),
		"export/sub dir/a+b.csv":   conformanceRows("csv", 2, 0),
		"export/50% off.csv":       conformanceRows("csv", 2, 0),
		"export/star*.csv":         conformanceRows("csv", 2, 0),
		"export/starry.csv":        conformanceRows("csv", 2, 0),
		"export/orders%202024.csv": conformanceRows("csv", 2, 0), // a name holding "%20" itself
	})
	for path, want := range map[string]string{
		"export/orders%202024.csv":   "orders 2024.csv",
		"export/orders%20*.csv":      "orders 2024.csv orders 2025.csv",
		"export/sub%20dir/a+b.csv":   "a+b.csv",
		"export/sub dir/a+b.csv":     "a+b.csv",
		"export/50%25%20off.csv":     "50% off.csv",
		"export/star%2A.csv":         "star*.csv",
		"export/orders%25202024.csv": "orders%202024.csv",
	} {
		spec := openBucket(t, srv, "s3://rekey/"+path+"?"+endpoint)
		objs, err := listObjects(t.Context(), spec.Store, spec.Pattern, "", zap.NewNop())
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.Info.Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s reads %q, want %s", path, got, want)
		}
	}
}
