package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// sqlFlags are the flags of a SQL target (--out lindorm://... or mysql://...).
type sqlFlags struct {
	conns int
	state string
}

func (s *sqlFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&s.conns, "sql-conns", sqlsink.DefaultConns, "SQL targets: connections (and statements at once); rows are spread over them by key")
	fl.StringVar(&s.state, "state", "", "SQL targets: the local folder for the checkpoint and rejects (default .rekey-state/<hash of target and table>)")
}

// stateDir is where a run into a SQL table keeps its checkpoint and rejects: the table cannot
// hold them.
func (s *sqlFlags) stateDir(t *sqlsink.Target, table string) string {
	if s.state != "" {
		return s.state
	}
	return filepath.Join(".rekey-state", t.StateKey(table))
}

// openSQLTarget parses the URI and opens the writer, which checks the table first.
func (inv *invocation) openSQLTarget(ctx context.Context, uri string, prog *transform.Program, conns int, logger *zap.Logger, observe func(string, int, float64, error)) (*sqlsink.Writer, *sqlsink.Target, error) {
	t, err := sqlsink.ParseURI(uri, inv.getenv)
	if err != nil {
		return nil, nil, usageError(fmt.Errorf("--out %w", err))
	}
	if t.CellTimestamps {
		// the write times of a copy are the mapping's to carry (target.write_time): the
		// parameter alone would write the server's time, as without it
		return nil, nil, usageError(fmt.Errorf("--out %s: write_time applies to replicate (each event's Cassandra write time); a copy has none of its own: it carries the cells' write times when the mapping says target.write_time: true; drop the parameter for migrate", t.Redacted))
	}
	if prog.WriteTime() {
		if err := t.UseCellWriteTimes(); err != nil { // every upsert carries its cells' write time (_l_ts_)
			return nil, nil, usageError(err)
		}
	}
	if conns < 1 {
		return nil, nil, usageError(fmt.Errorf("--sql-conns %d: want at least 1", conns))
	}
	cfg := sqlsink.Config{Target: t, Schema: prog.Target(), Conns: conns, Logger: logger.Named("sink.sql")}
	w, err := sqlsink.Open(ctx, cfg)
	if errors.Is(err, sqlsink.ErrTableMismatch) {
		return nil, nil, usageError(err)
	} else if err != nil {
		return nil, nil, runFailed(err)
	}
	return w, t, nil
}

// runMigrateSQL is migrate into a SQL table: the same pipeline, with the table as the sink and
// the checkpoint and rejects in a local state folder. A resume replays from the checkpointed
// cursor: rows written after it are written again, harmlessly (upserts).
func runMigrateSQL(cmd *cobra.Command, inv *invocation, f *migrateFlags, logger *zap.Logger, limit runner.RejectLimit) error {
	if f.sharedOut {
		return usageError(errors.New("--shared-out applies to bulk-load files (a folder or a bucket prefix), not to a SQL table: every shard writes its rows into the table as it is"))
	}
	if f.timeSlice != 0 {
		return usageError(errors.New("--time-slice applies to bulk-load files (each time slice is one bulkload job), not to a SQL table: SQL writes carry each cell's own write time; drop it"))
	}
	memory, err := parseSize("--memory", f.memory)
	if err != nil {
		return usageError(err)
	}
	inv.sourceMemory = memory
	setMemoryBudgetGC(inv.getenv, memory, migrateGCPercent)
	heapOnHugePages(memory)
	prog, err := inv.loadProgramFor(f.mapping, f.source, f.workers, noRegionPlan, logger)
	if err != nil {
		return err
	}
	if err := refuseKeyOnly(f.mapping, prog); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	w, target, err := inv.openSQLTarget(ctx, f.out, prog, f.sql.conns, logger, nil)
	if err != nil {
		return err
	}
	defer w.Close()
	src, err := inv.openSource(ctx, f.source, prog, logger)
	if err != nil {
		return sourceOpenExit(err)
	}
	defer closeSource(src)
	state := f.sql.stateDir(target, w.Table())
	if err := refuseSourceIn(src, f.source, state, "the state folder "+state); err != nil {
		return err
	}
	format := "sql-" + target.Dialect.Name
	// the table as a resume must find it again: server, database and table (not the user or
	// the connection's options)
	table := fmt.Sprintf("%s://%s/%s table %s", target.Dialect.Name, target.Addr, target.Database, w.Table())
	out, err := f.openState(ctx, state, format, table, prog, src, logger)
	if errors.Is(err, output.ErrRefusedResume) {
		return usageError(fmt.Errorf("%w\n(the state folder of %s table %s is %s; --state chooses another)", err, target.Redacted, w.Table(), state))
	} else if err != nil {
		return err
	}
	defer out.Close()
	resume := out.Checkpoint
	dest := target.Redacted + " table " + w.Table()
	if resume != nil && resume.Complete {
		fmt.Fprintf(cmd.OutOrStdout(), "%s already holds a complete run into %s (%d rows written); nothing to resume\n", state, dest, resume.RowsWritten)
		if err := writeStats(f.statsJSON, resume.Result()); err != nil {
			return runFailed(err)
		}
		return rejectedExit(resume.Result(), out.Store)
	}
	plan := pipeline.RegionPlan{Type: prog.Target().Columns[0].Type, Strategy: "single"}
	logger.Info("migration into a SQL table starting", zap.String("mapping", prog.Name()), zap.String("out", target.Redacted),
		zap.String("table", w.Table()), zap.Int("conns", f.sql.conns), zap.String("state", state))
	into := migrate.Target{Sink: w, Output: out, Format: format, Plan: plan, Bytes: func() int64 { return w.Stats.Bytes.Load() }}
	f.progress.statements = w.Stats.Statements.Load // the progress line's, as the summary's: a table has no files
	res, runErr, err := inv.runMigration(ctx, cancel, f, src, "\nrekey: stopping: finishing the rows already read (Ctrl-C again to abort at once)",
		func(ctx context.Context, stop <-chan struct{}, watch migrate.Watch) (pipeline.Result, error, error) {
			return migrate.Execute(ctx, prog, src, into, f.options(limit, logger), stop, watch)
		})
	if err != nil {
		return err
	}
	return sqlOutcome(cmd.OutOrStdout(), f, src, w, sqlDest{dest, state, out.Store}, res, runErr)
}

// openState opens the state folder of a migration into table: its checkpoint and rejects.
func (f *migrateFlags) openState(ctx context.Context, state, format, table string, prog *transform.Program, src pipeline.Source, logger *zap.Logger) (*output.Output, error) {
	stateStore, err := output.OpenStateFolder(state)
	if err != nil {
		return nil, err
	}
	return output.Open(ctx, stateStore, output.Spec{
		Dir: state, Fingerprint: prog.Fingerprint(), Format: format, Source: src, Target: table,
		Resume: f.resume, Overwrite: f.overwrite,
	}, logger.Named("pipeline"))
}

// sqlDest is where a migration into a table wrote: the table (as messages name it) and the
// state folder holding its checkpoint and rejects (as given, and its store).
type sqlDest struct {
	table, state string
	store        store.Store
}

// sqlOutcome prints how a run into a table ended, and the next catch-up of a complete one.
func sqlOutcome(stdout io.Writer, f *migrateFlags, src pipeline.Source, w *sqlsink.Writer, d sqlDest, res pipeline.Result, runErr error) error {
	dest := d.table
	if how, stopped := stoppedBy(runErr); stopped {
		printSQLSummary(stdout, "Migration "+how+" (what is written so far)", res, w, src, d, time.Time{})
		return interrupted(withStats(f.statsJSON, res, fmt.Errorf("%s: %d rows written to %s; %s", how, res.RowsWritten, dest, resumeAfterInterrupt(src, ""))))
	}
	if runErr != nil {
		printSQLSummary(stdout, "Migration failed (what was checkpointed before the failure)", res, w, src, d, time.Time{})
		return runFailed(withStats(f.statsJSON, res, fmt.Errorf("migration failed: %w\n%s", runErr,
			afterFailure(runErr, "once the cause is fixed, run the same command with --resume: it continues from the last checkpoint (rows after it are written again, harmlessly)",
				"with --overwrite (a new checkpoint; the rows already written stay in the table, and those whose key the fix changes stay as extra rows)"))))
	}
	since := nextSince(f.catchUp, res)
	printSQLSummary(stdout, "Migration summary", res, w, src, d, since)
	if !since.IsZero() {
		// the same table and state folder: --overwrite starts a new checkpoint there, and the
		// rows already in the table stay (writes are upserts)
		out := []string{"--out", f.out, "--overwrite"}
		if f.sql.state != "" {
			out = append(out, "--state", f.sql.state)
		}
		fmt.Fprintf(stdout, "\nNext catch-up, the rows written since this run started (since=%s: its start less %s for clock skew;\n"+
			"deletes are not caught up):\n  %s\n", since.Format(time.RFC3339), catchupMargin, lindorm.CatchupCommand(f.mapping, withSince(f.source, since), out...))
	}
	if err := writeStats(f.statsJSON, res); err != nil {
		return runFailed(err)
	}
	return rejectedExit(res, d.store)
}

// printSQLSummary prints the summary of a run into a SQL table; nextSince (zero: none) is the
// since= of the next catch-up.
func printSQLSummary(w interface{ Write([]byte) (int, error) }, title string, res pipeline.Result, sw *sqlsink.Writer, src pipeline.Source, d sqlDest, nextSince time.Time) {
	out := summaryOut{label: "state", where: d.state, rejects: filepath.Join(d.state, output.RejectsFile), replay: output.ReplayLocation(d.store, src), nextSince: nextSince}
	if kw, ok := src.(*kafka.Window); ok {
		out.sourceTable = kw.Table // the rows skipped are other tables' events
	}
	out.cells = cellTimeStats(src, sw.CellTimestamps())
	out.more = [][2]string{{"target", d.table}, statementsRow(res.Resumed, &sw.Stats)}
	printSummary(w, title, res, out)
}

// statementsRow is the summary's count of the statements the table took: this attempt's, which
// a resumed run's label says, as its totals are the whole run's.
func statementsRow(resumed bool, st *sqlsink.Stats) [2]string {
	label := "statements"
	if resumed {
		label += " (this attempt)"
	}
	return [2]string{label, fmt.Sprintf("%d (%d retried after transient errors)", st.Statements.Load(), st.Retries.Load())}
}
