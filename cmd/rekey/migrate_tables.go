package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// One read, several tables: `rekey migrate -m a.yaml -m b.yaml --out DIR` reads the source once
// and fills one output per mapping, DIR/<table>/, each with its own plan, files, rejects,
// checkpoints and final files; the summary checks that every table accounts for every row read.

// tableRun is one mapping of a run that fills several tables.
type tableRun struct {
	flags migrateFlags // the run's flags with this mapping and its output
	prog  *transform.Program
	m     *migrate.Migration
	plan  pipeline.RegionPlan
}

// runMigrateTables runs a migration of several mappings from one read of the source.
func runMigrateTables(cmd *cobra.Command, inv *invocation, f *migrateFlags, logger *zap.Logger, limit runner.RejectLimit, shard pipeline.Shard) error {
	if err := f.refuseForTables(shard); err != nil {
		return usageError(err)
	}
	tables, err := f.loadTables(inv, logger, shard)
	if err != nil {
		return err
	}
	for _, t := range tables[1:] {
		if t.prog.SourceTable() != tables[0].prog.SourceTable() {
			return usageError(fmt.Errorf("the mappings read one source once, and state different source.table (%q, %q): a read of a topic of several tables gives the events of one; "+
				"migrate each table with its own run", tables[0].prog.SourceTable(), t.prog.SourceTable()))
		}
	}
	src, err := inv.openSource(cmd.Context(), f.source, tables[0].prog, logger)
	if err != nil {
		return sourceOpenExit(err)
	}
	defer closeSource(src)
	if err := refuseSourceInOut(src, f.source, f.out); err != nil {
		return err
	}
	if err := refuseOutputAsFolder(cmd.Context(), inv, f.out); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	// every table is configured (and a new one planned) before any output is locked, which
	// creates it and its lock file: a refused run leaves none behind
	cfgs := make([]*migrate.Config, len(tables))
	for i, t := range tables {
		if cfgs[i], err = t.config(ctx, inv, src, shard, limit, logger); err != nil {
			return err
		}
	}
	// the outputs that exist are opened first: one refused (holding files, a resume of another
	// job) is refused before any new output is locked, which creates it and its lock file
	var order []int
	for _, exists := range []bool{true, false} {
		for i := range tables {
			if output.LockLeavesFile(cfgs[i].Store) != exists {
				order = append(order, i)
			}
		}
	}
	ms := make([]*migrate.Migration, len(tables))
	for _, i := range order {
		t := tables[i]
		if ms[i], err = migrate.Open(ctx, *cfgs[i]); err != nil {
			if hf := (*output.HoldsFilesError)(nil); errors.As(err, &hf) {
				return usageError(fmt.Errorf("--out %s already holds files (a previous run?): several --mapping cannot --resume: "+
					"pass --overwrite to replace the tables' outputs (rekey's files only), or choose a new --out directory", hf.Dir))
			}
			return refusedExit(err)
		}
		defer ms[i].Close()
		t.m = ms[i]
		if t.plan, err = t.m.Plan(ctx); err != nil {
			return refusedExit(err)
		}
	}
	cfgMemory, _ := parseSizeFlag("--memory", f.memory) // checked by each table's filesConfig
	setMemoryBudgetGC(inv.getenv, cfgMemory, migrateGCPercent)
	heapOnHugePages(cfgMemory)
	var results []pipeline.Result
	_, runErr, err := inv.runMigration(ctx, cancel, f, src, "\nrekey: stopping: finishing and committing the rows already read (Ctrl-C again to abort at once)",
		func(ctx context.Context, stop <-chan struct{}, _ migrate.Watch) (pipeline.Result, error, error) {
			var runErr, err error
			results, runErr, err = migrate.RunTogether(ctx, ms, stop, f.tablesWatch(src, len(ms)))
			return pipeline.Result{}, runErr, err
		})
	if err != nil {
		return refusedExit(err)
	}
	return tablesOutcome(ctx, cmd.OutOrStdout(), src, tables, results, runErr)
}

// refuseOutputAsFolder refuses an --out that is itself a migration's output (its checkpoint or
// manifest there): each table's output, a folder inside --out, would be made inside it.
func refuseOutputAsFolder(ctx context.Context, inv *invocation, out string) error {
	st, err := inv.openStore(ctx, out)
	if err != nil {
		return err
	}
	for _, name := range []string{output.CheckpointFile, output.ManifestFile} {
		if _, err := st.Stat(ctx, name); err == nil {
			return usageError(fmt.Errorf("--out %s holds a migration's output of its own (%s): several --mapping make one output per table inside --out (--out/<table>/), "+
				"which would be inside that one: choose another --out, new or holding only the tables' outputs", sourceuri.Redact(out), name))
		} else if !store.IsNotExist(err) {
			return runFailed(fmt.Errorf("--out %s: %w\nonce --out can be read, run the same command again", sourceuri.Redact(out), err))
		}
	}
	return nil
}

// tablesWatch shows the progress of a run filling n tables: the rows read and the bytes of every
// table. The rows written and rejected are each table's own (its summary), so the line shows
// none rather than the first table's as the run's.
func (f *migrateFlags) tablesWatch(src pipeline.Source, n int) migrate.Watch {
	return func(c *pipeline.Counters, bytes func() int64, before int64) (func(), error) {
		bar, err := f.progress.show(progressFigures{what: fmt.Sprintf("migrating %d tables", n), counters: c, bytes: bytes,
			total: estimatedRows(src), before: before, rowsOnly: true})
		if err != nil {
			return nil, usageError(err)
		}
		return bar.finish, nil
	}
}

// refuseForTables refuses what a run of several mappings does not do.
func (f *migrateFlags) refuseForTables(shard pipeline.Shard) error {
	switch {
	case sqlsink.IsURI(f.out):
		return errors.New("several --mapping fill one output of files each under --out DIR/<table>; into SQL tables, run one migrate per mapping")
	case !shard.Whole() || f.sharedOut:
		return errors.New("several --mapping read the whole source once: --shard and --shared-out apply to one mapping only")
	case f.resume:
		return errors.New("several --mapping cannot --resume: the tables are checkpointed together but each output resumes alone; run the same command with --overwrite to start over")
	case f.statsJSON != "":
		return errors.New("--stats-json writes the figures of a run into one table: with several --mapping, each table's counts are in its manifest.json, " +
			"and the run's time, rows/s and peak memory in the summary it prints; drop --stats-json")
	}
	return nil
}

// loadTables loads every mapping: each names its own table, and all read the source the same
// way (the same source columns), since the source is read once.
func (f *migrateFlags) loadTables(inv *invocation, logger *zap.Logger, shard pipeline.Shard) ([]*tableRun, error) {
	var tables []*tableRun
	seen := map[string]string{}
	var read string      // the table the source reads, for a source that reads its own schema
	var problems []error // the mappings' own problems, all reported at once
	for _, path := range f.mappings {
		prog, err := inv.loadProgramFor(path, f.source, f.workers, f.regions, logger)
		if me := (*transform.MappingError)(nil); errors.As(err, &me) {
			problems = append(problems, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(problems) > 0 {
			continue
		}
		if other, dup := seen[prog.Table()]; dup {
			return nil, usageError(fmt.Errorf("--mapping %s and %s both fill table %s: each mapping's output is --out/<table>, so each needs its own table", other, path, prog.Table()))
		}
		seen[prog.Table()] = path
		// a source that reads its own schema reads the table the URI names, else the mapping's
		// source.name: the one read gives the rows of one table
		if s := inv.opened[f.source]; s != nil {
			if len(tables) == 0 {
				read = s.SchemaOf()
			} else if s.SchemaOf() != read {
				return nil, usageError(fmt.Errorf("--mapping %s reads %s and %s reads %s (their source.name, as --source names no table): one read of the source gives the rows of one table; "+
					"migrate each source table with its own run", tables[0].flags.mapping, read, path, s.SchemaOf()))
			}
		}
		if len(tables) > 0 {
			if err := sameSource(tables[0].flags.mapping, tables[0].prog.Source(), path, prog.Source()); err != nil {
				return nil, usageError(err)
			}
			if first := tables[0]; prog.WriteTime() != first.prog.WriteTime() {
				with, without := first.flags.mapping, path
				if prog.WriteTime() {
					with, without = path, first.flags.mapping
				}
				return nil, usageError(fmt.Errorf("--mapping %s has target.write_time and %s has not: the one read of the source reads the cells' write times for every mapping or for none; "+
					"migrate the mappings with target.write_time and those without in separate runs", with, without))
			}
		}
		t := &tableRun{flags: *f, prog: prog}
		t.flags.mapping, t.flags.mappings, t.flags.out = path, nil, store.Child(f.out, prog.Table())
		if err := refuseKeyOnly(path, prog); err != nil {
			return nil, err
		}
		if err := refuseWriteTimeInFiles(path, prog, f.timeSlice, shard); err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	if len(problems) > 0 {
		return nil, usageError(errors.Join(problems...))
	}
	return tables, nil
}

// sameSource refuses two mappings that read the source differently: the source is read once,
// with the first mapping's columns.
func sameSource(firstPath string, first pipeline.SourceSchema, path string, s pipeline.SourceSchema) error {
	if len(first) != len(s) {
		return fmt.Errorf("--mapping %s declares %d source columns and %s %d: one read of the source needs the same source.columns in every mapping", firstPath, len(first), path, len(s))
	}
	for i := range first {
		a, b := first[i], s[i]
		if a.Name != b.Name || pipeline.NormalizeSourceType(a.Type) != pipeline.NormalizeSourceType(b.Type) {
			return fmt.Errorf("--mapping %s: source column %d is %s %s, and %s in %s: one read of the source needs the same source.columns in every mapping", path, i+1, b.Name, b.Type, a.Name+" "+a.Type, firstPath)
		}
	}
	return nil
}

// config is the table's migration of its own, its output opened (not locked): a new output of
// files in a folder is planned already.
func (t *tableRun) config(ctx context.Context, inv *invocation, src pipeline.Source, shard pipeline.Shard, limit runner.RejectLimit, logger *zap.Logger) (*migrate.Config, error) {
	f := &t.flags
	cfg, err := f.filesConfig(inv, shard, limit, logger.With(zap.String("table", t.prog.Table())))
	if err != nil {
		return nil, err
	}
	if err := refuseFormat(f.mapping, cfg.Format, t.prog); err != nil {
		return nil, err
	}
	cfg.Program, cfg.Source = t.prog, src
	cfg.Plan = func(ctx context.Context) (pipeline.RegionPlan, error) {
		plan, _, err := planRegions(ctx, t.prog, src, f.regions)
		return plan, err
	}
	if cfg.Store, err = inv.openStore(ctx, f.out); err != nil {
		return nil, err
	}
	if output.LockLeavesFile(cfg.Store) {
		plan, err := cfg.Plan(ctx)
		if err != nil {
			return nil, refusedExit(err)
		}
		cfg.Plan = func(context.Context) (pipeline.RegionPlan, error) { return plan, nil }
	}
	return cfg, nil
}

// tablesOutcome prints how a run of several tables ended, finishes each table of a complete run
// and checks that every table accounts for every row read.
func tablesOutcome(ctx context.Context, w io.Writer, src pipeline.Source, tables []*tableRun, results []pipeline.Result, runErr error) error {
	if runErr != nil {
		title := "Migration failed (what was committed before the failure)"
		how, stopped := stoppedBy(runErr)
		if stopped {
			title = "Migration " + how + " (what is committed so far)"
		}
		for i, t := range tables {
			fmt.Fprintf(w, "Table %s (%s)\n", t.prog.Table(), t.flags.mapping)
			printSummary(w, title, results[i], filesOut(t.flags.out, t.m, t.plan))
		}
		// the run starts over: from stdin, which cannot be read again, with the input saved
		again := "run the same command with --overwrite to start over"
		if _, stdin := src.(*file.Stdin); stdin {
			again = "stdin cannot be read again: save the input to a file and migrate it with --overwrite (or into a new --out)"
		}
		if stopped {
			return interrupted(fmt.Errorf("%s: several --mapping cannot --resume: %s", how, again))
		}
		next := "once the cause is fixed, " + again
		if errors.Is(runErr, runner.ErrTooManyRejects) {
			next = "after fixing the mapping or the input, run the same command with --overwrite to start over (several --mapping cannot --resume); " +
				"to keep these rows rejected, start over with --overwrite and a higher --max-rejects"
		}
		return runFailed(fmt.Errorf("migration failed: %w\nno manifest.json was written; %s", runErr, next))
	}
	// a table whose final files cannot be written does not keep the others from theirs
	var failed []string
	for i, t := range tables {
		fmt.Fprintf(w, "Table %s (%s)\n", t.prog.Table(), t.flags.mapping)
		if err := finishRun(ctx, w, t.m, &t.flags, t.plan, results[i]); err != nil {
			failed = append(failed, fmt.Sprintf("table %s: %v; once the cause is fixed, write them with the same command given only --mapping %s, with --out %s and --resume "+
				"(its source was read to its end: that reads nothing more)", t.prog.Table(), err, t.flags.mapping, t.flags.out))
		}
		fmt.Fprintln(w)
	}
	err := printOneRead(w, tables, results)
	if len(failed) > 0 {
		if err != nil {
			failed = append(failed, err.Error())
		}
		return runFailed(fmt.Errorf("migration failed: %s", strings.Join(failed, "\n")))
	}
	if err != nil {
		return runFailed(err)
	}
	return rejectedTablesExit(tables, results)
}

// rejectedTablesExit is the exit of a run into several tables that completed: 0, or 1 when some
// table rejected rows.
func rejectedTablesExit(tables []*tableRun, results []pipeline.Result) error {
	var rejected []string
	for i, t := range tables {
		if results[i].RowsRejected > 0 {
			rejected = append(rejected, fmt.Sprintf("%s %d of %d rows (see %s)", t.prog.Table(), results[i].RowsRejected, results[i].RowsIn,
				output.RejectsLocation(t.m.Output().Store)))
		}
	}
	if len(rejected) == 0 {
		return nil
	}
	return completedWithRejects(fmt.Errorf("completed, but some rows were rejected: %s, with each row's position and reason", strings.Join(rejected, "; ")))
}

// printOneRead prints each table's counts from the one read and checks them: every table holds
// every row read once, written or rejected (or skipped by the source's filter), and all read
// the same rows.
func printOneRead(w io.Writer, tables []*tableRun, results []pipeline.Result) error {
	fmt.Fprintf(w, "One read, %d tables\n", len(tables))
	var bad []string
	rows := [][2]string{{"rows read", fmt.Sprintf("%d", results[0].RowsIn)}}
	for i, t := range tables {
		r := results[i]
		line := fmt.Sprintf("%d written + %d rejected", r.RowsWritten, r.RowsRejected)
		if r.RowsSkipped > 0 {
			line += fmt.Sprintf(" + %d skipped", r.RowsSkipped)
		}
		sum := r.RowsWritten + r.RowsRejected + r.RowsSkipped
		switch {
		case sum != r.RowsIn:
			bad = append(bad, fmt.Sprintf("table %s: %d written, rejected and skipped of %d rows read", t.prog.Table(), sum, r.RowsIn))
			line += fmt.Sprintf(" = %d, NOT the %d rows read", sum, r.RowsIn)
		case r.RowsIn != results[0].RowsIn:
			bad = append(bad, fmt.Sprintf("table %s read %d rows, table %s %d", t.prog.Table(), r.RowsIn, tables[0].prog.Table(), results[0].RowsIn))
			line += fmt.Sprintf(" = %d rows read, NOT the %d of the first table", r.RowsIn, results[0].RowsIn)
		default:
			line += fmt.Sprintf(" = %d rows read: ok", r.RowsIn)
		}
		rows = append(rows, [2]string{"table " + t.prog.Table(), line})
	}
	table(w, rows)
	if len(bad) > 0 {
		return fmt.Errorf("the tables do not account for every row read once: %s; the outputs are written, but do not load them: report this as a bug", strings.Join(bad, "; "))
	}
	return nil
}
