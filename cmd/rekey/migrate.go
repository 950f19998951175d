package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

type migrateFlags struct {
	mapping     string
	mappings    []string // --mapping as given: several fill several tables from one read
	source      string
	out         string
	format      string
	regions     int
	maxFileSize string
	memory      string
	workers     int
	maxRejects  string
	sort        bool
	timeSlice   time.Duration
	resume      bool
	overwrite   bool
	sharedOut   bool
	checkpoint  time.Duration
	progress    progressFlags
	statsJSON   string
	lts         ltsFlags
	sql         sqlFlags
	// catchUp: --source's kind reads the rows written since a time (source.Kind.CatchUp), so the
	// run prints its next catch-up; set from --source by common
	catchUp bool
}

// migrateHelp is migrate's --help text, before the sources' own.
var migrateHelp = `migrate reads every row of the source, rewrites its primary key as the mapping says, routes it to
its pre-split region and writes bulk-load files (Parquet or CSV), one folder per region:

  DIR/data/region-0000/part-00000.parquet ...  data, no file spans two regions; data/ holds
                                               nothing else: it is what the bulk load reads
  DIR/manifest.json                        regions, files, row counts (rows_in = rows_written + rows_rejected
                                           + rows_skipped, a catch-up's older rows); next_since for a catch-up
  DIR/ddl.sql                              CREATE TABLE with PRIMARY KEY and SPLITKEYS
  DIR/bulkload.json                        the Lindorm (LTS) bulkload job for these files (--lts-source,
                                           --lts-target, --namespace fill it); the run ends with the next steps
  DIR/rejects.jsonl                        one line per rejected row (none without rejects): position, code,
                                           field, message, raw row
  DIR/rejected-rows.csv                    file sources: the rejected rows as read (or .jsonl), to run again
                                           with --source file:DIR/rejected-rows.csv once the cause is fixed,
                                           into another --out (a source inside --out is refused)
  DIR/checkpoint.json                      progress; --resume continues an interrupted run from it

Rows that cannot be read or rewritten go to rejects.jsonl and the run goes on, unless
--max-rejects (default 1% of the rows read) is exceeded: then it stops reading and commits what
was read, which the summary, the error and rejects.jsonl count alike. Ctrl-C stops reading, commits what was
read and exits 130; run the same command with --resume to finish (a second Ctrl-C aborts at once, also
with 130: --resume then continues from the last checkpoint). --resume refuses (exit 2) to
continue another job: another mapping, --format, --regions or input, or committed files that are
damaged; --sort, --max-file-size and --time-slice, which shaped the files already written, are
kept from the first attempt when left out, and refused when given another value.

Into a bucket (--out s3://BUCKET/PREFIX or oss://BUCKET/PREFIX?region=cn-hangzhou), the same files
stream there as multipart uploads, visible only when complete; credentials come from the environment
only (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, OSS_ACCESS_KEY_ID/OSS_ACCESS_KEY_SECRET); add
?endpoint=http://HOST:PORT&path_style=true for an S3-compatible server. bulkload.json's filePath
is then relative to the bucket, as LTS's OSS data source reads it.

Into a SQL table (--out lindorm://... or mysql://...), rows are upserted through the MySQL protocol
in batches (at most 2,000 rows and 2 MB per statement) over --sql-conns connections; the table must
exist with the mapping's columns, types and primary key (checked before the first row). The
checkpoint and rejects.jsonl live in --state (default .rekey-state/<hash>); --resume replays from
the checkpoint (upserts are idempotent). Suits small and medium tables: for large ones, bulk-load
files (the default) load faster (see docs/sql.md).

Several mappings (-m a.yaml -m b.yaml ...; the same source.columns, a table each) fill several
tables from one read of the source, each into DIR/<table>/ with the layout above; the summary
checks that every table holds every row read once (written + rejected = read). Such a run cannot
--resume (start over with --overwrite) and writes files only (see docs/outputs.md).

` + sqlsink.URIHelp() + `

Exit codes:
  0    every row was written
  1    completed, but some rows were rejected (see DIR/rejects.jsonl)
  2    invalid use: flags, mapping, a refused --resume
  3    the run failed: source or sink error, damaged input, too many rejects
  130  interrupted (Ctrl-C, SIGTERM): --resume finishes

`

func newMigrateCmd(inv *invocation) *cobra.Command {
	f := &migrateFlags{}
	cmd := &cobra.Command{
		Use:   "migrate -m MAPPING --source URI --out DIR",
		Short: "One-time migration: read a source, rewrite keys, write region-split bulk-load files",
		Long:  migrateHelp + inv.sources.Help(),
		Example: `  rekey migrate -m mappings/orders.yaml --source 'gen:orders?rows=1000000' --out out/orders
  rekey migrate -m mappings/orders.yaml --source file:orders.csv --out out/orders --regions 64 --max-rejects 100
  rekey migrate -m mappings/logs.yaml --source 'gen:logs?rows=1000000' --out out/logs --format csv --sort`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMigrate(cmd, inv, f) },
	}
	f.register(inv, cmd.Flags())
	return cmd
}

// register defines migrate's flags.
func (f *migrateFlags) register(inv *invocation, fl *pflag.FlagSet) {
	fl.StringArrayVarP(&f.mappings, "mapping", "m", nil, "mapping file (YAML) describing source columns and target key; repeat it to fill several tables from one read of the source, each into --out/<table>")
	fl.StringVar(&f.source, "source", "", "where rows come from: file:PATH or gen:NAME?rows=N (see below)")
	fl.StringVar(&f.out, "out", "", "output: a directory (must be new or empty unless --resume), a bucket prefix s3://BUCKET/PREFIX or oss://BUCKET/PREFIX?region=R (credentials from AWS_*/OSS_* environment variables), or a SQL table: lindorm://USER@HOST:33060/DB, mysql://USER@HOST:PORT/DB")
	fl.StringVar(&f.format, "format", formats.Default(), formats.Help())
	fl.IntVar(&f.regions, "regions", 0, "number of pre-split regions (overrides the mapping's regions:)")
	fl.StringVar(&f.maxFileSize, "max-file-size", "256MiB", "roll a region's data file at this size")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget: the Go heap is kept near it (a soft limit at 80%, GOMEMLIMIT overrides) and a quarter of it buffers the rows of all open regions (a run expecting fewer rows, such as one shard of many, cuts each region's buffer at a quarter of its share and uses less); the resident size can pass it by what lives outside the heap (object-store uploads, the runtime)")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "transform workers")
	fl.StringVar(&f.maxRejects, "max-rejects", defaultMaxRejects, "abort (exit 3) when more rows than this are rejected: a count (0 stops at the first), a percentage of the rows read (judged from the 1,000th row on), or -1 for no limit")
	fl.BoolVar(&f.sort, "sort", false, "order the rows in each file by the full target key")
	fl.DurationVar(&f.timeSlice, "time-slice", 0, "with target.write_time: the width of the time slices the rows go to by their newest write time, each written to files of its own and loaded by its own bulkload job stamped with the slice's newest write time, at most the run's start (default 24h; at most 64 slices per run)")
	fl.BoolVar(&f.resume, "resume", false, "continue the interrupted run in --out from its checkpoint")
	fl.BoolVar(&f.overwrite, "overwrite", false, "replace a previous run's output in --out (only rekey's own files; refused when --out holds anything else); with --resume it does nothing, so that a command that had it can add --resume to finish an interrupted run")
	fl.BoolVar(&f.sharedOut, "shared-out", false, "with --shard i/N: --out is shared by all N shards; each writes its data files straight into --out's data/ (named s<i>-part-...) and keeps its checkpoint, rejects and lock in --out's shards/<i>-of-<N>/; rekey merge --out finishes them without copying data")
	fl.DurationVar(&f.checkpoint, "checkpoint-interval", time.Minute, "how often to commit files and save a checkpoint (each one closes the open files)")
	f.progress.register(inv, fl)
	fl.StringVar(&f.statsJSON, "stats-json", "", "also write the run's figures (rows/s, peak memory) to this JSON file")
	addLTSFlags(fl, &f.lts)
	f.sql.register(fl)
	inv.sources.AddFlags(fl, source.Use{Scan: true, Shards: true})
}

// defaultMaxRejects stops a run whose rejects show a systematic problem (a wrong type, a missing
// dictionary: most rows rejected) within its first thousand rows, while sporadic bad rows in a
// billion-row table (well under 1%) let it finish, with exit code 1 and every reject listed.
const defaultMaxRejects = "1%"

func parseRejectLimit(s string) (runner.RejectLimit, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 100 {
			return runner.RejectLimit{}, fmt.Errorf("--max-rejects %q: want a count (1000), a percentage between 0 and 100 (0.5%%) or -1 (no limit)", s)
		}
		return runner.RejectLimit{Percent: v}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < -1 {
		return runner.RejectLimit{}, fmt.Errorf("--max-rejects %q: want a count (1000), a percentage (0.5%%) or -1 (no limit)", s)
	}
	if v == -1 {
		return runner.RejectLimit{}, nil
	}
	return runner.RejectLimit{Count: &v}, nil
}

func fileFormat(name string) (files.Format, error) {
	f, ok := formats.Get(name)
	if !ok {
		return nil, fmt.Errorf("--format %q: want %s", name, formats.Names("or"))
	}
	return f, nil
}

func runMigrate(cmd *cobra.Command, inv *invocation, f *migrateFlags) error {
	logger, err := inv.logger()
	if err != nil {
		return usageError(err)
	}
	defer logger.Sync()
	limit, shard, err := f.common(inv)
	if err != nil {
		return err
	}
	if err := refuseOtherOutputFlags(cmd, f.out); err != nil {
		return err
	}
	if len(f.mappings) > 1 {
		return runMigrateTables(cmd, inv, f, logger, limit, shard)
	}
	if len(f.mappings) == 1 {
		f.mapping = f.mappings[0]
	}
	if sqlsink.IsURI(f.out) {
		return runMigrateSQL(cmd, inv, f, logger, limit)
	}
	cfg, err := f.filesMigration(inv, shard, limit, logger)
	if err != nil {
		return err
	}
	src, err := inv.openSource(cmd.Context(), f.source, cfg.Program, logger)
	if err != nil {
		return sourceOpenExit(err)
	}
	defer closeSource(src)
	if err := refuseSourceInOut(src, f.source, f.out); err != nil {
		return err
	}
	cfg.Source = src
	cfg.Plan = func(ctx context.Context) (pipeline.RegionPlan, error) {
		plan, _, err := planRegions(ctx, cfg.Program, src, f.regions)
		return plan, err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if cfg.Store, err = inv.openStore(ctx, f.out); err != nil {
		return err
	}
	// a new output is planned before its lock, which creates --out and its lock file: a refused
	// plan leaves none behind
	if output.LockLeavesFile(cfg.Store) {
		plan, err := cfg.Plan(ctx)
		if err != nil {
			return refusedExit(err)
		}
		cfg.Plan = func(context.Context) (pipeline.RegionPlan, error) { return plan, nil }
	}
	m, err := migrate.Open(ctx, *cfg)
	if err != nil {
		return refusedExit(err)
	}
	defer m.Close()
	if then, ok := m.ResumedFiles(); ok {
		fs, err := resumedFiles(cmd, f.out, then, m.Files(), logger)
		if err != nil {
			return err
		}
		m.SetFiles(fs)
	}
	if then, ok := m.ResumedJob(); ok {
		m.SetJob(f.lts.resumed(then, cfg.Job, changedFlags(cmd, ltsFlagNames), logger))
	}
	if m.Complete() {
		return finishComplete(ctx, cmd.OutOrStdout(), m, f, changedFlags(cmd, ltsFlagNames))
	}
	plan, err := m.Plan(ctx)
	if err != nil {
		return refusedExit(err)
	}
	setMemoryBudgetGC(inv.getenv, cfg.Memory, migrateGCPercent)
	heapOnHugePages(cfg.Memory)
	res, runErr, err := inv.runMigration(ctx, cancel, f, src, "\nrekey: stopping: finishing and committing the rows already read (Ctrl-C again to abort at once)", m.Run)
	if err != nil {
		return refusedExit(err)
	}
	return filesOutcome(ctx, cmd.OutOrStdout(), m, f, src, plan, res, runErr)
}

// common checks the flags of a migration into files and into a table alike: the reject limit
// and the shard.
func (f *migrateFlags) common(inv *invocation) (runner.RejectLimit, pipeline.Shard, error) {
	if f.out == "" {
		return runner.RejectLimit{}, pipeline.Shard{}, usageError(errors.New("--out is required: the directory for the bulk-load files"))
	}
	limit, err := parseRejectLimit(f.maxRejects)
	if err != nil {
		return limit, pipeline.Shard{}, usageError(err)
	}
	if err := checkOutFolder("--stats-json", f.statsJSON); err != nil {
		return limit, pipeline.Shard{}, err
	}
	if err := inv.sources.Refuse(f.source); err != nil {
		return limit, pipeline.Shard{}, usageError(err)
	}
	shard, err := inv.sources.Shard()
	if err != nil {
		return limit, shard, usageError(err)
	}
	inv.sourceShards = true // a shard is --shard's: the source refuses one its URI names otherwise
	if f.sharedOut && shard.Whole() {
		return limit, shard, usageError(errors.New("--shared-out needs --shard i/N: it is the output the N shards of one migration write together"))
	}
	f.catchUp = inv.sources.CatchesUp(f.source)
	return limit, shard, nil
}

// filesMigration is the migration into files the flags describe, with its mapping loaded and
// checked; the source and the store are opened after it.
func (f *migrateFlags) filesMigration(inv *invocation, shard pipeline.Shard, limit runner.RejectLimit, logger *zap.Logger) (*migrate.Config, error) {
	cfg, err := f.filesConfig(inv, shard, limit, logger)
	if err != nil {
		return nil, err
	}
	if cfg.Program, err = inv.loadProgramFor(f.mapping, f.source, f.workers, f.regions, logger); err != nil {
		return nil, err
	}
	if err := refuseKeyOnly(f.mapping, cfg.Program); err != nil {
		return nil, err
	}
	if err := refuseWriteTimeInFiles(f.mapping, cfg.Program, f.timeSlice, shard); err != nil {
		return nil, err
	}
	if err := refuseFormat(f.mapping, cfg.Format, cfg.Program); err != nil {
		return nil, err
	}
	return cfg, nil
}

// filesConfig is the migration into files the flags describe; the program, the source and the
// store are opened after it.
func (f *migrateFlags) filesConfig(inv *invocation, shard pipeline.Shard, limit runner.RejectLimit, logger *zap.Logger) (*migrate.Config, error) {
	format, err := fileFormat(f.format)
	if err != nil {
		return nil, usageError(err)
	}
	maxFile, err := parseSizeFlag("--max-file-size", f.maxFileSize)
	if err != nil {
		return nil, usageError(err)
	}
	memory, err := parseSize("--memory", f.memory)
	if err != nil {
		return nil, usageError(err)
	}
	inv.sourceMemory = memory
	job, err := f.lts.options()
	if err != nil {
		return nil, usageError(err)
	}
	next := lindorm.NextRun{Out: f.out, Mapping: f.mapping, Source: f.source}
	if !shard.Whole() {
		next.Shard = &shard
	}
	return &migrate.Config{Out: f.out, Format: format, Shard: shard, SharedOut: f.sharedOut, Regions: f.regions,
		Resume: f.resume, Overwrite: f.overwrite, MaxFileSize: maxFile, Memory: memory, Sort: f.sort, TimeSlice: f.timeSlice,
		Options: f.options(limit, logger), Job: job, Next: next, Version: version, Logger: logger}, nil
}

// options are the pipeline's options the flags give.
func (f *migrateFlags) options(limit runner.RejectLimit, logger *zap.Logger) migrate.Options {
	return migrate.Options{Workers: f.workers, CheckpointEvery: f.checkpoint, RejectLimit: limit, Logger: logger}
}

// resumedFiles settles the settings that shape the files of a resume of the run in out: its first
// attempt's (then), which a flag left out keeps (with a note when the flag's default would have
// been another), and a flag that gives another is refused: the rows already written are in files
// made the first way, and an output of both kinds is neither.
func resumedFiles(cmd *cobra.Command, out string, then, now migrate.FileSettings, log *zap.Logger) (migrate.FileSettings, error) {
	var differ, names []string
	setting := func(name string, was, is string) {
		if was == is {
			return
		}
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			differ, names = append(differ, fmt.Sprintf("--%s: %s then, %s now", name, was, is)), append(names, "--"+name)
			return
		}
		log.Warn("--resume keeps the first attempt's setting, which shaped the files already written", zap.String("flag", "--"+name), zap.String("then", was), zap.String("default", is))
	}
	setting("sort", strconv.FormatBool(then.Sort), strconv.FormatBool(now.Sort))
	setting("max-file-size", transform.FormatSize(then.MaxFileSize), transform.FormatSize(now.MaxFileSize))
	if then.TimeSlice > 0 && now.TimeSlice > 0 {
		setting("time-slice", then.TimeSlice.String(), now.TimeSlice.String())
	}
	if len(differ) > 0 {
		return now, usageError(fmt.Errorf("--resume of the run in %s: %s; the files already written were made with the first attempt's, and the rest must be made the same way: "+
			"leave %s out (the resume keeps the first attempt's), or start over with --overwrite", sourceuri.Redact(out), strings.Join(differ, "; "), strings.Join(names, " and ")))
	}
	return then, nil
}

// refusedExit gives an error of migrate its exit code: what the command line asked is refused
// (2), anything else as it is.
func refusedExit(err error) error {
	if r := (*migrate.Refused)(nil); errors.As(err, &r) {
		return usageError(r.Err)
	}
	return err
}

// filesOutcome prints how a run into files ended and finishes a complete one.
func filesOutcome(ctx context.Context, w io.Writer, m *migrate.Migration, f *migrateFlags, src pipeline.Source, plan pipeline.RegionPlan, res pipeline.Result, runErr error) error {
	st := m.Output().Store
	if how, stopped := stoppedBy(runErr); stopped {
		printSummary(w, "Migration "+how+" (what is committed so far)", res, filesOut(f.out, m, plan))
		return interrupted(withStats(f.statsJSON, res, fmt.Errorf("%s: %d rows committed to %s; %s", how, res.RowsWritten, f.out, resumeAfterInterrupt(src, " into a new --out"))))
	}
	if errors.Is(runErr, output.ErrLockLost) {
		return runFailed(fmt.Errorf("migration stopped: another rekey run took over %s (or may at any moment: this run's lock there is lost) and this run stopped without writing there: let the other run finish, or stop it and run the same command with --resume\n%w", f.out, runErr))
	}
	if runErr != nil {
		printSummary(w, "Migration failed (what was committed before the failure)", res, filesOut(f.out, m, plan))
		return runFailed(withStats(f.statsJSON, res, fmt.Errorf("migration failed: %w\nthe files committed so far are in %s (no manifest.json was written); %s", runErr, f.out,
			afterFailure(runErr, "once the cause is fixed, run the same command with --resume", "with --overwrite (it replaces this output) or into a new --out"))))
	}
	if err := finishRun(ctx, w, m, f, plan, res); err != nil {
		return runFailed(withStats(f.statsJSON, res, fmt.Errorf("migration failed: %w; once the cause is fixed, run the same command with --resume: it writes them", err)))
	}
	if err := writeStats(f.statsJSON, res); err != nil {
		return runFailed(err)
	}
	return rejectedExit(res, st)
}

// withStats writes --stats-json (path) for a run that ended with err after printing its summary
// of res, so that the file and the summary agree whether the run completed or not; err, with a
// failure to write the file added.
func withStats(path string, res pipeline.Result, err error) error {
	if serr := writeStats(path, res); serr != nil {
		return fmt.Errorf("%w\n(--stats-json not written: %v)", err, serr)
	}
	return err
}

// resumeAfterInterrupt is what to do after an interrupted run of src: resume it, or for stdin,
// which cannot be read again, migrate the input saved to a file (where: into what).
func resumeAfterInterrupt(src pipeline.Source, where string) string {
	if _, stdin := src.(*file.Stdin); stdin {
		return "stdin cannot be read again: save the input to a file and migrate it" + where
	}
	return "run the same command with --resume to finish"
}

// afterFailure says what to do after the run failed with runErr: resume, the usual next step, or,
// after too many rejected rows, what works. Their fix changes the mapping or the input, and a
// --resume refuses that as another job (a changed mapping changes the keys of the rows already
// written), so the run starts over (startOver: how); --resume with a higher --max-rejects keeps
// the rejected rows and goes on. A run in more time slices than it may open starts over too,
// with wider ones: a resume keeps the first attempt's width.
func afterFailure(runErr error, resume, startOver string) string {
	if tm := (*files.TooManySlicesError)(nil); errors.As(runErr, &tm) {
		return fmt.Sprintf("start over with wider slices, %s (--resume keeps the first attempt's --time-slice %s, and would fail the same way)", startOver, tm.Width)
	}
	if !errors.Is(runErr, runner.ErrTooManyRejects) {
		return resume
	}
	return "after fixing the mapping or the input, start over " + startOver + " (--resume refuses a changed mapping or input); " +
		"to keep these rows rejected and go on, run the same command with --resume and a higher --max-rejects"
}

// rejectedExit is the exit of a run that completed: 0, or 1 when some rows were rejected.
func rejectedExit(res pipeline.Result, st store.Store) error {
	if res.RowsRejected == 0 {
		return nil
	}
	return completedWithRejects(fmt.Errorf("completed, but %d of %d rows were rejected: see %s for each row's position and reason", res.RowsRejected, res.RowsIn, output.RejectsLocation(st)))
}

// finishRun writes the final files of a run whose source was read to its end, its summary and
// the next steps (create the table, submit the bulkload job, check the counts).
func finishRun(ctx context.Context, w io.Writer, m *migrate.Migration, f *migrateFlags, plan pipeline.RegionPlan, res pipeline.Result) error {
	summary := filesOut(f.out, m, plan)
	since := nextSince(f.catchUp, res)
	var catchup string
	if !since.IsZero() {
		summary.nextSince, catchup = since, withSince(f.source, since)
	}
	fin, err := m.Finish(ctx, res, since, catchup)
	if err != nil {
		// every row is committed: say what and where, as any failed run does
		printSummary(w, "Migration failed (every row committed; the final files not written)", res, summary)
		return fmt.Errorf("write the final files (ddl.sql, bulkload.json, manifest.json): %w\nthe files of every row read are committed in %s, without manifest.json", err, f.out)
	}
	printSummary(w, "Migration summary", res, summary)
	printOversize(w, fin.Manifest)
	fmt.Fprintln(w)
	fmt.Fprint(w, lindorm.NextSteps(fin.Jobs, fin.Next))
	return nil
}

// finishComplete handles --resume of a run whose checkpoint says the source was read to its
// end: if it was killed before writing manifest.json (written last), the final files are written
// from the checkpoint now; otherwise there is nothing left to do.
// A finished run writes nothing more: the bulkload job's flags given (jobFlags) would change
// nothing, so they are refused.
func finishComplete(ctx context.Context, w io.Writer, m *migrate.Migration, f *migrateFlags, jobFlags []string) error {
	cp := m.Output().Checkpoint
	plan, err := m.Plan(ctx)
	if err != nil {
		return refusedExit(err)
	}
	if finished, err := m.Finished(ctx); err != nil {
		return runFailed(err)
	} else if finished && len(jobFlags) > 0 {
		return usageError(fmt.Errorf("%s: the run in %s is complete and its %s was written when it finished; --resume writes nothing, "+
			"so %s would change nothing: leave it out, and edit %s to change the job", strings.Join(jobFlags, ", "), f.out, output.BulkloadFile,
			map[bool]string{true: "they", false: "it"}[len(jobFlags) > 1], output.BulkloadFile))
	} else if finished {
		fmt.Fprintf(w, "%s already holds a complete run (%d rows written); nothing to resume\n", f.out, cp.RowsWritten)
	} else if err := finishRun(ctx, w, m, f, plan, cp.Result()); err != nil {
		return runFailed(withStats(f.statsJSON, cp.Result(), fmt.Errorf("migration failed: %w; once the cause is fixed, run the same command with --resume again", err)))
	}
	// --stats-json holds the run's figures, as its checkpoint has them, whatever this attempt did
	if err := writeStats(f.statsJSON, cp.Result()); err != nil {
		return runFailed(err)
	}
	return rejectedExit(cp.Result(), m.Output().Store)
}

// openStore opens the output --out names: a local folder, or a bucket prefix (s3://, oss://) once
// its store is registered (registerStores). Credentials come from the environment only.
func (inv *invocation) openStore(ctx context.Context, out string) (store.Store, error) {
	st, err := store.Open(ctx, out, inv.getenv, store.PrivateNames(output.PrivateName))
	if store.IsUsage(err) {
		return nil, usageError(fmt.Errorf("--out %s: %w", sourceuri.Redact(out), err))
	} else if err != nil {
		// a store that does not answer, a folder that cannot be made: nothing was written yet
		return nil, runFailed(fmt.Errorf("--out %s: %w\nonce --out can be reached and written, run the same command again", sourceuri.Redact(out), err))
	}
	if err := output.CheckLoaderPath(st.Location("")); err != nil {
		return nil, usageError(fmt.Errorf("--out %s: %w", sourceuri.Redact(out), err))
	}
	if inv.wrapOut != nil {
		st = inv.wrapOut(st)
	}
	return st, nil
}

// runMigration runs a migration (run: a Migration's Run, or migrate.Execute into a table) with
// the migrate flags, showing progress; a first Ctrl-C stops it gracefully (the rows already read
// are finished; stopping says so), a second at once. runErr is the run's outcome; err says it
// could not start.
func (inv *invocation) runMigration(ctx context.Context, cancel context.CancelFunc, f *migrateFlags, src pipeline.Source, stopping string,
	run func(ctx context.Context, stop <-chan struct{}, watch migrate.Watch) (pipeline.Result, error, error)) (res pipeline.Result, runErr, err error) {
	stop := make(chan struct{})
	var aborted atomic.Bool
	defer inv.onInterrupt(f.progress.stderr, stopping, func() { close(stop) }, func() { aborted.Store(true); cancel() })()
	res, runErr, err = run(ctx, stop, func(c *pipeline.Counters, bytes func() int64, before int64) (func(), error) {
		bar, err := f.progress.start("migrating", src, c, bytes, before)
		if err != nil {
			return nil, usageError(err)
		}
		return bar.finish, nil
	})
	if runErr != nil && aborted.Load() {
		// the run's error is the cancellation's ("context canceled"): it did not fail
		runErr = fmt.Errorf("%w (%v)", errAborted, runErr)
	}
	return res, runErr, err
}

// errAborted is wrapped by the error of a run a second Ctrl-C (or SIGTERM) aborted: an
// interruption (exit 130) that --resume continues from its last checkpoint, not a failure.
var errAborted = errors.New("aborted by a second Ctrl-C")

// stoppedBy tells whether runErr ends a run that Ctrl-C stopped, and how: "interrupted" (what
// was read is committed) or "aborted" (what the last checkpoint holds is; the rows read after
// it are read again).
func stoppedBy(runErr error) (how string, stopped bool) {
	switch {
	case errors.Is(runErr, runner.ErrInterrupted):
		return "interrupted", true
	case errors.Is(runErr, errAborted):
		return "aborted", true
	}
	return "", false
}
