package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/source/gen"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

func config(t *testing.T, dir, mapping string, rows int64) migrate.Config {
	t.Helper()
	m, err := transform.Load(filepath.Join("..", "mappings", mapping))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := gen.New(gen.Config{Name: "orders", Rows: rows}, prog.Source(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return migrate.Config{Out: dir, Store: st, Program: prog, Source: src, Format: parquet.New(), Regions: 2,
		Options: migrate.Options{Workers: 1, Logger: zap.NewNop()}, Logger: zap.NewNop(), Version: "test",
		Plan: func(ctx context.Context) (pipeline.RegionPlan, error) {
			return prog.PlanRegions(transform.RegionRequest{Count: 2})
		}}
}

func noWatch(*pipeline.Counters, func() int64, int64) (func(), error) { return func() {}, nil }

// A migration opens its output, plans, runs every row into region files and finishes with a
// manifest listing them; a resume of it finds the run complete and finished; another mapping
// into the same output is refused as a resume of another job, not run.
func TestMigrationOpenPlanRunFinish(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config(t, dir, "orders.yaml", 5000)
	m, err := migrate.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete() {
		t.Fatal("a new output is complete")
	}
	plan, err := m.Plan(ctx)
	if err != nil || plan.Count() != 2 {
		t.Fatalf("plan %d regions: %v", plan.Count(), err)
	}
	res, runErr, err := m.Run(ctx, nil, noWatch)
	if err != nil || runErr != nil || res.RowsIn != 5000 || res.RowsWritten+res.RowsRejected != 5000 {
		t.Fatalf("run: %+v, %v, %v", res, runErr, err)
	}
	fin, err := m.Finish(ctx, res, time.Time{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if fin.Manifest.RowsWritten != res.RowsWritten || fin.Manifest.Files == 0 || fin.Next.RowsWritten != res.RowsWritten {
		t.Fatalf("manifest: %d rows, %d files", fin.Manifest.RowsWritten, fin.Manifest.Files)
	}
	m.Close()

	cfg = config(t, dir, "orders.yaml", 5000)
	cfg.Resume = true
	again, err := migrate.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if finished, err := again.Finished(ctx); !again.Complete() || !finished || err != nil {
		t.Fatalf("resume of a finished run: complete %v, finished %v, %v", again.Complete(), finished, err)
	}
	again.Close()

	other := config(t, dir, "orders.yaml", 5000)
	other.Resume, other.Format = true, csv.New()
	_, err = migrate.Open(ctx, other)
	var refused *migrate.Refused
	if !errors.As(err, &refused) || !errors.Is(err, output.ErrRefusedResume) {
		t.Fatalf("resume in another format: %v, want it refused", err)
	}
}

// unloadable is a data file format Lindorm's bulkload job has no fileType for.
type unloadable struct{ files.Format }

func (unloadable) Name() string { return "orc" }

// A migration ends by writing the bulkload job, so a format the job cannot read is refused when
// the output opens, before any row is read, and leaves no output behind.
func TestMigrationRefusesAFormatTheBulkloadCannotRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cfg := config(t, dir, "orders.yaml", 10)
	cfg.Format = unloadable{parquet.New()}
	m, err := migrate.Open(context.Background(), cfg)
	if err == nil {
		m.Close()
		t.Fatal("a format the bulkload job cannot read was accepted")
	}
	if !strings.Contains(err.Error(), `unknown bulkload file type "orc"`) {
		t.Fatalf("refused with %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused run left %s: %v", dir, err)
	}
}

// A quantile plan places fewer regions than --regions asks when the sample holds fewer distinct
// first-key values. Before, the same command was then refused: a --resume of the run ("--regions:
// 3 then, 8 now"), and every shard after the first in a shared output ("--regions: 3 in shard
// 0/2, 8 here").
func TestFewerRegionsThanAskedResumeAndShareTheOutput(t *testing.T) {
	ctx := context.Background()
	fewer := func(cfg *migrate.Config, shard pipeline.Shard) {
		cfg.Regions, cfg.Shard, cfg.SharedOut = 8, shard, !shard.Whole()
		prog := cfg.Program
		cfg.Plan = func(context.Context) (pipeline.RegionPlan, error) {
			return prog.PlanRegions(transform.RegionRequest{Count: 3}) // what a quantile plan for 8 found room for
		}
	}
	run := func(t *testing.T, cfg migrate.Config) {
		t.Helper()
		m, err := migrate.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Complete() {
			return
		}
		if _, err := m.Plan(ctx); err != nil {
			t.Fatal(err)
		}
		res, runErr, err := m.Run(ctx, nil, noWatch)
		if err != nil || runErr != nil {
			t.Fatalf("run: %v, %v", runErr, err)
		}
		if _, err := m.Finish(ctx, res, time.Time{}, ""); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("resume", func(t *testing.T) {
		dir := t.TempDir()
		cfg := config(t, dir, "orders.yaml", 1000)
		fewer(&cfg, pipeline.Shard{})
		run(t, cfg)
		cfg = config(t, dir, "orders.yaml", 1000)
		fewer(&cfg, pipeline.Shard{})
		cfg.Resume = true
		run(t, cfg)
	})
	t.Run("shards", func(t *testing.T) {
		dir := t.TempDir()
		for i := range 2 {
			cfg := config(t, dir, "orders.yaml", 1000)
			fewer(&cfg, pipeline.Shard{Index: i, Count: 2})
			run(t, cfg)
		}
	})
}

// A shard plans the regions of the whole input, as every other shard does: a plan sized by
// regions.size counts the whole input's bytes. Before, each shard counted its own, so the shards
// placed about 1/N of the regions a whole run places (each N times regions.size) and, when their
// shares differed, other counts than one another, refusing all but the first in one output.
func TestShardsPlanTheRegionsOfTheWholeInput(t *testing.T) {
	ctx := context.Background()
	text, err := os.ReadFile(filepath.Join("..", "mappings", "logs_latest.yaml"))
	if err != nil || !strings.Contains(string(text), "size: 8GiB") {
		t.Fatalf("logs_latest.yaml sizes its regions otherwise now (%v)", err)
	}
	path := filepath.Join(t.TempDir(), "logs_latest.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(text), "size: 8GiB", "size: 1MiB", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := transform.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := transform.Compile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(sh pipeline.Shard) pipeline.RegionPlan {
		src, err := gen.New(gen.Config{Name: "logs", Rows: 200000, Shard: sh}, prog.Source(), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := migrate.PlanRegions(ctx, prog, src, 0, 2000)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := plan(pipeline.Shard{})
	if want.Count() < 8 {
		t.Fatalf("the whole input plans %d regions: the test wants several", want.Count())
	}
	for i := range 3 {
		sh := pipeline.Shard{Index: i, Count: 3}
		if got := plan(sh); !reflect.DeepEqual(got, want) {
			t.Fatalf("shard %s plans %d regions (%s), the whole input %d", sh, got.Count(), got.Strategy, want.Count())
		}
	}
}

// A shard that starts beside shards already there takes their region plan when its own differs in
// its splits only: a live source (a Cassandra table written meanwhile) sampled hours later gives
// other quantile splits, and before, every shard started after the first was then refused.
func TestShardTakesThePlanOfTheShardsThere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var plans []pipeline.RegionPlan
	for i := range 2 {
		cfg := config(t, dir, "orders.yaml", 1000)
		cfg.Shard, cfg.SharedOut, cfg.Regions = pipeline.Shard{Index: i, Count: 2}, true, 0
		prog := cfg.Program
		cfg.Plan = func(context.Context) (pipeline.RegionPlan, error) {
			p, err := prog.PlanRegions(transform.RegionRequest{Count: 4})
			p.Strategy = "quantile" // another sample of a live table: other splits
			p.Splits[0] = pipeline.Value{Kind: pipeline.KindText, Str: fmt.Sprintf("1%d00", i)}
			return p, err
		}
		m, err := migrate.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := m.Plan(ctx)
		if err != nil {
			m.Close()
			t.Fatalf("shard %d: %v", i, err)
		}
		res, runErr, err := m.Run(ctx, nil, noWatch)
		if err != nil || runErr != nil {
			t.Fatalf("run: %v, %v", runErr, err)
		}
		if _, err := m.Finish(ctx, res, time.Time{}, ""); err != nil {
			t.Fatal(err)
		}
		m.Close()
		plans = append(plans, plan)
	}
	if !reflect.DeepEqual(plans[0], plans[1]) {
		t.Fatalf("the shards planned %v and %v", plans[0], plans[1])
	}
}

// The settings a run's checkpoint keeps for its job and files (--sort, --max-file-size, the load
// job's names) are read whole: one this rekey does not know, which a newer rekey recorded, is
// refused as another version's, naming it. Before, it was dropped without a word and the resume
// wrote the rest of the rows, and the job, as if the run had begun without it.
func TestResumeRefusesJobSettingsOfAnotherVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config(t, dir, "orders.yaml", 1000)
	m, err := migrate.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, runErr, err := m.Run(ctx, nil, noWatch); err != nil || runErr != nil {
		t.Fatalf("run: %v, %v", runErr, err)
	}
	m.Close()
	path := filepath.Join(dir, output.CheckpointFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]json.RawMessage
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatal(err)
	}
	delete(cp, "digest") // as written by a rekey that seals none; a newer one's seal matches its bytes
	cp["job"] = json.RawMessage(strings.Replace(string(cp["job"]), "{", `{"compression":"lz4",`, 1))
	if data, err = json.MarshalIndent(cp, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = config(t, dir, "orders.yaml", 1000)
	cfg.Resume = true
	m, err = migrate.Open(ctx, cfg)
	if err == nil {
		m.Close()
		t.Fatal("resume accepted job settings it does not know")
	}
	var refused *migrate.Refused
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), `"compression"`) || !strings.Contains(err.Error(), "another rekey version") {
		t.Fatalf("error %v does not refuse the setting by name as another rekey version's", err)
	}
}
