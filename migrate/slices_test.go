package migrate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

const timedMapping = `version: 1
source:
  name: timed
  columns:
    id: int
    a: text
target:
  table: timed
  primary_key: "[id]"
  write_time: true
regions:
  split_keys: [1000, 2000]
`

const (
	timedRows  = 3000
	timedBatch = 100
	hourMs     = int64(time.Hour / time.Millisecond)
)

// timedInput writes a JSON Lines file of timedRows rows whose cell a was written at a time
// spread over five hours (the times verify --repair writes there).
func timedInput(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range timedRows {
		fmt.Fprintf(&b, `{"id": %d, "a": "a%d", "%s": {"a": %d}}`+"\n", i, i, file.WriteTimesMember, base+int64(i*7919%timedRows)*(5*hourMs/timedRows))
	}
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pausing stalls its source after pauseAfter batches until the run's end, so that a checkpoint
// of exactly those batches comes before the source ends.
type pausing struct {
	pipeline.Source
	pauseAfter int
}

func (p *pausing) Run(ctx context.Context, resume map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	if p.pauseAfter == 0 {
		return p.Source.Run(ctx, resume, out)
	}
	in := make(chan pipeline.Batch)
	errc := make(chan error, 1)
	go func() { errc <- p.Source.Run(ctx, resume, in) }()
	n := 0
	for {
		select {
		case b := <-in:
			select {
			case out <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
			if n++; n == p.pauseAfter {
				<-ctx.Done()
				return ctx.Err()
			}
		case err := <-errc:
			return err
		}
	}
}

// killAt cancels a run at its checkpoint save that matches: before the save (the cut's files
// are committed, no checkpoint lists them) or after it.
type killAt struct {
	store.Store
	matches    func(cp *pipeline.Checkpoint) bool
	beforeSave bool
	kill       context.CancelFunc
	hit        atomic.Bool
}

type killAtLocal struct{ *killAt }

func (k killAtLocal) Path() string { return k.Store.(store.Dir).Path() }

func (k *killAt) Put(ctx context.Context, name string, data []byte) error {
	if name != output.CheckpointFile || k.hit.Load() {
		return k.Store.Put(ctx, name, data)
	}
	var cp pipeline.Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil || !k.matches(&cp) {
		return k.Store.Put(ctx, name, data)
	}
	k.hit.Store(true)
	if k.beforeSave {
		k.kill()
		return context.Canceled
	}
	err := k.Store.Put(ctx, name, data)
	k.kill()
	return err
}

// timedConfig is a migration of the timed input into dir, in slices of one hour; st, when not
// nil, replaces dir's store.
func timedConfig(t *testing.T, dir, input string, pauseAfter int, st store.Store) migrate.Config {
	t.Helper()
	m, err := transform.Decode([]byte(timedMapping), "timed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := file.Open(context.Background(), file.Spec{Path: input},
		file.Config{Schema: prog.Source(), BatchSize: timedBatch, CellWriteTimes: true}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		if st, err = store.Open(context.Background(), dir, func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
	}
	return migrate.Config{Out: dir, Store: st, Program: prog, Source: &pausing{Source: src, pauseAfter: pauseAfter}, Format: parquet.New(),
		TimeSlice: time.Hour, Resume: pauseAfter == 0,
		Options: migrate.Options{Workers: 2, CheckpointEvery: time.Millisecond, Logger: zap.NewNop()}, Logger: zap.NewNop(), Version: "test",
		Plan: func(ctx context.Context) (pipeline.RegionPlan, error) {
			return prog.PlanRegions(transform.RegionRequest{})
		}}
}

// runTimed runs cfg to its end and finishes it; it returns the run's outcome.
func runTimed(t *testing.T, cfg migrate.Config, ctx context.Context) (pipeline.Result, error) {
	t.Helper()
	m, err := migrate.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Plan(ctx); err != nil {
		t.Fatal(err)
	}
	res, runErr, err := m.Run(ctx, nil, noWatch)
	if err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		return res, runErr
	}
	if _, err := m.Finish(ctx, res, time.Time{}, ""); err != nil {
		t.Fatal(err)
	}
	return res, nil
}

// timedOutput is what a finished output of the timed input holds: each slice's rows (read back
// with the independent Parquet reader) and the jobs of bulkload.json, their file paths relative
// to the output.
func timedOutput(t *testing.T, dir string, schema pipeline.TargetSchema) (rows map[string][]string, jobs []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, output.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m output.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	files, err := sinktest.SliceFiles(dir, &m, schema)
	if err != nil {
		t.Fatal(err)
	}
	rows = map[string][]string{}
	total := 0
	for p, pfs := range files {
		for _, pf := range pfs {
			for _, v := range pf.Rows {
				rows[p] = append(rows[p], strings.Join(v, "|"))
				total++
			}
		}
	}
	for _, v := range rows {
		sort.Strings(v)
	}
	if total != timedRows || m.RowsWritten != timedRows {
		t.Fatalf("%d rows in the files, %d in the manifest, want %d", total, m.RowsWritten, timedRows)
	}
	data, err = os.ReadFile(filepath.Join(dir, output.BulkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	var list []lindorm.BulkloadJob
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, j := range list {
		jobs = append(jobs, fmt.Sprintf("%s@%d", strings.TrimPrefix(j.ReaderConfig.FilePath, filepath.ToSlash(dir)), *j.WriterConfig.Timestamp))
	}
	return rows, jobs
}

// A migration into slices killed at a checkpoint (before its save: the cut's files committed but
// listed nowhere; or after it), then resumed, ends with the output of an uninterrupted run: the
// same rows in the same slices, the same jobs with the same timestamps (each the newest write time
// of its slice, though the files of the slice were written by two runs).
func TestSlicedMigrationKilledThenResumed(t *testing.T) {
	dir := t.TempDir()
	input := timedInput(t, dir)
	whole := filepath.Join(dir, "whole")
	cfg := timedConfig(t, whole, input, 0, nil)
	cfg.Resume = false
	if _, err := runTimed(t, cfg, context.Background()); err != nil {
		t.Fatal(err)
	}
	schema := cfg.Program.Target()
	wantRows, wantJobs := timedOutput(t, whole, schema)
	if len(wantJobs) != 5 {
		t.Fatalf("an uninterrupted run: %d jobs, want one per hour: 5\n%v", len(wantJobs), wantJobs)
	}
	for _, beforeSave := range []bool{false, true} {
		t.Run(fmt.Sprintf("before the save %v", beforeSave), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("killed-%v", beforeSave))
			st, err := store.Open(context.Background(), out, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			ctx, kill := context.WithCancel(context.Background())
			defer kill()
			const pauseAfter = 12
			k := &killAt{Store: st, kill: kill, beforeSave: beforeSave,
				matches: func(cp *pipeline.Checkpoint) bool { return cp.RowsIn == pauseAfter*timedBatch }}
			cfg := timedConfig(t, out, input, pauseAfter, killAtLocal{k})
			cfg.Resume = false
			if _, err := runTimed(t, cfg, ctx); err == nil {
				t.Fatal("the killed run ended without an error")
			}
			if !k.hit.Load() {
				t.Fatal("the run was not killed at the checkpoint")
			}
			if _, err := runTimed(t, timedConfig(t, out, input, 0, nil), context.Background()); err != nil {
				t.Fatal(err)
			}
			rows, jobs := timedOutput(t, out, schema)
			if fmt.Sprint(rows) != fmt.Sprint(wantRows) {
				t.Errorf("rows per slice after the resume differ from an uninterrupted run's")
			}
			if fmt.Sprint(jobs) != fmt.Sprint(wantJobs) {
				t.Errorf("jobs after the resume\n%v\nan uninterrupted run's\n%v", jobs, wantJobs)
			}
		})
	}
}
