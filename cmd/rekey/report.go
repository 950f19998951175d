package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/atomicfile"
	"github.com/rekey/rekey/migrate"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
)

type reportFlags struct {
	mapping   string
	source    string
	sample    string
	regions   int
	nodes     int
	jsonOut   string
	htmlOut   string
	strict    bool
	workers   int
	tmp       string
	progress  progressFlags
	statsJSON string
	quiet     bool
	memory    string
	queries   []string
	writeMap  string
	order     string
	workload  string
}

func newReportCmd(inv *invocation) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report -m MAPPING --source URI [--sample N|P%] [--regions N] [--nodes N] [--query 'COL=, COL range']... [--write-mapping DIR] [--json FILE] [--html FILE] [--strict]",
		Short: "Dry run: will this key design hotspot Lindorm, lose rows, and how many regions to pre-split?",
		Long: `report reads the source (all of it, or a sample) through the mapping a migration would use, routes
every row to its pre-split region and writes no data files. It prints, worst findings first:

  totals        rows read, rows the mapping rejects (per code, with examples), target bytes
  key shape     key columns (1-3 recommended, at most 5), key length min/mean/p99/max, keys over 2 KB,
                JSON or long text inside the key
  uniqueness    target keys produced by more than one distinct source row: rows bulkload would
                silently overwrite (exact, via temp files), the columns the colliding rows differ
                in, and the smallest key change that tells them apart ("add seq to the key");
                identical duplicate rows separately
  first column  distinct values, top values, shared prefix, monotonicity in write order
  regions       rows and bytes per region, max/mean, coefficient of variation, empty regions
  hotspots      the rows in write order cut into windows: the busiest region's share of each
                window (a timestamp or auto-increment first column puts ~100% in one region)
  write order   the order the application creates rows in, not the order the report reads them
                (a token scan reads hash order): --write-order or source.write_order, Cassandra's
                WRITETIME(), Kafka's timestamps or offsets, else a time column of the row; with
                none, the order read, said by a write_order_unknown note
  advisor       the same analysis for the source key, a hash prefix, a reversed first column, a
                modulo bucket (integer or time first column), a salt, the key each declared
                query wants, and the mapping's key with long(c) for a text key column of
                integers or code(c, DICT) for one of few long values, with the rows each loses (counted exactly, as the uniqueness check
                does), ranked by the queries the table must serve: declare them in the mapping's
                queries: section or with --query ('device_id=, ts range': equality columns with
                =, the range column with range, newest_first for the latest rows first, which
                the advisor serves with the range column DESC). Designs that lose rows rank last; reads
                weigh more than write spread: a salt (every GET n lookups, updates and deletes
                a replication cannot apply in place) ranks below any design that spreads
                writes as well without one, unless the table is declared write-heavy
                (workload: write_heavy in the mapping, or --workload write_heavy); then one
                that turns a declared query into a scan of the whole table ranks below those
                that serve it.
                --write-mapping DIR writes each design as a mapping file (DIR/<id>.yaml)
  pre-split     regions to pre-split: for bulkload estimated data / 8 GiB, for API writes
                --nodes x 4, each with its SPLITKEYS

The plan analysed is --regions N, else the mapping's regions: section, else the recommendation;
when that is a single region, 16 regions are analysed (a single region takes every write).

Exit codes: 0 no errors; 2 errors (colliding keys, keys over 2 KB, too many key columns) or
invalid use; with --strict, 1 when there are warnings; 3 the report could not run (an unreadable
source, a file it could not write). --json writes every figure (schema: report/README.md);
--html a self-contained page with charts.

` + inv.sources.Help(),
		Example: `  rekey report -m mappings/orders.yaml --source 'gen:orders?rows=1000000'
  rekey report -m mappings/logs.yaml --source 'gen:logs?rows=1000000' --sample 10% --html report.html
  rekey report -m mappings/transactions_by_seller.yaml --source 'gen:transactions?rows=100000' --nodes 6 --json report.json --strict
  rekey report -m mappings/logs.yaml --source 'gen:logs?rows=100000' --query 'hostname=, ts range' --write-mapping designs/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReport(cmd, inv, f) },
	}
	f.register(inv, cmd.Flags())
	return cmd
}

// register defines report's flags.
func (f *reportFlags) register(inv *invocation, fl *pflag.FlagSet) {
	fl.StringVarP(&f.mapping, "mapping", "m", "", "mapping file (YAML) describing source columns and target key")
	fl.StringVar(&f.source, "source", "", "where rows come from: file:PATH or gen:NAME?rows=N (see below)")
	fl.StringVar(&f.sample, "sample", "", "analyse part of the input: a row count (100000, 1m) or a percentage (5%); default: all")
	fl.IntVar(&f.regions, "regions", 0, "number of regions to analyse (overrides the mapping's regions:)")
	fl.IntVar(&f.nodes, "nodes", 0, "Lindorm nodes, for the API-write recommendation (nodes x 4 regions)")
	fl.StringVar(&f.jsonOut, "json", "", "also write the report as JSON to this file")
	fl.StringVar(&f.htmlOut, "html", "", "also write the report as a self-contained HTML page to this file")
	fl.BoolVar(&f.strict, "strict", false, "exit 1 when there are warnings (2 stays for errors)")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "transform workers")
	fl.StringVar(&f.tmp, "tmp", "", "directory for the collision check's temp files (about 30 bytes a row, plus 4 per source column the key is not computed from and the values of those it is; removed at the end); default: the system temp directory")
	f.progress.register(inv, fl)
	fl.StringVar(&f.statsJSON, "stats-json", "", "also write the run's figures (rows/s, peak memory) to this JSON file")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget: the Go heap is kept near it (a soft limit at 80%, GOMEMLIMIT overrides); the report itself needs far less, and the garbage collector may use the rest")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the verdict line (with --json/--html for the rest)")
	fl.StringArrayVar(&f.queries, "query", nil, "a query the table must serve, ranking the advisor's designs (repeat for several; replaces the mapping's queries:): COLUMN= for equality, COLUMN range for a range, newest_first to read the range latest first, comma-separated, e.g. 'device_id=, ts range'")
	fl.StringVar(&f.workload, "workload", "", "how the advisor weighs reads against write spread: reads_first (the default: a salt, which makes every GET n lookups, ranks below any design that spreads as well without one) or write_heavy (write spread first; overrides the mapping's workload:)")
	fl.StringVar(&f.order, "write-order", "", "the source column that holds each row's creation time (or a sequence that rises with it): hotspots are judged in its order (overrides the mapping's source.write_order)")
	fl.StringVar(&f.writeMap, "write-mapping", "", "write each alternative design as a mapping file (DIR/<id>.yaml, ready for rekey check and migrate) into this directory")
	inv.sources.AddFlags(fl, source.Use{Scan: true})
}

func runReport(cmd *cobra.Command, inv *invocation, f *reportFlags) error {
	logger, err := inv.logger()
	if err != nil {
		return usageError(err)
	}
	defer logger.Sync()
	cfg, err := f.config(cmd.Context(), inv, logger)
	if err != nil {
		return err
	}
	defer closeSource(cfg.Source)
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	defer inv.onInterrupt(inv.stderr, "\nrekey: stopping the report", cancel, cancel)()

	started := time.Now()
	rep, err := f.run(ctx, cfg)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return interrupted(errors.New("report interrupted"))
		}
		return fmt.Errorf("report failed: %w", err)
	}
	logger.Info("report done", zap.Int64("rows", rep.Totals.RowsRead), zap.Duration("took", time.Since(started)))
	if err := f.write(cmd.OutOrStdout(), rep, cfg.Program); err != nil {
		return err
	}
	if f.statsJSON != "" {
		// the rows a sample left out are read, neither accepted nor rejected: skipped, as are
		// those the source itself left out (since=)
		in := rep.Totals.RowsRead + rep.Totals.RowsSkipped
		res := pipeline.Result{RowsIn: in, RowsInThisRun: in, RowsWritten: rep.Totals.RowsOK, RowsRejected: rep.Totals.RowsRejected,
			RowsSkipped: rep.Totals.RowsRead - rep.Totals.RowsAnalysed + rep.Totals.RowsSkipped, Duration: secondsDuration(rep.Totals.Seconds)}
		if err := writeStats(f.statsJSON, res); err != nil {
			return err
		}
	}
	switch rep.Verdict.ExitCode {
	case 2:
		return reportErrors(fmt.Errorf("the report found errors: %s", report.VerdictLine(rep)))
	case 1:
		return reportWarnings(fmt.Errorf("--strict: the report found warnings: %s", report.VerdictLine(rep)))
	}
	return nil
}

// config checks the flags, loads the mapping and opens the source (the caller closes it): the
// report's configuration but for the plan sample and the progress display, which run adds.
func (f *reportFlags) config(ctx context.Context, inv *invocation, logger *zap.Logger) (report.Config, error) {
	sample, queries, err := f.parse(inv)
	if err != nil {
		return report.Config{}, err
	}
	if err := inv.sources.Refuse(f.source); err != nil {
		return report.Config{}, usageError(err)
	}
	inv.sourceWriteTimes = true // the rows' WRITETIME(), for the write order
	prog, err := inv.loadProgramFor(f.mapping, f.source, f.workers, f.regions, logger)
	if err != nil {
		return report.Config{}, err
	}
	m, err := transform.Load(f.mapping) // the decoded mapping, for the advisor's alternatives
	if err != nil {
		return report.Config{}, usageError(err)
	}
	order := report.OrderHints{Column: m.Source.WriteOrder, ColumnOrigin: "source.write_order"}
	if f.order != "" {
		if err := transform.CheckWriteOrder(f.order, prog.Source()); err != nil {
			return report.Config{}, usageError(fmt.Errorf("--write-order: %w", err))
		}
		order.Column, order.ColumnOrigin = f.order, "--write-order"
	}
	if err := report.CheckQueries(queries, prog.Source()); err != nil {
		return report.Config{}, usageError(err)
	}
	src, err := inv.openSource(ctx, f.source, prog, logger)
	if err != nil {
		return report.Config{}, sourceOpenExit(err)
	}
	if w, ok := src.(*kafka.Window); ok {
		w.EndHeldBack = true // judged on what it read: Unread names what an open transaction held back
	}
	sourceOrder(src, &order)
	whole, part := sourcePart(src)
	return report.Config{
		Whole:     whole,
		Part:      part,
		Unread:    sourceUnread(src),
		Program:   prog,
		Mapping:   m,
		Source:    src,
		SourceURI: sourceuri.Redact(f.source), // the report is shared: never a secret in it
		Regions:   f.regions,
		Nodes:     f.nodes,
		Sample:    sample,
		Strict:    f.strict,
		Workers:   f.workers,
		TmpDir:    f.tmp,
		// the advisor's subsample, and as much again in the keys it computes from it
		SubsampleBytes: inv.sourceMemory / 4,
		Logger:         logger.Named("report"),
		Generator:      "rekey " + version,
		FormatSplit:    pipeline.SplitValue,
		Queries:        queries,
		Workload:       f.workload,
		Order:          order,
	}, nil
}

// parse reads --sample, --regions, --nodes, --memory (and sets the memory budget), --query and
// --workload.
func (f *reportFlags) parse(inv *invocation) (report.Sample, []transform.Query, error) {
	for _, out := range [][2]string{{"--json", f.jsonOut}, {"--html", f.htmlOut}, {"--stats-json", f.statsJSON}} {
		if err := checkOutFolder(out[0], out[1]); err != nil {
			return report.Sample{}, nil, err
		}
	}
	sample, err := report.ParseSample(f.sample)
	if err != nil {
		return sample, nil, usageError(err)
	}
	if f.regions < 0 || f.nodes < 0 {
		return sample, nil, usageError(errors.New("--regions and --nodes must not be negative"))
	}
	memory, err := parseSize("--memory", f.memory)
	if err != nil {
		return sample, nil, usageError(err)
	}
	inv.sourceMemory = memory
	setMemoryBudgetGC(inv.getenv, memory, reportGCPercent)
	heapOnHugePages(memory)
	queries, err := f.parseQueries()
	return sample, queries, err
}

// parseQueries reads --query and checks --workload.
func (f *reportFlags) parseQueries() ([]transform.Query, error) {
	var queries []transform.Query
	for _, q := range f.queries {
		pq, err := report.ParseQuery(q)
		if err != nil {
			return nil, usageError(err)
		}
		queries = append(queries, pq)
	}
	if f.workload != "" {
		if msg := transform.CheckWorkload(f.workload); msg != "" {
			return nil, usageError(fmt.Errorf("--workload: %s", msg))
		}
	}
	return queries, nil
}

// run samples the source for the region plan (migrate's one sample step) and runs the report
// with a progress display.
func (f *reportFlags) run(ctx context.Context, cfg report.Config) (*report.Report, error) {
	// a spread sample of the source places quantile split keys over the whole input; a source
	// that cannot sample (a stream) is sampled by the report from its first rows
	var err error
	if cfg.PlanSample, cfg.EstimatedBytes, err = migrate.Sample(ctx, cfg.Program, cfg.Source, sampleSize); err != nil {
		return nil, err
	}
	cfg.Counters = &pipeline.Counters{}
	bar, err := f.progress.startAccepted("analysing", estimatedRows(cfg.Source), cfg.Counters)
	if err != nil {
		return nil, usageError(err)
	}
	finishBar := sync.OnceFunc(bar.finish)
	defer finishBar()
	cfg.Reread = func(c *pipeline.Counters) func() {
		finishBar()
		again, err := f.progress.startRows("reading again for the colliding keys' rows", estimatedRows(cfg.Source), c)
		if err != nil {
			return func() {}
		}
		return again.finish
	}
	return report.Run(ctx, cfg)
}

// write writes the report's files (--json, --html, --write-mapping) and prints it.
func (f *reportFlags) write(out io.Writer, rep *report.Report, prog *transform.Program) error {
	rep.WriteMappingDir = f.writeMap // the next steps name the files it writes
	if f.jsonOut != "" {
		if err := writeReportFile(f.jsonOut, 0o644, func(w io.Writer) error { return report.WriteJSON(w, rep) }); err != nil {
			return err
		}
	}
	if f.htmlOut != "" {
		if err := writeReportFile(f.htmlOut, 0o644, func(w io.Writer) error { return report.WriteHTML(w, rep) }); err != nil {
			return err
		}
	}
	if f.quiet {
		fmt.Fprintf(out, "%s: %s\n", rep.Mapping.Table, report.VerdictLine(rep))
	} else if err := report.WriteText(out, rep); err != nil {
		return err
	}
	var written []report.WrittenMapping
	if f.writeMap != "" {
		var err error
		if written, err = report.WriteMappings(f.writeMap, f.mapping, rep, prog.Source()); err != nil {
			return err
		}
	}
	if f.jsonOut != "" || f.htmlOut != "" || len(written) > 0 {
		var files [][2]string
		if f.jsonOut != "" {
			files = append(files, [2]string{"json", f.jsonOut})
		}
		if f.htmlOut != "" {
			files = append(files, [2]string{"html", f.htmlOut})
		}
		for _, w := range written {
			files = append(files, [2]string{fmt.Sprintf("mapping #%d %s", w.Rank, w.ID), w.Path})
		}
		fmt.Fprintln(out)
		table(out, files)
	}
	return nil
}

// sourceOrder adds what the source tells about the order rows were written in: Cassandra's
// WRITETIME() (none for a key-only table), Kafka's message timestamps and offsets.
func sourceOrder(src pipeline.Source, h *report.OrderHints) {
	switch s := src.(type) {
	case *cassandra.Source:
		h.Arrival = "a Cassandra token-range scan: hash order of the partition key"
		switch {
		case s.RowWriteTimes():
			h.WriteTimes = report.OrderWriteTime
		case s.WriteTimesRefused() != nil:
			h.Notes = append(h.Notes, fmt.Sprintf("the server refused WRITETIME() on table %s.%s (%v): it cannot tell when the rows were written", s.Table().Keyspace, s.Table().Name, s.WriteTimesRefused()))
		default:
			h.Notes = append(h.Notes, fmt.Sprintf("table %s.%s has no regular column WRITETIME() is defined on (every column is in the key, or a non-frozen collection): Cassandra cannot tell when its rows were written", s.Table().Keyspace, s.Table().Name))
		}
	case *kafka.Window:
		s.Timestamps = true
		h.WriteTimes, h.Offsets, h.OffsetWindow = report.OrderKafkaTime, true, s.PartitionWindow
	case *file.Files, *file.Stdin: // what file: opens
		h.Arrival = "file order"
	default:
		h.Arrival = "the source's order"
	}
}

// sourcePart is how many rows the input holds that the source reads part of, and which part,
// for the report to judge what it reads as a sample: a Kafka window max= cuts short of the
// messages the topic retains. 0 when the source reads all of its input.
// A file window (?skip=, ?limit=) is part of the rows the files hold, by their estimate; -1 when
// they have none (gzip, stdin): a part of an input of unknown size.
func sourcePart(src pipeline.Source) (int64, string) {
	switch s := src.(type) {
	case *kafka.Window:
		retained, newest := s.Part()
		if retained == 0 {
			return 0, ""
		}
		which := "oldest"
		if newest {
			which = "newest"
		}
		return retained, fmt.Sprintf("the %s %s of the %s messages the topic retains (max=)", which, groupDigits(s.EstimatedRows()), groupDigits(retained))
	case *file.Files:
		rows, skip, limit := s.Part()
		if rows < 0 {
			return -1, unsizedWindow(skip, limit, "gzip files, whose rows are not known")
		}
		if rows == 0 {
			return 0, ""
		}
		if skip == 0 {
			return rows, fmt.Sprintf("the first %s of about %s rows the files hold (limit=)", groupDigits(limit), groupDigits(rows))
		}
		return rows, fmt.Sprintf("rows %s to %s of about %s rows the files hold (skip=, limit=)", groupDigits(skip+1), groupDigits(skip+s.EstimatedRows()), groupDigits(rows))
	case *file.Stdin:
		if rows, skip, limit := s.Part(); rows < 0 {
			return -1, unsizedWindow(skip, limit, "stdin, whose rows are not known")
		}
	}
	return 0, ""
}

// sourceUnread says, once the source has been read, what of its input it did not reach: the
// partitions of a Kafka window that an open transaction held back. nil: the source reads what it
// opened, or fails.
func sourceUnread(src pipeline.Source) func() string {
	w, ok := src.(*kafka.Window)
	if !ok {
		return nil
	}
	return func() string {
		held := w.HeldBack()
		if len(held) == 0 {
			return ""
		}
		parts := make([]string, len(held))
		for i, h := range held {
			parts[i] = fmt.Sprintf("%s offsets %d to %d", h.Stream, h.From, h.End-1)
		}
		return fmt.Sprintf("the window but the messages an open transaction held back, not read: %s; run again once the transaction has ended", strings.Join(parts, ", "))
	}
}

// unsizedWindow names a file window (skip=, limit=) of an input whose rows are not known.
func unsizedWindow(skip, limit int64, of string) string {
	switch {
	case limit == 0:
		return fmt.Sprintf("the rows after the first %s of %s (skip=)", groupDigits(skip), of)
	case skip == 0:
		return fmt.Sprintf("the first %s rows of %s (limit=)", groupDigits(limit), of)
	}
	return fmt.Sprintf("rows %s to %s of %s (skip=, limit=)", groupDigits(skip+1), groupDigits(skip+limit), of)
}

// writeReportFile writes a report rendering atomically, with mode perm (before the umask).
func writeReportFile(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := atomicfile.CreateTemp(path, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Commit(f, path)
}
