package output

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/pipeline"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/store"
)

// seqSource emits streams of numbered rows; row values are (stream index, row number).
// It fails the hard way (stops delivering) once `killAfter` batches have been sent, if set.
type seqSource struct {
	streams, rows, batch int
	bad                  map[int64]bool // rows the source cannot decode
	delay                time.Duration
	failStream           int   // the source fails when it reaches this stream (0: never)
	failErr              error // the error it fails with (default: a range that keeps failing)
	rawIDs               bool  // bad rows' Raw names the row ("garbage 0/5")
	pauseAfter           int   // after sending this many batches, wait for ctx's end (0: never)
}

func (s *seqSource) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	sent := 0
	for si := 0; si < s.streams; si++ {
		if s.failStream > 0 && si == s.failStream {
			if s.failErr != nil {
				return s.failErr
			}
			return errors.New("range s" + strconv.Itoa(si) + " keeps failing")
		}
		name := fmt.Sprintf("s%d", si)
		start := 0
		if st, ok := resume[name]; ok {
			if st.Done {
				continue
			}
			start, _ = strconv.Atoi(st.Cursor)
		}
		for i := start; i < s.rows; i += s.batch {
			b := pipeline.Batch{Stream: name}
			for j := i; j < i+s.batch && j < s.rows; j++ {
				r := pipeline.Record{Seq: int64(j), Values: []pipeline.Value{pipeline.Int(int64(si)), pipeline.Int(int64(j))}}
				if s.bad[int64(si*1_000_000+j)] {
					r.Err = &pipeline.RowError{Code: pipeline.CodeParse, Message: "cannot decode"}
					r.Raw = "garbage"
					if s.rawIDs {
						r.Raw = fmt.Sprintf("garbage %d/%d", si, j)
					}
				}
				b.Records = append(b.Records, r)
			}
			next := i + s.batch
			b.Cursor = strconv.Itoa(next)
			b.Done = next >= s.rows
			if s.delay > 0 {
				time.Sleep(s.delay) // a slow source: its pace, not a wait
			}
			if s.pauseAfter > 0 && sent == s.pauseAfter {
				<-ctx.Done()
				return ctx.Err()
			}
			select {
			case out <- b:
				sent++
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// copyTransform passes values through; rows whose number is divisible by rejectEvery are rejected.
type copyTransform struct{ rejectEvery int64 }

func (t copyTransform) Apply(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError {
	if t.rejectEvery > 0 && r.Values[1].Num%t.rejectEvery == 0 {
		return &pipeline.RowError{Code: pipeline.CodeDictMiss, Field: "n", Message: "no code"}
	}
	copy(out, r.Values)
	return nil
}
func (copyTransform) Reset() {}

// memSink keeps written rows pending until Commit, like files that are not yet renamed; rows
// committed survive a "crash" (the sink object is reused across runs to model the disk).
type memSink struct {
	dir         string // the run's output directory: committed "files" are created there
	mu          sync.Mutex
	pending     []string
	committed   []string
	files       map[string][]string // committed file -> its rows
	commits     int
	failAfter   int   // Commit fails from this call on (0: never)
	rejectEvery int64 // Write rejects rows whose number is 1 modulo this (0: none)
}

func (m *memSink) Write(ctx context.Context, rows []pipeline.Row) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rr pipeline.RowRejects
	for i, r := range rows {
		if m.rejectEvery > 0 && r.Values[1].Num%m.rejectEvery == 1 {
			rr.Rows = append(rr.Rows, pipeline.RowReject{Index: i, Err: &pipeline.RowError{Code: pipeline.CodeType, Field: "n", Message: "does not fit"}})
			continue
		}
		m.pending = append(m.pending, fmt.Sprintf("%d/%d", r.Values[0].Num, r.Values[1].Num))
	}
	if len(rr.Rows) > 0 {
		return &rr
	}
	return nil
}

func (m *memSink) Commit(ctx context.Context) ([]pipeline.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if m.failAfter > 0 && m.commits >= m.failAfter {
		return nil, errors.New("disk full")
	}
	m.committed = append(m.committed, m.pending...)
	n := len(m.pending)
	rows := m.pending
	m.pending = nil
	if n == 0 {
		return nil, nil
	}
	// A real file, so that a resume can check it is still there with its size.
	fi := pipeline.FileInfo{Path: fmt.Sprintf("data/region-0000/part-%05d.x", m.commits), Rows: int64(n), Bytes: int64(n)}
	if m.files == nil {
		m.files = map[string][]string{}
	}
	m.files[fi.Path] = rows
	if m.dir != "" {
		os.MkdirAll(filepath.Join(m.dir, "data", "region-0000"), 0o755)
		if err := os.WriteFile(filepath.Join(m.dir, fi.Path), make([]byte, n), 0o644); err != nil {
			return nil, err
		}
	}
	return []pipeline.FileInfo{fi}, nil
}

func (m *memSink) Abort(context.Context) error {
	m.mu.Lock()
	m.pending = nil
	m.mu.Unlock()
	return nil
}

// testCfg is a run of the pipeline into an output folder (OutDir), or into Store.
type testCfg struct {
	runner.Config
	OutDir string
	Store  store.Store // nil: the folder OutDir
}

func testConfig(t *testing.T, src pipeline.Source, sink pipeline.Sink, tr runner.Transformer) testCfg {
	cfg := testCfg{Config: runner.Config{
		Source:         src,
		NewTransformer: func() runner.Transformer { return tr },
		Target:         pipeline.TargetSchema{Columns: []pipeline.Column{{Name: "s", Type: pipeline.TypeBigint}, {Name: "n", Type: pipeline.TypeBigint, KeyPos: -1}}, KeyLen: 1},
		Plan:           pipeline.RegionPlan{Type: pipeline.TypeBigint},
		Sink:           sink,
		Workers:        4,
	}, OutDir: t.TempDir()}
	if ms, ok := sink.(*memSink); ok {
		ms.dir = cfg.OutDir
	}
	return cfg
}

// store is the output the run writes.
func (cfg testCfg) store(t *testing.T) store.Store {
	if cfg.Store != nil {
		return cfg.Store
	}
	st, err := store.Open(context.Background(), cfg.OutDir, nil, store.PrivateNames(PrivateName))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testRunner runs the pipeline through a journal of cfg's output (not locked: the tests
// that need the lock open the output), as migrate does.
type testRunner struct {
	*runner.Runner
	t   *testing.T
	cfg testCfg
	jr  **Journal
}

func newRunner(t *testing.T, cfg testCfg) (testRunner, error) {
	var jr *Journal
	cfg.Journal = journalRef{&jr}
	r, err := runner.New(cfg.Config)
	return testRunner{Runner: r, t: t, cfg: cfg, jr: &jr}, err
}

// journalRef lets the runner be built before its journal, which depends on the checkpoint the
// run resumes from.
type journalRef struct{ j **Journal }

func (r journalRef) Reject(b *pipeline.Batch, rec *pipeline.Record, stage string, err *pipeline.RowError) error {
	return (*r.j).Reject(b, rec, stage, err)
}
func (r journalRef) Cut(ctx context.Context, cp *pipeline.Checkpoint) error {
	return (*r.j).Cut(ctx, cp)
}
func (r journalRef) RejectsName() string { return RejectsFile }

// Run opens the journal from resume, runs, and closes the journal as migrate does.
func (r testRunner) Run(ctx context.Context, stop <-chan struct{}, resume *pipeline.Checkpoint) (pipeline.Result, error) {
	o := &Output{Store: r.cfg.store(r.t), Checkpoint: resume, log: zap.NewNop()}
	j, err := o.Journal(r.cfg.Source, nil)
	if err != nil {
		return pipeline.Result{}, err
	}
	defer j.Close()
	*r.jr = j
	return r.Runner.Run(ctx, stop, resume)
}

func TestRunCountsAddUp(t *testing.T) {
	src := &seqSource{streams: 3, rows: 1000, batch: 64, bad: map[int64]bool{5: true, 1_000_007: true}}
	sink := &memSink{}
	cfg := testConfig(t, src, sink, copyTransform{rejectEvery: 100})
	r, err := newRunner(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3000 rows; 2 source rejects; 10 transform rejects per stream (0, 100, ..., 900).
	if res.RowsIn != 3000 || res.RowsRejected != 32 || res.RowsWritten != 2968 {
		t.Fatalf("counts in=%d written=%d rejected=%d", res.RowsIn, res.RowsWritten, res.RowsRejected)
	}
	if res.RowsIn != res.RowsWritten+res.RowsRejected || len(sink.committed) != 2968 {
		t.Fatalf("rows do not add up: committed %d", len(sink.committed))
	}
	if res.RejectCodes[pipeline.CodeParse] != 2 || res.RejectCodes[pipeline.CodeDictMiss] != 30 {
		t.Fatalf("reject codes %v", res.RejectCodes)
	}
	lines := readRejects(t, cfg.OutDir)
	if len(lines) != 32 {
		t.Fatalf("rejects.jsonl has %d lines, want 32", len(lines))
	}
	var sawParse bool
	for _, l := range lines {
		if l.Code == pipeline.CodeParse {
			sawParse = true
			if l.Stage != "source" || l.Raw != "garbage" || l.Position == "" {
				t.Fatalf("source reject lacks its details: %+v", l)
			}
		}
	}
	if !sawParse {
		t.Fatal("no parse reject written")
	}
}

func readRejects(t *testing.T, dir string) []Reject {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, RejectsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Reject
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Reject
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad rejects line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func TestRejectLimitAborts(t *testing.T) {
	five, zero := int64(5), int64(0)
	for _, lim := range []runner.RejectLimit{{Count: &five}, {Count: &zero}, {Percent: 0.5}} {
		src := &seqSource{streams: 1, rows: 5000, batch: 100}
		sink := &memSink{}
		cfg := testConfig(t, src, sink, copyTransform{rejectEvery: 10})
		cfg.RejectLimit = lim
		r, _ := newRunner(t, cfg)
		_, err := r.Run(context.Background(), nil, nil)
		if !errors.Is(err, runner.ErrTooManyRejects) {
			t.Fatalf("limit %+v: err = %v, want ErrTooManyRejects", lim, err)
		}
	}
}

// A run killed hard (context cancelled: nothing more committed or checkpointed) at each crash
// point, then resumed from its checkpoint, commits exactly the rows of a clean run: none lost, none
// twice, and rejects.jsonl lists each rejected row once.
func TestCrashAndResumeExactlyOnce(t *testing.T) {
	for _, point := range crashPoints(50) {
		t.Run(point.name, func(t *testing.T) {
			src := &seqSource{streams: 4, rows: 3000, batch: 50, pauseAfter: point.pauseAfter}
			sink := &memSink{}
			cfg := testConfig(t, src, sink, copyTransform{rejectEvery: 97})
			cfg.CheckpointEvery = time.Millisecond
			ctx, kill := context.WithCancel(context.Background())
			defer kill()
			var hit *atomic.Bool
			cfg.Store, hit = withCrash(newBucket(t, cfg.OutDir).Store, point, kill)
			r, _ := newRunner(t, cfg)
			if _, err := r.Run(ctx, nil, nil); err == nil || !hit.Load() {
				t.Fatalf("the run was not killed at its crash point: err %v, crash point met %v", err, hit.Load())
			}
			cp, err := resumeFrom(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if cp == nil {
				t.Fatal("a run writes its first checkpoint before reading: there must be one to resume from")
			} else if n := len(sink.rowsOnDisk()); int64(n) != cp.RowsWritten {
				t.Fatalf("checkpoint says %d rows written, the files left after opening for resume hold %d", cp.RowsWritten, n)
			}
			src.pauseAfter = 0
			cfg.Store = nil
			r2, _ := newRunner(t, cfg)
			res, err := r2.Run(context.Background(), nil, cp)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, k := range sink.rowsOnDisk() {
				seen[k]++
				if seen[k] > 1 {
					t.Fatalf("row %s written twice", k)
				}
			}
			wantRejected := int64(4 * 31) // multiples of 97 below 3000, per stream
			if res.RowsIn != 12000 || res.RowsRejected != wantRejected || int64(len(seen)) != 12000-wantRejected {
				t.Fatalf("after resume in=%d rejected=%d distinct=%d", res.RowsIn, res.RowsRejected, len(seen))
			}
			if n := len(readRejects(t, cfg.OutDir)); int64(n) != wantRejected {
				t.Fatalf("rejects.jsonl has %d lines after resume, want %d", n, wantRejected)
			}
		})
	}
}

// Closing stop finishes what was read, commits it, and the checkpoint lets a resume finish.
func TestInterruptCommitsAndResumes(t *testing.T) {
	// the source stalls after 10 batches, so the run is still reading when it is interrupted
	src := &seqSource{streams: 2, rows: 5000, batch: 100, pauseAfter: 10}
	sink := &memSink{}
	cfg := testConfig(t, src, sink, copyTransform{})
	r, _ := newRunner(t, cfg)
	stop := make(chan struct{})
	go func() { // interrupt once rows flow
		wait.Until(func() bool { return r.Counters.RowsIn.Load() > 0 }, wait.Timeout)
		close(stop)
	}()
	res, err := r.Run(context.Background(), stop, nil)
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if res.RowsWritten != int64(len(sink.committed)) || res.RowsWritten == 0 || len(sink.pending) != 0 {
		t.Fatalf("interrupted run: written %d, committed %d, pending %d", res.RowsWritten, len(sink.committed), len(sink.pending))
	}
	cp, err := resumeFrom(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := cp.RowsIn
	src.pauseAfter = 0
	r2, _ := newRunner(t, cfg)
	res2, err := r2.Run(context.Background(), nil, cp)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.committed) != 10000 {
		t.Fatalf("after resume %d rows committed, want 10000", len(sink.committed))
	}
	// the resumed attempt's own rows, from which its rate is computed, exclude the first attempt's
	if res2.RowsIn != 10000 || res2.RowsInThisRun != 10000-before || before == 0 {
		t.Fatalf("resumed run: rows in %d, this run %d, checkpoint held %d", res2.RowsIn, res2.RowsInThisRun, before)
	}
}

func TestCommitFailureFailsRun(t *testing.T) {
	src := &seqSource{streams: 1, rows: 100, batch: 10}
	sink := &memSink{failAfter: 1}
	cfg := testConfig(t, src, sink, copyTransform{})
	r, _ := newRunner(t, cfg)
	if _, err := r.Run(context.Background(), nil, nil); err == nil {
		t.Fatal("a failed commit must fail the run")
	}
	cp, err := ReadCheckpoint(context.Background(), localStore(t, cfg.OutDir))
	if err != nil || cp == nil {
		t.Fatalf("the first checkpoint is missing: %v", err)
	}
	if len(cp.Files) != 0 || cp.RowsWritten != 0 {
		t.Fatalf("a failed commit was checkpointed: %d files, %d rows", len(cp.Files), cp.RowsWritten)
	}
}

func TestRemoveUncommitted(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data", "region-0000"), 0o755)
	for _, n := range []string{"data/region-0000/part-00001.parquet", "data/region-0000/part-00002.parquet", "data/region-0000/" + atomicfile.TempPrefix + "part-00003.parquet", "manifest.json"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	removed, err := removeUncommitted(context.Background(), localStore(t, dir), &pipeline.Checkpoint{Files: []pipeline.FileInfo{{Path: "data/region-0000/part-00001.parquet"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != "data/region-0000/part-00002.parquet" {
		t.Fatalf("removed %v", removed)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "region-0000", atomicfile.TempPrefix+"part-00003.parquet")); err == nil {
		t.Fatal("a temporary file was left")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "region-0000/part-00001.parquet")); err != nil {
		t.Fatal("a checkpointed file was removed")
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal("a file outside the region folders was removed")
	}
}

// Rows the sink cannot hold are rejects, not failures, and the counts still add up.
func TestSinkRejectsAreCounted(t *testing.T) {
	src := &seqSource{streams: 2, rows: 1000, batch: 64}
	sink := &memSink{rejectEvery: 10}
	cfg := testConfig(t, src, sink, copyTransform{})
	r, _ := newRunner(t, cfg)
	res, err := r.Run(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsIn != 2000 || res.RowsRejected != 200 || res.RowsWritten != 1800 || len(sink.committed) != 1800 {
		t.Fatalf("in=%d written=%d rejected=%d committed=%d", res.RowsIn, res.RowsWritten, res.RowsRejected, len(sink.committed))
	}
	for _, l := range readRejects(t, cfg.OutDir) {
		if l.Stage != "sink" || l.Seq%10 != 1 {
			t.Fatalf("wrong reject %+v", l)
		}
	}
}

// A source that fails part-way keeps what it read: committed and checkpointed, so a resume
// (once the fault is gone) redoes only the rest.
func TestSourceFailureCheckpointsWhatWasRead(t *testing.T) {
	src := &seqSource{streams: 3, rows: 500, batch: 50, failStream: 2}
	sink := &memSink{}
	cfg := testConfig(t, src, sink, copyTransform{})
	r, _ := newRunner(t, cfg)
	if _, err := r.Run(context.Background(), nil, nil); err == nil {
		t.Fatal("a failing source must fail the run")
	}
	cp, err := resumeFrom(t, cfg)
	if err != nil || cp == nil {
		t.Fatalf("no checkpoint after a source failure: %v", err)
	}
	if len(sink.committed) != 1000 || !cp.Streams["s0"].Done || !cp.Streams["s1"].Done {
		t.Fatalf("committed %d rows, streams %v", len(sink.committed), cp.Streams)
	}
	src.failStream = 0
	r2, _ := newRunner(t, cfg)
	if _, err := r2.Run(context.Background(), nil, cp); err != nil {
		t.Fatal(err)
	}
	if len(sink.committed) != 1500 {
		t.Fatalf("after resume %d rows, want 1500", len(sink.committed))
	}
}

// A damaged input (a gzip file with a bad checksum) may already have delivered wrong values:
// unlike a source that merely stopped, nothing read from it is committed.
func TestDamagedInputCommitsNothing(t *testing.T) {
	src := &seqSource{streams: 3, rows: 500, batch: 50, failStream: 2, failErr: fmt.Errorf("file x.csv.gz: %w", pipeline.ErrDamagedInput)}
	sink := &memSink{}
	cfg := testConfig(t, src, sink, copyTransform{})
	r, _ := newRunner(t, cfg)
	res, err := r.Run(context.Background(), nil, nil)
	if !errors.Is(err, pipeline.ErrDamagedInput) {
		t.Fatalf("err = %v", err)
	}
	cp, _ := ReadCheckpoint(context.Background(), localStore(t, cfg.OutDir))
	if len(sink.committed) != 0 || cp == nil || cp.RowsWritten != 0 || res.RowsWritten != 0 {
		t.Fatalf("committed %d rows from a damaged input (checkpoint %+v, result %d)", len(sink.committed), cp, res.RowsWritten)
	}
}

// replaySource is a seqSource whose rejected records can be written back as they were read.
type replaySource struct{ seqSource }

func (*replaySource) ReplayFile() (pipeline.ReplayFile, bool) {
	return pipeline.ReplayFile{Ext: "txt", Header: "header\n"}, true
}

// Rejected rows are also written in the input's own format for a replay after a fix; like
// rejects.jsonl, the replay file holds each rejected row once across a crash at each crash point
// and the resume.
func TestReplayFileExactlyOnceAcrossResumes(t *testing.T) {
	bad := map[int64]bool{}
	var want []string
	for si := 0; si < 3; si++ {
		for j := 7; j < 3000; j += 101 {
			bad[int64(si*1_000_000+j)] = true
			want = append(want, fmt.Sprintf("garbage %d/%d", si, j))
		}
	}
	for _, point := range crashPoints(50) {
		killAt := point.name
		src := &replaySource{seqSource{streams: 3, rows: 3000, batch: 50, bad: bad, rawIDs: true, pauseAfter: point.pauseAfter}}
		cfg := testConfig(t, src, &memSink{}, copyTransform{})
		cfg.CheckpointEvery = time.Millisecond
		ctx, kill := context.WithCancel(context.Background())
		var hit *atomic.Bool
		cfg.Store, hit = withCrash(newBucket(t, cfg.OutDir).Store, point, kill)
		r, _ := newRunner(t, cfg)
		_, err := r.Run(ctx, nil, nil)
		kill()
		if err == nil || !hit.Load() {
			t.Fatalf("%s: the run was not killed there: err %v", killAt, err)
		}
		cp, err := resumeFrom(t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		src.pauseAfter, cfg.Store = 0, nil
		r2, _ := newRunner(t, cfg)
		if _, err := r2.Run(context.Background(), nil, cp); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(cfg.OutDir, ReplayPrefix+"txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if lines[0] != "header" {
			t.Fatalf("killed %s: the replay file starts with %q", killAt, lines[0])
		}
		got := append([]string(nil), lines[1:]...)
		sort.Strings(got)
		w := append([]string(nil), want...)
		sort.Strings(w)
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Fatalf("killed %s: replay file has %d rows, want %d once each", killAt, len(got), len(w))
		}
		if st, _ := os.Stat(filepath.Join(cfg.OutDir, ReplayPrefix+"txt")); st.Mode().Perm() != 0o600 {
			t.Fatalf("replay file mode %v", st.Mode().Perm())
		}
	}
}

// localStore is the folder dir as a store.
func localStore(t testing.TB, dir string) store.Store {
	st, err := store.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// resumeFrom opens cfg's output for --resume, as migrate does, and returns its checkpoint.
func resumeFrom(t *testing.T, cfg testCfg) (*pipeline.Checkpoint, error) {
	t.Helper()
	o, err := Open(context.Background(), cfg.store(t), Spec{Dir: cfg.OutDir, Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: cfg.Source, Resume: true}, nil)
	if err != nil {
		return nil, err
	}
	o.Close()
	return o.Checkpoint, nil
}

// A run with a second table (runner.Config.Also) fills both from one read: each table's
// transform rejects its own rows into its own rejects file, each checkpoint counts its own table,
// and every table accounts for every row read.
func TestRunFillsSeveralTablesFromOneRead(t *testing.T) {
	src := &seqSource{streams: 3, rows: 1000, batch: 64}
	sink1, sink2 := &memSink{}, &memSink{}
	cfg := testConfig(t, src, sink1, copyTransform{rejectEvery: 100})
	dir2 := t.TempDir()
	sink2.dir = dir2
	o2 := &Output{Store: localStore(t, dir2), log: zap.NewNop()}
	j2, err := o2.Journal(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	cfg.Also = []runner.Table{{NewTransformer: func() runner.Transformer { return copyTransform{rejectEvery: 250} },
		Target: cfg.Target, Plan: cfg.Plan, Sink: sink2, Journal: j2}}
	r, err := newRunner(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	res := r.Results()
	// 3000 rows; per stream 10 rejects (0, 100, ..., 900) in the first table, 4 (0, 250, 500, 750)
	// in the second
	for i, want := range []struct{ written, rejected int64 }{{2970, 30}, {2988, 12}} {
		if res[i].RowsIn != 3000 || res[i].RowsWritten != want.written || res[i].RowsRejected != want.rejected {
			t.Errorf("table %d: in=%d written=%d rejected=%d, want 3000, %d, %d", i+1, res[i].RowsIn, res[i].RowsWritten, res[i].RowsRejected, want.written, want.rejected)
		}
	}
	if len(sink1.committed) != 2970 || len(sink2.committed) != 2988 {
		t.Errorf("committed %d and %d rows, want 2970 and 2988", len(sink1.committed), len(sink2.committed))
	}
	if n1, n2 := len(readRejects(t, cfg.OutDir)), len(readRejects(t, dir2)); n1 != 30 || n2 != 12 {
		t.Errorf("rejects files hold %d and %d lines, want 30 and 12", n1, n2)
	}
	for i, dir := range []string{cfg.OutDir, dir2} {
		cp, err := resumeFrom(t, testCfg{Config: runner.Config{Source: src}, OutDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if !cp.Complete || cp.RowsIn != 3000 || cp.RowsWritten != res[i].RowsWritten || len(cp.Streams) != 3 {
			t.Errorf("table %d's checkpoint: complete %v, in %d, written %d, %d streams", i+1, cp.Complete, cp.RowsIn, cp.RowsWritten, len(cp.Streams))
		}
	}
}
