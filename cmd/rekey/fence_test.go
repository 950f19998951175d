package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/store/s3store"
	"github.com/rekey/rekey/store/s3store/s3test"
)

// A run paused in the middle of a commit (a stopped process, a VM frozen) loses its output to
// another run, which takes the output over and finishes it; then the paused run goes on. It
// must stop without writing anything there (exit 3, saying another run took the output over):
// the output stays exactly what the second run left, every file the manifest lists there, no
// row twice. On a bucket the first run's lock goes stale (not renewed for LockTTL); on a folder,
// whose flock outlives any pause, the lock file is removed (someone cleared a lock they thought
// stuck), the only way a second run gets in.
func TestMigrateStopsWhenAnotherRunTookOverTheOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Run("folder", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		testTakeOver(t, out, out, nil, func() {
			if err := os.Remove(filepath.Join(out, output.LockFile)); err != nil {
				t.Fatal(err)
			}
		}, nil)
	})
	t.Run("versitygw", func(t *testing.T) {
		srv := startVersitygw(t)
		out := filepath.Join(srv.Dir, s3test.Bucket, "run")
		st, err := s3store.Open(context.Background(), srv.URIFor("run"), s3test.Getenv(srv.Env))
		if err != nil {
			t.Fatal(err)
		}
		// The paused run's lock as time leaves it: not renewed for LockTTL.
		stale := func() {
			data, err := st.Get(context.Background(), output.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			var lock map[string]any
			if err := json.Unmarshal(data, &lock); err != nil {
				t.Fatal(err)
			}
			lock["expires"] = time.Now().Add(-time.Second).UTC()
			data, _ = json.Marshal(lock)
			if err := st.Put(context.Background(), output.LockFile, data); err != nil {
				t.Fatal(err)
			}
		}
		testTakeOver(t, srv.URIFor("run"), out, srv.Env, stale, func() {
			if left, err := st.Unfinished(context.Background(), ""); err != nil || len(left) > 0 {
				t.Errorf("unfinished uploads left: %v %v", left, err)
			}
			if _, err := st.Stat(context.Background(), output.LockFile); err == nil {
				t.Error("the paused run left a lock on the output after the other run released its own")
			}
		})
	})
}

// testTakeOver pauses a migrate into outArg at its fourth data file commit, lets loseLock make
// its lock another run's for the taking, runs --resume to its end, then lets the first run go
// on. dir is the output as a local folder (versitygw keeps objects as files); after, if set,
// checks the store. env holds the store's credentials.
func testTakeOver(t *testing.T, outArg, dir string, env map[string]string, loseLock, after func()) {
	defer func(ttl time.Duration) { output.LockTTL = ttl }(output.LockTTL)
	output.LockTTL = time.Hour // no renewal while the test runs: loseLock decides when it is stale
	paused, release := make(chan struct{}), make(chan struct{})
	var commits atomic.Int32
	var once sync.Once
	output.BeforeFencedWrite = func(op, name string) {
		if op == "commit" && strings.HasPrefix(name, output.DataDir+"/") && commits.Add(1) == 4 {
			once.Do(func() {
				close(paused)
				<-release
			})
		}
	}
	defer func() { output.BeforeFencedWrite = nil }()

	const rows = 60000
	src := bigOrdersCSV(t, t.TempDir(), rows)
	args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--out", outArg,
		"--progress", "never", "--checkpoint-interval", "20ms", "--max-file-size", "64KiB"}
	type result struct {
		code           int
		stdout, stderr string
	}
	first := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLIWithEnv(t, env, args...)
		first <- result{code, stdout, stderr}
	}()
	select {
	case <-paused:
	case r := <-first:
		t.Fatalf("the first run ended before its fourth commit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	loseLock()
	if code, stdout, stderr := runCLIWithEnv(t, env, append(args, "--resume")...); code != 0 {
		close(release)
		t.Fatalf("the run taking the output over: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := outputtest.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := distinctRows(t, dir); n != rows {
		t.Fatalf("the second run wrote %d rows, want %d", n, rows)
	}
	before := snapshot(t, dir)

	close(release)
	r := <-first
	t.Logf("the paused run, released: exit %d\n%s", r.code, r.stderr)
	if r.code != exitFailed || !strings.Contains(r.stderr, "another rekey run took over") {
		t.Errorf("the paused run: exit %d, want 3 and an error saying another run took over the output\n%s", r.code, r.stderr)
	}
	now := snapshot(t, dir)
	for name, was := range before {
		if now[name] != was {
			t.Errorf("%s: %s after the second run, %q after the paused one went on", name, was, now[name])
		}
	}
	for name, is := range now {
		if _, ok := before[name]; !ok {
			t.Errorf("%s (%s) written by the paused run after the other took the output over", name, is)
		}
	}
	listed := map[string]bool{}
	for _, reg := range m.Regions {
		for _, f := range reg.Files {
			listed[f.Path] = true
			if _, ok := now[f.Path]; !ok {
				t.Errorf("the manifest lists %s, which is not there", f.Path)
			}
		}
	}
	for name := range now {
		if strings.HasPrefix(name, output.DataDir+"/") && !listed[name] {
			t.Errorf("%s is not in the manifest", name)
		}
	}
	if n := distinctRows(t, dir); n != rows {
		t.Fatalf("%d rows after the paused run went on, want %d", n, rows)
	}
	if after != nil {
		after()
	}
}

// snapshot maps the files of an output folder (the lock and temporary files aside) to their
// sizes and digests.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == output.LockFile || atomicfile.IsTemp(filepath.Base(rel)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
