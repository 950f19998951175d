package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/output/outputtest"
	"github.com/rekey/rekey/store"
)

// A SIGKILL at any instant, photographed: snapOut wraps a local --out so that before and after
// every step a run commits there (a data file, the checkpoint, a final file, a removal) the
// folder is copied as it is, with no other step of the run in flight through the store: the
// folder a SIGKILL at that instant would leave (what the run buffered in memory, rejects lines
// included, is not in it, nor is anything it does later). Each copy is then resumed, and must
// end as an uninterrupted run does.
type snapOut struct {
	*store.Local
	s *snapshots
}

// snapshots are the copies one run's steps left, in step order.
type snapshots struct {
	mu    sync.RWMutex // a copy holds it; a step through the store holds it for reading
	root  string       // where the copies go: root/NNNN
	from  string       // the folder copied (the --out of the run)
	t     *testing.T
	steps []string // what each copy is taken at: "before commit data/...", "after put checkpoint.json"
}

func (s *snapshots) wrap(st store.Store) store.Store {
	l, ok := st.(*store.Local)
	if !ok {
		panic("snapshots: a local --out only, not " + st.Location(""))
	}
	s.from = l.Path()
	return &snapOut{Local: l, s: s}
}

// take copies the folder as it is now, labelled step.
func (s *snapshots) take(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := filepath.Join(s.root, fmt.Sprintf("%04d", len(s.steps)))
	if err := copyFolder(s.from, to); err != nil {
		s.t.Errorf("copy %s at %q: %v", s.from, step, err)
	}
	s.steps = append(s.steps, step)
}

// copyFolder copies the regular files and folders of from to to.
func copyFolder(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a folder pruned meanwhile by a run not going through the store
			}
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		} else if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		return os.WriteFile(filepath.Join(to, rel), data, info.Mode().Perm())
	})
}

// step runs op between a copy before and a copy after it, unless it is not a step (a read).
func (s *snapshots) step(what string, op func() error) error {
	s.take("before " + what)
	s.mu.RLock()
	err := op()
	s.mu.RUnlock()
	if err == nil {
		s.take("after " + what)
	}
	return err
}

func (o *snapOut) Put(ctx context.Context, name string, data []byte) error {
	return o.s.step("put "+name, func() error { return o.Local.Put(ctx, name, data) })
}

func (o *snapOut) Remove(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return o.Local.Remove(ctx)
	}
	return o.s.step(fmt.Sprintf("remove %s (%d)", names[0], len(names)), func() error { return o.Local.Remove(ctx, names...) })
}

func (o *snapOut) Sweep(ctx context.Context, prefix string) error {
	o.s.mu.RLock()
	defer o.s.mu.RUnlock()
	return o.Local.Sweep(ctx, prefix)
}

func (o *snapOut) Create(ctx context.Context, name string) (store.Writer, error) {
	o.s.mu.RLock()
	w, err := o.Local.Create(ctx, name)
	o.s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &snapWriter{Writer: w, s: o.s, name: name}, nil
}

type snapWriter struct {
	store.Writer
	s    *snapshots
	name string
}

func (w *snapWriter) Write(p []byte) (int, error) {
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	return w.Writer.Write(p)
}

func (w *snapWriter) Commit(ctx context.Context) (int64, error) {
	var n int64
	err := w.s.step("commit "+w.name, func() error {
		var err error
		n, err = w.Writer.Commit(ctx)
		return err
	})
	return n, err
}

func (w *snapWriter) Abort() error {
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	return w.Writer.Abort()
}

// finished is what a finished output holds, for comparing two runs: its rows, the manifest's
// figures, its rejects' lines (sorted), and what else is there besides the data files its
// manifest lists (a temporary file, a data file no manifest lists).
type finished struct {
	rows                      []string
	rowsIn, written, rejected int64
	rejects                   []string
	stray                     []string
}

func (f finished) String() string {
	return fmt.Sprintf("%d rows, manifest: in %d written %d rejected %d; %d rejects lines; stray %v",
		len(f.rows), f.rowsIn, f.written, f.rejected, len(f.rejects), f.stray)
}

// readFinished reads the finished output out; rejects are in each of rejectsIn (relative
// folders of out) as rejects.jsonl, cut to the checkpoint's length there.
func readFinished(t *testing.T, out string, rejectsIn ...string) finished {
	t.Helper()
	rows, m := outputRows(t, out)
	f := finished{rows: rows, rowsIn: m.RowsIn, written: m.RowsWritten, rejected: m.RowsRejected}
	for _, in := range rejectsIn {
		dir := filepath.Join(out, filepath.FromSlash(in))
		cp, err := outputtest.Checkpoint(dir)
		if err != nil || cp == nil || !cp.Complete {
			t.Fatalf("%s: checkpoint %+v, %v: want a complete one", dir, cp, err)
		}
		data, err := os.ReadFile(filepath.Join(dir, output.RejectsFile))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if int64(len(data)) != cp.RejectsBytes {
			f.stray = append(f.stray, fmt.Sprintf("%s/%s: %d bytes, its checkpoint counts %d", in, output.RejectsFile, len(data), cp.RejectsBytes))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line != "" {
				f.rejects = append(f.rejects, line)
			}
		}
	}
	sort.Strings(f.rejects)
	listed := map[string]bool{}
	for _, r := range m.Regions {
		for _, fe := range r.Files {
			listed[fe.Path] = true
		}
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(d.Name(), store.TempPrefix):
			f.stray = append(f.stray, rel)
		case strings.HasPrefix(rel, output.DataDir+"/") && !listed[rel]:
			f.stray = append(f.stray, rel)
		}
		return nil
	})
	return f
}

// killCSV writes rows orders into files CSV files of a new folder, every 97th row with an amount
// that does not decode (a reject), and returns the folder.
func killCSV(t *testing.T, dir string, rows, files int) string {
	t.Helper()
	folder := filepath.Join(dir, "orders")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for f := range files {
		var sb strings.Builder
		sb.WriteString("userid,orderid,channel,ts,status,location,amount\n")
		for i := f; i < rows; i += files {
			amount := fmt.Sprintf("%d.25", i%100)
			if i%97 == 5 {
				amount = "not-a-number"
			}
			fmt.Fprintf(&sb, "u%d,%d,taobao,1700000000000,PAID,Hangzhou-%d,%s\n", i, i, i%977, amount)
		}
		writeFile(t, folder, fmt.Sprintf("part-%02d.csv", f), sb.String())
	}
	return folder + "/"
}

// killedEverywhere runs args (a migrate into a local --out, without --out) with a copy of the
// output taken at every step, then resumes the copies (those of the first steps and the last, and
// a spread of those between) with the commands resume gives (given the
// copy's --out; the first resumes the run, the others finish it) and compares what each holds
// then (read by done, given the copy) with what the uninterrupted run left, once finished by the
// same commands but the first. before, when set, runs first on the run's --out.
func killedEverywhere(t *testing.T, args []string, before func(out string), resume func(out string) [][]string, done func(out string) finished) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if before != nil {
		before(out)
	}
	snaps := &snapshots{root: filepath.Join(dir, "killed"), t: t}
	run := append(append([]string{}, args...), "--out", out)
	code, stdout, stderr := cliRun{wrapOut: snaps.wrap}.run(t, run...)
	if code != 0 && code != exitRejects {
		t.Fatalf("the run: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, cmd := range resume(out)[1:] { // the steps after the run itself
		if code, stdout, stderr := runCLI(t, cmd...); code != 0 && code != exitRejects {
			t.Fatalf("rekey %s: exit %d\n%s%s", strings.Join(cmd, " "), code, stdout, stderr)
		}
	}
	want := done(out)
	if len(want.stray) > 0 || want.rejected == 0 || want.written == 0 {
		t.Fatalf("the uninterrupted run: %v", want)
	}
	if len(snaps.steps) < 10 {
		t.Fatalf("only %d steps: %v", len(snaps.steps), snaps.steps)
	}
	// the first steps (the first checkpoints) and the last (the final commit and files), and an
	// even spread of those between (each resume is a whole run)
	pick := map[int]bool{}
	for i := range snaps.steps {
		if i < 6 || i >= len(snaps.steps)-10 || i%max(1, len(snaps.steps)/16) == 0 {
			pick[i] = true
		}
	}
	t.Logf("%d steps, %d of them killed and resumed", len(snaps.steps), len(pick))
	for i, step := range snaps.steps {
		killed := filepath.Join(snaps.root, fmt.Sprintf("%04d", i))
		if !pick[i] {
			continue
		}
		for _, cmd := range resume(killed) {
			if code, stdout, stderr := runCLI(t, cmd...); code != 0 && code != exitRejects {
				t.Fatalf("killed %s, then rekey %s: exit %d\n%s%s", step, strings.Join(cmd, " "), code, stdout, stderr)
			}
		}
		got := done(killed)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("killed %s (step %d of %d) and resumed: %v, an uninterrupted run %v", step, i+1, len(snaps.steps), got, want)
		}
		os.RemoveAll(killed)
	}
}

// A migration into a folder killed at the steps it commits there (before and after a data file's
// commit, a checkpoint, each final file), with --sort and without, and resumed: the same rows
// once each, the same figures, each reject once, nothing else in the folder.
func TestMigrateKilledAtEveryStepResumes(t *testing.T) {
	for _, sorted := range []bool{false, true} {
		t.Run(fmt.Sprintf("sort=%v", sorted), func(t *testing.T) {
			dir := t.TempDir()
			src := killCSV(t, dir, 4000, 8)
			args := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--regions", "4",
				"--progress", "never", "--checkpoint-interval", "1ns", "--max-file-size", "8KiB", "--max-rejects", "-1"}
			if sorted {
				args = append(args, "--sort")
			}
			killedEverywhere(t, args, nil, func(out string) [][]string {
				return [][]string{append(append([]string{}, args...), "--out", out, "--resume")}
			}, func(out string) finished { return readFinished(t, out, ".") })
		})
	}
}

// The shards of a migration into one shared output, shard 0 killed at the steps it commits
// there (shard 1 complete beside it) and resumed, then finished by merge --out: the same rows
// once each, the same figures, each reject once, nothing else in the output.
func TestSharedOutShardKilledAtEveryStepResumes(t *testing.T) {
	dir := t.TempDir()
	src := killCSV(t, dir, 4000, 8)
	base := []string{"migrate", "-m", "../../mappings/orders.yaml", "--source", "file:" + src, "--regions", "4",
		"--progress", "never", "--checkpoint-interval", "1ns", "--max-file-size", "8KiB", "--max-rejects", "-1", "--shared-out"}
	shard := func(i int, more ...string) []string {
		return append(append(append([]string{}, base...), "--shard", fmt.Sprintf("%d/2", i)), more...)
	}
	shardDirs := []string{output.ShardsDir + "/0000-of-0002", output.ShardsDir + "/0001-of-0002"}
	killedEverywhere(t, shard(0), func(out string) {
		if code, stdout, stderr := runCLI(t, shard(1, "--out", out)...); code != exitRejects {
			t.Fatalf("shard 1: exit %d\n%s%s", code, stdout, stderr)
		}
	}, func(out string) [][]string {
		return [][]string{shard(0, "--out", out, "--resume"), {"merge", "--out", out}}
	}, func(out string) finished { return readFinished(t, out, shardDirs...) })
}
