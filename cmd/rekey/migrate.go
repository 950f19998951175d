package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/transform"
)

type migrateFlags struct {
	mapping     string
	source      string
	out         string
	format      string
	regions     int
	maxFileSize string
	memory      string
	workers     int
	maxRejects  string
	sort        bool
	resume      bool
	checkpoint  time.Duration
	progress    string
	statsJSON   string
}

func newMigrateCmd(g *globalFlags) *cobra.Command {
	f := &migrateFlags{}
	cmd := &cobra.Command{
		Use:   "migrate -m MAPPING --source URI --out DIR",
		Short: "One-time migration: read a source, rewrite keys, write region-split bulk-load files",
		Long: `migrate reads every row of the source, rewrites its primary key as the mapping says, routes it to
its pre-split region and writes bulk-load files (Parquet or CSV), one folder per region:

  DIR/region-0000/part-00000.parquet ...   data, no file spans two regions
  DIR/manifest.json                        regions, files, row counts (rows_in = rows_written + rows_rejected)
  DIR/ddl.sql                              CREATE TABLE with PRIMARY KEY and SPLITKEYS
  DIR/bulkload.json                        the Lindorm (LTS) bulkload job config for these files
  DIR/rejects.jsonl                        one line per rejected row: position, code, field, message, raw row
  DIR/checkpoint.json                      progress; --resume continues an interrupted run from it

Rows that cannot be read or rewritten go to rejects.jsonl and the run goes on, unless
--max-rejects is exceeded. Ctrl-C stops reading, commits what was read and exits non-zero;
run the same command with --resume to finish.

` + sourceHelp,
		Example: `  rekey migrate -m mappings/orders.yaml --source 'gen:orders?rows=1000000' --out out/orders
  rekey migrate -m mappings/orders.yaml --source file:orders.csv --out out/orders --regions 64 --max-rejects 1%
  rekey migrate -m mappings/logs.yaml --source file:logs.jsonl.gz --out out/logs --format csv --sort`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMigrate(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.mapping, "mapping", "m", "", "mapping file (YAML) describing source columns and target key")
	fl.StringVar(&f.source, "source", "", "where rows come from: file:PATH or gen:NAME?rows=N (see below)")
	fl.StringVar(&f.out, "out", "", "output directory (must be new or empty unless --resume)")
	fl.StringVar(&f.format, "format", "parquet", "data file format: parquet (zstd) or csv")
	fl.IntVar(&f.regions, "regions", 0, "number of pre-split regions (overrides the mapping's regions:)")
	fl.StringVar(&f.maxFileSize, "max-file-size", "256MiB", "roll a region's data file at this size")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget of the whole process; a quarter of it buffers the rows of all open regions")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "transform workers")
	fl.StringVar(&f.maxRejects, "max-rejects", "", "abort when more rows than this are rejected: a count (1000) or a percentage (0.5%); default: never")
	fl.BoolVar(&f.sort, "sort", false, "order the rows in each file by the full target key")
	fl.BoolVar(&f.resume, "resume", false, "continue the interrupted run in --out from its checkpoint")
	fl.DurationVar(&f.checkpoint, "checkpoint-interval", time.Minute, "how often to commit files and save a checkpoint (each one closes the open files)")
	fl.StringVar(&f.progress, "progress", "auto", "progress bar: auto (on a terminal), always, never")
	fl.StringVar(&f.statsJSON, "stats-json", "", "also write the run's figures (rows/s, peak memory) to this JSON file")
	addCassandraFlags(fl)
	addFileFlags(fl)
	return cmd
}

func parseRejectLimit(s string) (pipeline.RejectLimit, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pipeline.RejectLimit{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 100 {
			return pipeline.RejectLimit{}, fmt.Errorf("--max-rejects %q: want a count (1000) or a percentage between 0 and 100 (0.5%%)", s)
		}
		return pipeline.RejectLimit{Percent: v}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return pipeline.RejectLimit{}, fmt.Errorf("--max-rejects %q: want a count (1000) or a percentage (0.5%%)", s)
	}
	if v == 0 {
		return pipeline.RejectLimit{Count: -1}, nil
	}
	return pipeline.RejectLimit{Count: v}, nil
}

// checkOutDir refuses to mix two runs in one directory.
func checkOutDir(dir string, resume bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if len(entries) == 0 || resume {
		return nil
	}
	return fmt.Errorf("--out %s already holds files (a previous run?): pass --resume to finish an interrupted run there, or choose a new --out directory", dir)
}

func fileFormat(name string) (files.Format, error) {
	switch name {
	case "parquet":
		return parquet.New(), nil
	case "csv":
		return csv.New(), nil
	}
	return nil, fmt.Errorf("--format %q: want parquet or csv", name)
}

func runMigrate(cmd *cobra.Command, g *globalFlags, f *migrateFlags) error {
	logger, err := g.logger()
	if err != nil {
		return exitWith(2, err)
	}
	defer logger.Sync()
	if f.out == "" {
		return exitWith(2, errors.New("--out is required: the directory for the bulk-load files"))
	}
	limit, err := parseRejectLimit(f.maxRejects)
	if err != nil {
		return exitWith(2, err)
	}
	format, err := fileFormat(f.format)
	if err != nil {
		return exitWith(2, err)
	}
	maxFile, err := parseSizeFlag("--max-file-size", f.maxFileSize)
	if err != nil {
		return exitWith(2, err)
	}
	memory, err := parseSizeFlag("--memory", f.memory)
	if err != nil {
		return exitWith(2, err)
	}
	prog, err := loadProgramFor(f.mapping, f.source, f.workers, f.regions, logger)
	if err != nil {
		return err
	}
	if err := checkOutDir(f.out, f.resume); err != nil {
		return exitWith(2, err)
	}
	src, err := openSource(f.source, prog.Source(), logger)
	if err != nil {
		return exitWith(2, err)
	}
	defer closeSource(src)

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var resume *pipeline.Checkpoint
	if f.resume {
		if resume, err = pipeline.PrepareResume(f.out, prog.Fingerprint(), logger); err != nil {
			return exitWith(2, err)
		}
		if resume == nil {
			if entries, _ := os.ReadDir(f.out); len(entries) > 0 {
				return exitWith(2, fmt.Errorf("--resume: %s has no %s to resume from; choose a new --out directory", f.out, pipeline.CheckpointFile))
			}
		} else if resume.Complete {
			fmt.Fprintf(cmd.OutOrStdout(), "%s already holds a complete run (%d rows written); nothing to resume\n", f.out, resume.RowsWritten)
			return nil
		}
	}
	var plan pipeline.RegionPlan
	if resume != nil {
		plan = resume.Plan
	} else if plan, _, err = planRegions(ctx, prog, src, f.regions); err != nil {
		return err
	}
	setMemoryBudget(memory)
	sink, err := files.New(files.Config{
		Dir: f.out, Schema: prog.Target(), Plan: plan, Format: format,
		MaxFileSize: maxFile, Memory: memory / 4, Sort: f.sort,
	}, logger.Named("sink.files"))
	if err != nil {
		return exitWith(2, err)
	}
	runner, err := pipeline.NewRunner(pipeline.Config{
		Source:          src,
		NewTransformer:  func() pipeline.Transformer { return prog.NewEvaluator() },
		Target:          prog.Target(),
		Plan:            plan,
		Sink:            sink,
		OutDir:          f.out,
		Fingerprint:     prog.Fingerprint(),
		Workers:         f.workers,
		RejectLimit:     limit,
		CheckpointEvery: f.checkpoint,
		RejectValues:    recordValues(prog.Source()),
		Logger:          logger.Named("pipeline"),
	})
	if err != nil {
		return err
	}
	logger.Info("migration starting", zap.String("mapping", prog.Name()), zap.String("table", prog.Table()),
		zap.Int("regions", plan.Count()), zap.String("strategy", plan.Strategy), zap.String("out", f.out))

	stop := make(chan struct{})
	defer onInterrupt("\nrekey: stopping: finishing and committing the rows already read (Ctrl-C again to abort at once)",
		func() { close(stop) }, cancel)()

	prog2 := startProgress(f.progress, "migrating", src, &runner.Counters, func() int64 { return sink.Stats().Bytes })
	res, runErr := runner.Run(ctx, stop, resume)
	prog2.finish()

	if runErr != nil && !errors.Is(runErr, pipeline.ErrInterrupted) {
		printSummary(cmd.OutOrStdout(), res, plan, f.out)
		return fmt.Errorf("migration failed: %w\nthe files committed so far are in %s (no manifest.json was written)", runErr, f.out)
	}
	if errors.Is(runErr, pipeline.ErrInterrupted) {
		printSummary(cmd.OutOrStdout(), res, plan, f.out)
		return exitWith(130, fmt.Errorf("interrupted: %d rows committed to %s; run the same command with --resume to finish", res.RowsWritten, f.out))
	}
	regionSize := prog.RegionSize()
	m, err := buildManifest(prog, plan, format.Name(), res, regionSize)
	if err != nil {
		return err
	}
	if err := writeTableFiles(f.out, prog, plan, format.Name(), m); err != nil {
		return err
	}
	printSummary(cmd.OutOrStdout(), res, plan, f.out)
	printOversize(cmd.OutOrStdout(), m)
	return writeStats(f.statsJSON, res)
}

// recordValues renders a rejected record's decoded values for rejects.jsonl when it has no raw text.
func recordValues(schema pipeline.SourceSchema) func(*pipeline.Record) map[string]string {
	return func(r *pipeline.Record) map[string]string {
		m := make(map[string]string, len(schema))
		for i, c := range schema {
			if i < len(r.Values) && !r.Values[i].IsNull() {
				m[c.Name] = r.Values[i].String()
			}
		}
		return m
	}
}

// writeTableFiles writes ddl.sql, bulkload.json and manifest.json next to the data, atomically.
func writeTableFiles(out string, prog *transform.Program, plan pipeline.RegionPlan, format string, m *lindorm.Manifest) error {
	ddl := lindorm.DDL(prog.Target(), plan, prog.Options())
	if err := pipeline.WriteFileAtomic(filepath.Join(out, "ddl.sql"), []byte(ddl+"\n")); err != nil {
		return err
	}
	job, err := lindorm.BulkloadConfig(prog.Target(), format, out)
	if err != nil {
		return fmt.Errorf("bulkload config: %w", err)
	}
	if err := pipeline.WriteFileAtomic(filepath.Join(out, "bulkload.json"), job); err != nil {
		return err
	}
	return lindorm.WriteManifest(out, m)
}
