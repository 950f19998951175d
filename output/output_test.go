package output

import (
	"context"
	"errors"
	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/pipeline"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
)

// idSource is a seqSource that says what it reads.
type idSource struct {
	seqSource
	id pipeline.Identity
}

func (s *idSource) Identity() pipeline.Identity { return s.id }

// finishedRun runs cfg to its end and returns the output directory's checkpoint.
func finishedRun(t *testing.T, cfg testCfg, stop <-chan struct{}) *pipeline.Checkpoint {
	t.Helper()
	r, err := newRunner(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), stop, nil); err != nil && !errors.Is(err, runner.ErrInterrupted) {
		t.Fatal(err)
	}
	cp, err := ReadCheckpoint(context.Background(), localStore(t, cfg.OutDir))
	if err != nil || cp == nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	return cp
}

// interruptedRun stops cfg's run (Ctrl-C) once a checkpoint lists files, its source stalled
// until then so that the run cannot end first, and returns its checkpoint.
func interruptedRun(t *testing.T, cfg testCfg) *pipeline.Checkpoint {
	t.Helper()
	src := cfg.Source.(*idSource)
	src.pauseAfter = 20
	defer func() { src.pauseAfter = 0 }()
	stop := make(chan struct{})
	go func() {
		defer close(stop)
		wait.Until(func() bool {
			cp, _ := ReadCheckpoint(context.Background(), localStore(t, cfg.OutDir))
			return cp != nil && len(cp.Files) > 0
		}, wait.Timeout)
	}()
	cp := finishedRun(t, cfg, stop)
	if len(cp.Files) == 0 || cp.Complete {
		t.Fatalf("the interrupted run committed %d files (complete %v): the test needs a partial run", len(cp.Files), cp.Complete)
	}
	return cp
}

func jobConfig(t *testing.T, id pipeline.Identity) testCfg {
	src := &idSource{seqSource: seqSource{streams: 2, rows: 5000, batch: 50}, id: id}
	cfg := testConfig(t, src, &memSink{}, copyTransform{})
	cfg.Fingerprint, cfg.Format = "f1", "parquet"
	cfg.CheckpointEvery = time.Millisecond
	return cfg
}

func openResume(cfg testCfg, mod func(*Spec)) (*Output, error) {
	spec := Spec{Dir: cfg.OutDir, Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: cfg.Source, Resume: true}
	if mod != nil {
		mod(&spec)
	}
	return Open(context.Background(), cfg.store(nil), spec, nil)
}

// Before, `--resume` with another file (or the same name with other content), another --format or
// --regions was accepted and mixed two inputs in one output marked complete.
func TestResumeRefusesAnotherJob(t *testing.T) {
	id := pipeline.Identity{"file": "/data/orders.csv", "size": "1000", "mtime": "2026-11-01T00:00:00Z"}
	cfg := jobConfig(t, id)
	interruptedRun(t, cfg)
	cases := []struct {
		name string
		mod  func(*Spec)
		want string
	}{
		{"other file", func(s *Spec) {
			s.Source = &idSource{id: pipeline.Identity{"file": "/data/other.csv", "size": "1000", "mtime": "2026-11-01T00:00:00Z"}}
		}, "source file: /data/orders.csv then, /data/other.csv now"},
		{"same name, other content", func(s *Spec) {
			s.Source = &idSource{id: pipeline.Identity{"file": "/data/orders.csv", "size": "2000", "mtime": "2026-11-02T00:00:00Z"}}
		}, "source size: 1000 then, 2000 now"},
		{"other format", func(s *Spec) { s.Format = "csv" }, "--format: parquet then, csv now"},
		{"other regions", func(s *Spec) { s.Regions = 32 }, "--regions: 1 then, 32 now"},
		{"other mapping", func(s *Spec) { s.Fingerprint = "f2" }, "mapping: fingerprint f1 then, f2 now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := openResume(cfg, c.mod)
			if err == nil {
				o.Close()
				t.Fatal("resume accepted")
			}
			if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
	o, err := openResume(cfg, nil)
	if err != nil {
		t.Fatalf("the same job must resume: %v", err)
	}
	o.Close()
}

// Before, `--resume` trusted the checkpoint blindly: a committed file deleted or truncated stayed
// listed and the run exited 0 claiming rows that were gone.
func TestResumeRefusesDamagedFiles(t *testing.T) {
	for _, damage := range []string{"deleted", "truncated", "unreadable"} {
		t.Run(damage, func(t *testing.T) {
			cfg := jobConfig(t, nil)
			cp := interruptedRun(t, cfg)
			victim := cp.Files[len(cp.Files)/2]
			path := filepath.Join(cfg.OutDir, victim.Path)
			var verify Verifier
			switch damage {
			case "deleted":
				os.Remove(path)
			case "truncated":
				os.Truncate(path, victim.Bytes/2)
			case "unreadable":
				verify = refuseSize(victim.Bytes)
			}
			o, err := openResume(cfg, func(s *Spec) { s.Verify = verify })
			if err == nil {
				o.Close()
				t.Fatal("resume accepted a damaged output")
			}
			if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), victim.Path) {
				t.Fatalf("error does not name the damaged file %s: %v", victim.Path, err)
			}
		})
	}
}

// Before, a crash before the first checkpoint could never be resumed ("has no checkpoint.json to
// resume from" on every retry). A run now checkpoints before it reads, and a --resume that still
// finds no checkpoint starts over after removing the crashed run's files.
func TestResumeWithoutCheckpointStartsOver(t *testing.T) {
	cfg := jobConfig(t, nil)
	cfg.CheckpointEvery = time.Hour
	ctx, kill := context.WithCancel(context.Background())
	var hit *atomic.Bool
	cfg.Store, hit = withCrash(newBucket(t, cfg.OutDir).Store, afterFirstCheckpoint, kill)
	r, _ := newRunner(t, cfg)
	r.Run(ctx, nil, nil) // killed after the checkpoint before any row, long before a periodic one
	kill()
	if !hit.Load() {
		t.Fatal("the run was not killed after its first checkpoint")
	}
	cfg.Store = nil
	cp, err := resumeFrom(t, cfg)
	if err != nil || cp == nil {
		t.Fatalf("a run killed before its first periodic checkpoint cannot be resumed: cp %v, %v", cp, err)
	}

	// A crash before even the first checkpoint (during planning): only rekey's files are there.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data", "region-0003"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "region-0003", atomicfile.TempPrefix+"part-00000.parquet"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, RejectsFile), []byte("{}\n"), 0o600)
	o, err := Open(context.Background(), localStore(t, dir), Spec{Dir: dir, Resume: true}, nil)
	if err != nil {
		t.Fatalf("--resume with no checkpoint must start over: %v", err)
	}
	o.Close()
	if o.Checkpoint != nil {
		t.Fatal("a checkpoint appeared from nowhere")
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 || left[0].Name() != LockFile {
		t.Fatalf("the crashed run's files were not removed: %v", left)
	}

	// Anything rekey does not write means this is not a rekey output: never delete it.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if o, err := Open(context.Background(), localStore(t, dir), Spec{Dir: dir, Resume: true}, nil); err == nil {
		o.Close()
		t.Fatal("--resume took over a folder with someone else's files")
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal("a file rekey did not write was removed")
	}
}

// Before, two concurrent --resume on one --out hung; the second must be refused at once, naming the
// holder.
func TestOutputIsLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(context.Background(), localStore(t, dir), Spec{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), localStore(t, dir), Spec{Dir: dir, Resume: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second run on a locked output: %v", err)
	}
	first.Close()
	second, err := Open(context.Background(), localStore(t, dir), Spec{Dir: dir, Resume: true}, nil)
	if err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
	second.Close()
}

// Before, with a periodic commit failing (disk full), the run hung for ever: the loop left without
// cancelling the source, which stayed blocked sending a batch while Run waited for it.
func TestFailedPeriodicCommitEndsRun(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1_000_000, batch: 10}
	sink := &memSink{failAfter: 2}
	cfg := testConfig(t, src, sink, copyTransform{})
	cfg.CheckpointEvery = time.Millisecond
	cfg.Workers = 1
	r, _ := newRunner(t, cfg)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("err = %v, want the commit's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run hangs after a failed periodic commit")
	}
}

// rejects.jsonl holds raw rows (maybe personal data) and the checkpoint names the source: both are
// private to the run's user.
func TestPrivateFilesMode(t *testing.T) {
	src := &seqSource{streams: 1, rows: 100, batch: 10, bad: map[int64]bool{3: true}}
	cfg := testConfig(t, src, &memSink{}, copyTransform{})
	os.WriteFile(filepath.Join(cfg.OutDir, RejectsFile), nil, 0o644) // left wider by an older rekey
	finishedRun(t, cfg, nil)
	for _, name := range []string{RejectsFile, CheckpointFile} {
		st, err := os.Stat(filepath.Join(cfg.OutDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", name, st.Mode().Perm())
		}
	}
}

// An --out scheme the output cannot write to is refused: before, `--out mysql://...` created a
// local folder named "mysql:".
func TestOutputRefusesUnknownSchemes(t *testing.T) {
	for _, out := range []string{"mysql://u@h:3306/db", "s3://bucket/prefix", "ftp://x"} {
		dir := t.TempDir()
		t.Chdir(dir)
		err := CheckLocalDir(out)
		if err == nil || !strings.Contains(err.Error(), "does not write to") {
			t.Errorf("--out %s: %v", out, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("--out %s created %s", out, entries[0].Name())
		}
	}
}

// Before, the README's first command failed when run a second time ("already holds files").
// --overwrite replaces a previous rekey output, and never anything else.
func TestOverwriteReplacesOnlyRekeyOutputs(t *testing.T) {
	cfg := jobConfig(t, nil)
	cfg.CheckpointEvery = 0
	finishedRun(t, cfg, nil)
	os.WriteFile(filepath.Join(cfg.OutDir, "manifest.json"), []byte("{}"), 0o644)
	if _, err := Open(context.Background(), localStore(t, cfg.OutDir), Spec{Dir: cfg.OutDir}, nil); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("a second run without --overwrite: %v", err)
	}
	o, err := Open(context.Background(), localStore(t, cfg.OutDir), Spec{Dir: cfg.OutDir, Overwrite: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if left, _ := os.ReadDir(cfg.OutDir); len(left) != 1 || left[0].Name() != LockFile {
		t.Fatalf("--overwrite left %v", left)
	}
	os.WriteFile(filepath.Join(cfg.OutDir, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Open(context.Background(), localStore(t, cfg.OutDir), Spec{Dir: cfg.OutDir, Overwrite: true}, nil); err == nil {
		t.Fatal("--overwrite took over a folder holding someone else's file")
	}
	if _, err := os.Stat(filepath.Join(cfg.OutDir, "notes.txt")); err != nil {
		t.Fatal("--overwrite removed a file rekey did not write")
	}
}

// refuseSize is a data format that finds the files of one size damaged (a Parquet footer it
// cannot read, say).
type refuseSize int64

func (n refuseSize) Verify(_ io.ReaderAt, size int64) error {
	if size == int64(n) {
		return errors.New("no footer")
	}
	return nil
}

// A symbolic link named like the lock file leads outside the output: the lock is refused, naming
// the link, and the file it leads to is neither truncated nor written (before, it was replaced by
// the holder's pid and host).
func TestOutputLockIsNotASymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, LockFile)); err != nil {
		t.Fatal(err)
	}
	o, err := Open(context.Background(), localStore(t, dir), Spec{Dir: dir}, nil)
	if err == nil {
		o.Close()
		t.Fatal("the lock was taken through a symbolic link")
	}
	if !strings.Contains(err.Error(), LockFile) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want it to name %s as a symbolic link", err, LockFile)
	}
	if data, _ := os.ReadFile(outside); string(data) != "precious\n" {
		t.Fatalf("the file the link leads to now holds %q", data)
	}
}

// data/ is a common folder name: another tool's output there (Spark's data/year=2024/...) is not
// rekey's, and --overwrite, or a --resume that finds no checkpoint and starts over, refuses the
// folder naming the file instead of removing it. Before, both checked the names at the top
// only, and removed every file under data/.
func TestOverwriteKeepsAnotherToolsFilesUnderData(t *testing.T) {
	for _, spec := range []Spec{{Overwrite: true}, {Resume: true}} {
		dir := t.TempDir()
		theirs := filepath.Join(dir, "data", "year=2024", "part-0.parquet")
		if err := os.MkdirAll(filepath.Dir(theirs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec.Dir = dir
		o, err := Open(context.Background(), localStore(t, dir), spec, nil)
		if err == nil {
			o.Close()
		}
		if _, serr := os.Stat(theirs); serr != nil {
			t.Fatalf("overwrite %v, resume %v: removed %s, a file rekey did not write (open: %v)", spec.Overwrite, spec.Resume, theirs, err)
		}
		if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), "data/year=2024/part-0.parquet") {
			t.Fatalf("overwrite %v, resume %v: error %v does not refuse the folder naming the file", spec.Overwrite, spec.Resume, err)
		}
	}
}

// The rejects a checkpoint counts are records of rows as much as the data files are: a resume
// that finds rejects.jsonl gone or shorter than its checkpointed length refuses, naming it, as it
// does a damaged data file. Before, it cut the file "back" to that length, which filled what was
// gone with NUL bytes, and the run's summary counted the lost rows as rejected.
func TestResumeRefusesLostRejects(t *testing.T) {
	for _, damage := range []string{"deleted", "truncated"} {
		t.Run(damage, func(t *testing.T) {
			src := &idSource{seqSource: seqSource{streams: 2, rows: 5000, batch: 50}}
			cfg := testConfig(t, src, &memSink{}, copyTransform{rejectEvery: 7})
			cfg.Fingerprint, cfg.Format = "f1", "parquet"
			cfg.CheckpointEvery = time.Millisecond
			cp := interruptedRun(t, cfg)
			if cp.RejectsBytes == 0 {
				t.Fatal("the interrupted run committed no rejects: the test needs some")
			}
			path := filepath.Join(cfg.OutDir, RejectsFile)
			switch damage {
			case "deleted":
				os.Remove(path)
			case "truncated":
				os.Truncate(path, cp.RejectsBytes/2)
			}
			o, err := openResume(cfg, nil)
			if err == nil {
				o.Close()
				t.Fatal("resume accepted an output whose rejects are lost")
			}
			if !errors.Is(err, ErrRefusedResume) || !strings.Contains(err.Error(), RejectsFile) {
				t.Fatalf("error does not name %s: %v", RejectsFile, err)
			}
			if data, _ := os.ReadFile(path); strings.Contains(string(data), "\x00") {
				t.Fatalf("%s was filled with NUL bytes", RejectsFile)
			}
		})
	}
}
