package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// s3call is one request an S3 server answered: its operation, object key and body bytes each way.
type s3call struct {
	op, key     string
	sent, recvd int64 // request body (client to server), response body (server to client)
}

// s3log records every request through a wrapped S3 handler (gofakes3's, or a proxy in front of
// versitygw): which calls a command made, and how many object bytes crossed the wire.
type s3log struct {
	mu    sync.Mutex
	calls []s3call
}

func (l *s3log) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &countReader{r: r.Body}
		r.Body = body
		cw := &countWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		l.mu.Lock()
		l.calls = append(l.calls, s3call{op: s3test.Op(r), key: strings.TrimPrefix(r.URL.Path, "/"+s3test.Bucket+"/"), sent: body.n, recvd: cw.n})
		l.mu.Unlock()
	})
}

func (l *s3log) reset() {
	l.mu.Lock()
	l.calls = nil
	l.mu.Unlock()
}

func (l *s3log) all() []s3call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]s3call(nil), l.calls...)
}

type countReader struct {
	r io.ReadCloser
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
func (c *countReader) Close() error { return c.r.Close() }

type countWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// download copies every object under uri's prefix into a new local folder, so the readers of
// local outputs (outputRows, the manifest) read what the bucket holds.
func download(t *testing.T, uri string, env map[string]string) string {
	t.Helper()
	ctx := context.Background()
	st, err := s3store.Open(ctx, uri, s3test.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, o := range objs {
		data, err := st.Get(ctx, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(o.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Shards (--shard i/N) writing under one bucket merge without copying data through rekey. Two
// shards of a Cassandra table migrated to two prefixes of one bucket merge into a third with
// server-side copies: no data object is read (GetObject) or sent (PutObject, UploadPart) by rekey,
// only copied by the server (CopyObject), and the merged manifest and bulkload.json name the copies
// under the merged prefix's data/, holding the rows of an unsharded run. On gofakes3 and on
// versitygw (through a counting proxy).
func TestMergeShardsOnObjectStoreCopiesOnTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	m, uri, want := shopShards(t)
	for _, server := range []string{"gofakes3", "versitygw"} {
		t.Run(server, func(t *testing.T) {
			log := &s3log{}
			var srv *s3test.Server
			if server == "gofakes3" {
				srv = s3test.StartGofakes3(t, log.wrap)
			} else {
				srv = startVersitygw(t).Proxy(t, log.wrap)
			}
			var shards []string
			for i := 0; i < 2; i++ {
				out := srv.URIFor(fmt.Sprintf("shard-%d", i))
				mustRunWithEnv(t, srv.Env, "migrate", "-m", m, "--source", uri, "--shard", fmt.Sprintf("%d/2", i), "--out", out, "--progress", "never", "--max-file-size", "16KiB")
				shards = append(shards, out)
			}
			var dataBytes int64
			for _, s := range shards {
				sm, err := output.ReadManifest(context.Background(), openURI(t, s, srv.Env))
				if err != nil {
					t.Fatal(err)
				}
				dataBytes += sm.Bytes
			}
			log.reset()
			stdout := mustRunWithEnv(t, srv.Env, "merge", shards[0], shards[1], "--out", srv.URIFor("merged"))
			if !strings.Contains(stdout, "copied by the server, no data through rekey") {
				t.Errorf("merge output:\n%s", stdout)
			}
			copies := 0
			var moved, total int64
			for _, call := range log.all() {
				total += call.sent + call.recvd
				isData := strings.Contains(call.key, "/"+output.DataDir+"/")
				switch {
				case call.op == "CopyObject":
					copies++
					if !strings.HasPrefix(call.key, "merged/data/region-") {
						t.Errorf("a copy to %s", call.key)
					}
				case isData && (call.op == "GetObject" || call.op == "PutObject" || call.op == "UploadPart"):
					t.Errorf("%s %s: %d bytes sent, %d received: data went through rekey", call.op, call.key, call.sent, call.recvd)
					moved += call.sent + call.recvd
				}
			}
			got := download(t, srv.URIFor("merged"), srv.Env)
			rows, mm := outputRows(t, got)
			if copies != mm.Files || mm.Files < 16 {
				t.Errorf("%d CopyObject calls for %d merged files", copies, mm.Files)
			}
			t.Logf("%s: merge of %d files (%d bytes of data): %d CopyObject, %d bytes of request and response bodies in all, %d of data", server, mm.Files, dataBytes, copies, total, moved)
			if mm.Bytes != dataBytes || total >= dataBytes {
				t.Errorf("merged %d bytes of %d; %d bytes crossed the wire", mm.Bytes, dataBytes, total)
			}
			if strings.Join(rows, "\n") != strings.Join(want, "\n") {
				t.Fatalf("merged shards: %d rows; unsharded: %d rows; they differ", len(rows), len(want))
			}
			for _, r := range mm.Regions {
				for _, f := range r.Files {
					if !strings.HasPrefix(f.Path, output.RegionDir(r.Index)+"/") {
						t.Errorf("merged manifest lists %s in region %d", f.Path, r.Index)
					}
				}
			}
			var job lindorm.BulkloadJob
			data, _ := os.ReadFile(filepath.Join(got, output.BulkloadFile))
			if err := json.Unmarshal(data, &job); err != nil || job.ReaderConfig.FilePath != "merged/data/*/" {
				t.Errorf("bulkload.json filePath %q, want merged/data/*/: %v", job.ReaderConfig.FilePath, err)
			}
			// the shards are intact (the default --files link copies; move would remove them)
			for _, s := range shards {
				if _, err := output.ReadManifest(context.Background(), openURI(t, s, srv.Env)); err != nil {
					t.Errorf("%s after the merge: %v", s, err)
				}
			}
		})
	}
}

func openURI(t *testing.T, uri string, env map[string]string) *s3store.Store {
	t.Helper()
	st, err := s3store.Open(context.Background(), uri, s3test.Getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMergeMoveFinishesAfterAFailure: a `merge --files move` that failed half way (here the
// bucket refuses the third removal of an input's object) left the files split between the
// inputs and --out; merge then refused the inputs ("lists ... which is missing") and advised
// removing --out, the only copy of the moved files. The error now says to run the same merge
// again, which finishes it: the merged rows are those of a merge with --files copy, and no data
// file is left in the inputs.
func TestMergeMoveFinishesAfterAFailure(t *testing.T) {
	t.Parallel()
	var deletes atomic.Int32
	var broken atomic.Bool
	srv := s3test.StartGofakes3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s3test.Op(r) == "DeleteObjects" && broken.Load() && deletes.Add(1) > 2 {
				http.Error(w, "<Error><Code>InternalError</Code><Message>injected</Message></Error>", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	var ins []string
	for i := 0; i < 2; i++ { // two runs of one table (different generated rows)
		in := srv.URIFor(fmt.Sprintf("shard-%d", i))
		mustRunWithEnv(t, srv.Env, "migrate", "-m", mapping, "--source", fmt.Sprintf("gen:orders?rows=3000&seed=%d", i+1), "--out", in, "--progress", "never", "--max-file-size", "16KiB")
		ins = append(ins, in)
	}
	mustRunWithEnv(t, srv.Env, append(append([]string{"merge"}, ins...), "--out", srv.URIFor("copied"), "--files", "copy")...)
	want, _ := outputRows(t, download(t, srv.URIFor("copied"), srv.Env))

	args := append(append([]string{"merge"}, ins...), "--out", srv.URIFor("moved"), "--files", "move")
	broken.Store(true)
	code, stdout, errs := runCLIWithEnv(t, srv.Env, args...)
	broken.Store(false)
	if code == 0 || !strings.Contains(errs, "run the same merge command again") || strings.Contains(errs, "remove it") {
		t.Fatalf("merge --files move with a failing removal: exit %d\n%s%s", code, stdout, errs)
	}
	if out := mustRunWithEnv(t, srv.Env, args...); !strings.Contains(out, "Merged 2 runs") {
		t.Fatalf("merge run again:\n%s", out)
	}
	got, mm := outputRows(t, download(t, srv.URIFor("moved"), srv.Env))
	if strings.Join(got, "\n") != strings.Join(want, "\n") || mm.RowsWritten != 6000 {
		t.Fatalf("the finished move holds %d rows (manifest: %d); a copy %d", len(got), mm.RowsWritten, len(want))
	}
	for _, in := range ins {
		if objs, err := openURI(t, in, srv.Env).List(context.Background(), output.DataDir+"/"); err != nil || len(objs) != 0 {
			t.Errorf("%s holds %d data files after the move (%v)", in, len(objs), err)
		}
	}
	if _, err := openURI(t, srv.URIFor("moved"), srv.Env).Stat(context.Background(), output.MergePlanFile); err == nil {
		t.Errorf("the finished merge left %s", output.MergePlanFile)
	}
}

// Cassandra shards writing one bucket prefix together (--shared-out), then merge --out with no
// inputs: the finishing step reads and writes metadata only (no copy, no data object read or
// written), the shards' token ranges tile the ring, and the rows equal an unsharded run's.
func TestSharedOutShardsFinishWithMetadataOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	m, uri, want := shopShards(t)
	log := &s3log{}
	srv := startVersitygw(t).Proxy(t, log.wrap)
	out := srv.URIFor("shared")
	for i := 0; i < 3; i++ {
		mustRunWithEnv(t, srv.Env, "migrate", "-m", m, "--source", uri, "--shard", fmt.Sprintf("%d/3", i), "--shared-out", "--out", out, "--progress", "never", "--max-file-size", "16KiB")
	}
	log.reset()
	stdout := mustRunWithEnv(t, srv.Env, "merge", "--out", out)
	if !strings.Contains(stdout, "metadata only") {
		t.Errorf("merge --out output:\n%s", stdout)
	}
	var total int64
	for _, call := range log.all() {
		total += call.sent + call.recvd
		if call.op == "CopyObject" || call.op == "UploadPartCopy" || strings.HasPrefix(call.key, "shared/"+output.DataDir+"/") && call.op != "ListObjectsV2" {
			t.Errorf("the finishing step made %s %s", call.op, call.key)
		}
	}
	got := download(t, out, srv.Env)
	rows, mm := outputRows(t, got)
	t.Logf("finished %d files (%d bytes of data) with %d bytes of request and response bodies", mm.Files, mm.Bytes, total)
	if total >= mm.Bytes {
		t.Errorf("%d bytes crossed the wire finishing %d bytes of data", total, mm.Bytes)
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("shards written together: %d rows; unsharded: %d rows; they differ", len(rows), len(want))
	}
	var job lindorm.BulkloadJob
	data, _ := os.ReadFile(filepath.Join(got, output.BulkloadFile))
	if err := json.Unmarshal(data, &job); err != nil || job.ReaderConfig.FilePath != "shared/data/*/" {
		t.Errorf("bulkload.json filePath %q, want shared/data/*/: %v", job.ReaderConfig.FilePath, err)
	}
}

// shopShards serves a table of 6000 orders on 3 fake nodes and returns a mapping, the table's
// source URI and the rows of an unsharded run of it, the reference for its shards.
func shopShards(t *testing.T) (mapping, uri string, want []string) {
	c := cassandratest.Open(t, cqltest.WithNodes(3), cqltest.WithVnodes(8))
	const n = 6000
	seedShop(t, c, n)
	dir := t.TempDir()
	mapping = writeFile(t, dir, "hash.yaml", hashMapping)
	uri = c.URI("shop", "orders", "page_size=300")
	whole := filepath.Join(dir, "whole")
	mustRun(t, "migrate", "-m", mapping, "--source", uri, "--out", whole, "--progress", "never")
	if want, _ = outputRows(t, whole); len(want) != n {
		t.Fatalf("unsharded run: %d rows", len(want))
	}
	return mapping, uri, want
}

// A bucket prefix holding a character that bulkload.json's filePath cannot carry ('?', '#' or
// '%', which end or escape a URI's path; '*', '[', '{' ..., which the job's Spark glob expands)
// is refused before anything is written. merge took its filePath from the prefix read back as a
// URI: --out s3://rekey/runs%3Fx gave filePath "runs/data/*/", the files of another prefix; and a
// glob character in the prefix names other folders' files as well.
func TestBucketPrefixTheBulkloadCannotNameIsRefused(t *testing.T) {
	t.Parallel()
	srv := s3test.StartGofakes3(t, nil)
	mapping := filepath.Join("..", "..", "mappings", "orders.yaml")
	in := srv.URIFor("in")
	mustRunWithEnv(t, srv.Env, "migrate", "-m", mapping, "--source", "gen:orders?rows=100", "--out", in, "--progress", "never")
	for _, prefix := range []string{"runs%3Fx", "runs%23x", "runs%25x", "runs/o*", "runs/o%5B1%5D"} {
		for _, args := range [][]string{
			{"merge", in, "--out", srv.URIFor(prefix + "/merged")},
			{"migrate", "-m", mapping, "--source", "gen:orders?rows=100", "--out", srv.URIFor(prefix + "/migrated"), "--progress", "never"},
		} {
			out := args[slices.Index(args, "--out")+1]
			code, stdout, errs := runCLIWithEnv(t, srv.Env, args...)
			if code != 2 || !strings.Contains(errs, "filePath") {
				var job lindorm.BulkloadJob
				if data, err := openURI(t, out, srv.Env).Get(context.Background(), output.BulkloadFile); err == nil {
					_ = json.Unmarshal(data, &job)
				}
				t.Errorf("rekey %s: exit %d, want 2 saying why (bulkload.json filePath %q)\n%s%s", args[0], code, job.ReaderConfig.FilePath, stdout, errs)
				continue
			}
			if objs, err := openURI(t, out, srv.Env).List(context.Background(), ""); err != nil || len(objs) != 0 {
				t.Errorf("rekey %s into %s refused, but it wrote %d objects (%v)", args[0], out, len(objs), err)
			}
		}
	}
}
