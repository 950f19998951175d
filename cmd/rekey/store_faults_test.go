package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// Faults of the object store, at the command line: the server stopped mid-upload, a slow server,
// wrong credentials (one clear error, exit non-zero, nothing committed), a bucket that does not
// exist.

// bigOrdersCSV writes rows good orders with distinct keys, enough for a run of a few seconds.
func bigOrdersCSV(t *testing.T, dir string, rows int) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&sb, "u%d,%d,taobao,1700000000000,PAID,Hangzhou-%d,%d.25\n", i, i, i%977, i%100)
	}
	return writeFile(t, dir, "orders.csv", sb.String())
}

// distinctRows reads every data file a local copy of an output lists and fails on a row seen
// twice; it returns how many rows there are.
func distinctRows(t *testing.T, out string) int {
	t.Helper()
	rows, m := outputRows(t, out)
	for i := 1; i < len(rows); i++ {
		if rows[i] == rows[i-1] {
			t.Fatalf("row written twice: %s", rows[i])
		}
	}
	if int64(len(rows)) != m.RowsWritten {
		t.Fatalf("%d rows in the files, the manifest says %d", len(rows), m.RowsWritten)
	}
	return len(rows)
}

// The server stops in the middle of a run: the run fails with a non-zero exit within seconds
// (not a hang), its checkpoint lists only objects that were committed, and --resume once the
// server is back (same folder, same port) writes every row once, with no upload left unfinished.
func TestMigrateObjectStoreServerStoppedMidRunThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	dir := t.TempDir()
	srv := startVersitygw(t)
	out := filepath.Join(srv.Dir, s3test.Bucket, "run")
	const rows = 400000
	src := bigOrdersCSV(t, dir, rows)
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", srv.URIFor("run"),
		"--progress", "never", "--checkpoint-interval", "50ms", "--max-file-size", "256KiB"}
	// the server stops once a checkpoint lists written rows, before the run goes on
	var stopAt time.Time
	stop := func() {
		srv.Stop()
		stopAt = time.Now()
	}
	code, stdout, stderr := cliRun{env: srv.Env, wrapOut: atCheckpoint(midRun, stop)}.run(t, args...)
	ended := time.Now()
	if stopAt.IsZero() {
		t.Fatalf("the run saved no checkpoint with rows written before it ended (exit %d)\n%s%s", code, stdout, stderr)
	}
	took := ended.Sub(stopAt)
	t.Logf("server stopped: exit %d %.1fs later; stderr:\n%s", code, took.Seconds(), stderr)
	if code == 0 || code == exitRejects || code == 130 {
		t.Fatalf("exit %d after the server stopped, want a failure\n%s%s", code, stdout, stderr)
	}
	if took > 30*time.Second {
		t.Fatalf("the run took %v to fail after the server stopped", took)
	}
	if !strings.Contains(stderr, srv.Endpoint[len("http://"):]) && !strings.Contains(stderr, "s3://"+s3test.Bucket+"/run") {
		t.Errorf("the error does not name the store:\n%s", stderr)
	}
	if !strings.Contains(stderr, "--resume") {
		t.Errorf("the error does not say to resume:\n%s", stderr)
	}
	// what the checkpoint claims was committed is there, whole
	cp, err := outputtest.Checkpoint(out)
	if err != nil || cp == nil || cp.Complete {
		t.Fatalf("checkpoint after the failure: %+v, %v", cp, err)
	}
	for _, f := range cp.Files {
		fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(f.Path)))
		if err != nil || fi.Size() != f.Bytes {
			t.Fatalf("the checkpoint lists %s (%d bytes), which is not committed: %v", f.Path, f.Bytes, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, output.ManifestFile)); err == nil {
		t.Fatal("a failed run wrote manifest.json")
	}
	t.Logf("checkpoint at the failure: %d rows, %d files", cp.RowsWritten, len(cp.Files))

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLIWithEnv(t, srv.Env, append(args, "--resume")...)
	if code != 0 {
		t.Fatalf("--resume after the restart: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(out)
	if err != nil || m.RowsIn != rows || m.RowsWritten != rows {
		t.Fatalf("manifest %+v: %v", m, err)
	}
	if n := distinctRows(t, out); n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
	st := openURI(t, srv.URIFor("run"), srv.Env)
	if up, err := st.Unfinished(context.Background(), ""); err != nil || len(up) > 0 {
		t.Fatalf("unfinished uploads after the resume: %v %v", up, err)
	}
	checkOnlyListed(t, st, m)
}

// checkOnlyListed fails unless the data objects under the prefix are exactly the manifest's files.
func checkOnlyListed(t *testing.T, st *s3store.Store, m *output.Manifest) {
	t.Helper()
	objs, err := st.List(context.Background(), output.DataDir+"/")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range m.Regions {
		for _, f := range r.Files {
			listed[f.Path] = true
		}
	}
	for _, o := range objs {
		if !listed[o.Name] {
			t.Errorf("stray object %s: the manifest does not list it", o.Name)
		}
		delete(listed, o.Name)
	}
	for name := range listed {
		t.Errorf("the manifest lists %s, which is not in the bucket", name)
	}
}

// A slow server (every request delayed, every body trickled): the run takes longer and writes
// the same rows.
func TestMigrateSlowObjectStore(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	slow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(40 * time.Millisecond) // the server's latency
			r.Body = &slowBody{r: r.Body}
			next.ServeHTTP(w, r)
		})
	}
	srv := s3test.StartGofakes3(t, slow)
	dir := t.TempDir()
	const rows = 60000
	src := bigOrdersCSV(t, dir, rows)
	start := time.Now()
	mustRunWithEnv(t, srv.Env, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", srv.URIFor("slow"),
		"--progress", "never", "--checkpoint-interval", "100ms", "--max-file-size", "256KiB")
	t.Logf("slow server: %.1fs", time.Since(start).Seconds())
	got := download(t, srv.URIFor("slow"), srv.Env)
	if n := distinctRows(t, got); n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
}

// slowBody reads a request body 16 KiB at a time, 1 ms apart: about 16 MB/s.
type slowBody struct {
	r interface {
		Read([]byte) (int, error)
		Close() error
	}
}

func (b *slowBody) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond) // the link's speed
	return b.r.Read(p[:min(len(p), 16<<10)])
}
func (b *slowBody) Close() error { return b.r.Close() }

// Wrong credentials on a real server: one error that says which variables to check, a non-zero
// exit, nothing written in the bucket, and the secret nowhere in the output.
func TestMigrateObjectStoreWrongCredentials(t *testing.T) {
	t.Parallel()
	srv := startVersitygw(t)
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 100, 1)
	for name, env := range map[string][2]string{
		"wrong secret": {srv.Env["AWS_ACCESS_KEY_ID"], "not-the-secret-0123456789"},
		"unknown key":  {"NOSUCHACCESSKEY", "another-wrong-secret-98765"},
	} {
		t.Run(name, func(t *testing.T) {
			creds := map[string]string{"AWS_ACCESS_KEY_ID": env[0], "AWS_SECRET_ACCESS_KEY": env[1]}
			code, stdout, stderr := runCLIWithEnv(t, creds, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src,
				"--out", srv.URIFor("creds"), "--progress", "never")
			t.Logf("exit %d: %s", code, stderr)
			if code == 0 || code == exitRejects {
				t.Fatalf("exit %d with wrong credentials", code)
			}
			if n := strings.Count(stderr, "refused the credentials"); n != 1 || !strings.Contains(stderr, "AWS_ACCESS_KEY_ID") || !strings.Contains(stderr, "AWS_SECRET_ACCESS_KEY") {
				t.Fatalf("want one error naming AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY:\n%s", stderr)
			}
			if strings.Contains(stdout+stderr, env[1]) {
				t.Fatal("the secret is in the output")
			}
			assertBucketEmpty(t, srv)
		})
	}
}

// assertBucketEmpty fails when versitygw's bucket folder holds anything but its own hidden
// state.
func assertBucketEmpty(t *testing.T, srv *s3test.Server) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(srv.Dir, s3test.Bucket))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Fatalf("the bucket holds %s", e.Name())
		}
	}
}

// A bucket that does not exist: one error saying to create it, a non-zero exit, no bucket made.
func TestMigrateObjectStoreMissingBucket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := ordersCSV(t, dir, "orders.csv", 100, 1)
	for _, server := range []string{"gofakes3", "versitygw"} {
		t.Run(server, func(t *testing.T) {
			var srv *s3test.Server
			if server == "gofakes3" {
				srv = s3test.StartGofakes3(t, nil)
			} else {
				srv = startVersitygw(t)
			}
			uri := strings.Replace(srv.URIFor("out"), "s3://"+s3test.Bucket+"/", "s3://no-such-bucket/", 1)
			code, _, stderr := runCLIWithEnv(t, srv.Env, "migrate", "-m", "../../mappings/orders.yaml", "--source", "file:"+src, "--out", uri, "--progress", "never")
			t.Logf("exit %d: %s", code, stderr)
			if code == 0 || code == exitRejects {
				t.Fatalf("exit %d for a missing bucket", code)
			}
			if n := strings.Count(stderr, `bucket "no-such-bucket" does not exist`); n != 1 || !strings.Contains(stderr, "create it") {
				t.Fatalf("want one error saying the bucket does not exist and to create it:\n%s", stderr)
			}
			if srv.Dir != "" {
				if _, err := os.Stat(filepath.Join(srv.Dir, "no-such-bucket")); err == nil {
					t.Fatal("the bucket was created")
				}
			}
		})
	}
}
