package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/report"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqltargets"
	"github.com/rekey/rekey/source"
	"github.com/rekey/rekey/source/file"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
	"github.com/rekey/rekey/verify"
)

// Exit codes of verify: 2 is "the target differs", so that a script can tell it from a failure;
// invalid use is a failure to run here (exitCode). Ctrl-C: exitInterrupted.
const (
	exitDifferent    = 2 // the verification ran: the target does not hold what the source gives
	exitVerifyFailed = 3 // it could not run to the end: flags, mapping, source or target error
)

// openLookup opens a table verify reads by key; it checks the table's definition against schema
// before returning.
func (inv *invocation) openLookup(ctx context.Context, uri string, schema pipeline.TargetSchema, conns int) (verify.LookupTarget, error) {
	return sqlsink.OpenLookup(ctx, uri, schema, inv.getenv, conns)
}

// openObjects opens a --target that is a rekey output: a local folder, or an s3:// or oss://
// prefix (credentials from the environment, as for migrate's --out). It only ever reads.
func (inv *invocation) openObjects(ctx context.Context, uri string) (verify.Objects, string, error) {
	st, where, err := output.OpenToRead(ctx, uri, inv.getenv)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("--target %s: no such folder: give --target the --out of the migration (or of the replication) to check: %w", sourceuri.Redact(uri), err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("--target %s: %w", sourceuri.Redact(uri), err)
	}
	return st, where, nil
}

type verifyFlags struct {
	mapping   string
	source    string
	target    string
	sample    string
	jsonOut   string
	workers   int
	lookups   int
	tmp       string
	memory    string
	progress  progressFlags
	statsJSON string
	quiet     bool
	repair    string
}

// verifyHelp is verify's --help text, before the sources' own.
const verifyHelp = `verify reads the source again (all of it, or a sample), rewrites every key exactly as migrate does
(the same mapping, the same rejects) and looks each row up in the target. It never writes to the
target. It reports:

  missing     keys the target does not hold
  differ      keys whose target row differs from the source's, with the columns that differ and
              a few examples (source vs target value, compared as the target stores them:
              timestamps in ms, decimals at the column's scale, floats bit for bit)
  extra       rows in the target the source does not produce, and rows written more often than
              the source has them: of every row of an output folder or of a table read whole by
              key range; of the ranges read of a table read in part; a table only looked up by
              key cannot list them (the summary says which)
  rejected    source rows the mapping rejects: migrate rejected them too, they are not looked for

When the source has several rows with one key, the last one is compared (the last one wins in
Lindorm), and the rows it replaces are counted as "rows overwritten"; those unlike it, whose values
are then in no target row, as "rows lost", and the verdict says how many.

TARGET is
  DIR                      the --out folder of rekey migrate: every data file under its data/, as
                           the bulk load reads them (a file manifest.json, or for a run that has not
                           finished checkpoint.json, does not list is named, its rows extra), Parquet or CSV;
                           or of rekey replicate: its data and delete files applied in the order its
                           manifest.json lists them, against a kafka:// source (its changes up to the
                           offsets the manifest records) or any other (the table's rows)
  lindorm://USER@HOST:33060/DATABASE, mysql://USER@HOST:PORT/DATABASE
                           the table, read by key in batches (Lindorm: 2,000 keys per multi-get);
                           the password comes from REKEY_LINDORM_PASSWORD (lindorm://) or
                           REKEY_MYSQL_PASSWORD (mysql://), never from the URI

--sample picks keys by a hash of the key, so repeated runs check the same rows, and every row of a
key or none: --sample 1% checks the keys whose hash falls in 1% of the hash space, --sample 10000
the 10,000 rows with the smallest hashes. The whole source is still read (the sample is chosen
after the key is computed); what a sample saves is target lookups and memory.

--repair FILE.jsonl writes the source rows of the keys missing or differing (every source column,
typed so that migrate reads back the same values: blobs as "0x..", timestamps in ISO-8601 UTC,
decimals as written, null apart from "") for one more migrate to repair the target: a table
takes them as upserts (migrate -m MAPPING --source file:FILE.jsonl --out TABLE --state FILE.state
--overwrite: a state folder of its own, the table's default one holds the migration); for a folder,
migrate them to a new --out and bulk load it after the first: its later writerConfig.timestamp
makes its cells win. Keys of extra target rows, which no migrate removes, go to
FILE.jsonl.extra-keys. The files are written (mode 0600, atomically) only when there is
something to repair, and an earlier run's file there is removed when there is not (a run
with --sample removes none); with --sample they cover the sampled keys only. It needs a source that can be read again (not
stdin).

Memory stays bounded on a source of any size: rows are partitioned by key hash and spill to temp
files in --tmp beyond --memory, then compared a partition at a time. A folder target is first
compared by digests (96 bits per key, 64 per row: a few million rows fit in memory); only when
keys differ are both sides read again to compare those keys value by value (the columns, the
examples). A source on stdin, which can be read only once, is compared value by value at once.

Exit codes:
  0    equal: every key checked is in the target with the same values (and nothing extra)
  2    different: rows missing, differing or extra (see the summary, or --json); or NOT
       VERIFIED: 0 keys checked of a target whose rows were not all read
  3    verify could not run to the end: flags, mapping, an unreadable source or target, a target
       holding another table
  130  interrupted

`

func newVerifyCmd(inv *invocation) *cobra.Command {
	f := &verifyFlags{}
	cmd := &cobra.Command{
		Use:   "verify -m MAPPING --source URI --target TARGET [--sample N|P%] [--json FILE] [--repair FILE.jsonl]",
		Short: "Check that a migration's target holds what the source gives: rows missing, differing, extra",
		Long:  verifyHelp + inv.sources.Help(),
		Example: `  rekey verify -m mappings/orders.yaml --source file:orders.csv --target out/orders
  rekey verify -m mappings/orders.yaml --source file:orders.csv --target out/orders --sample 1% --json verify.json
  rekey verify -m mappings/orders.yaml --source 'cassandra://10.0.0.5/shop/orders' --target 'lindorm://root@ld-xxx:33060/shop' --sample 100000
  rekey verify -m mappings/orders.yaml --source file:orders.csv --target 'mysql://root@127.0.0.1:3306/shop' --repair repair.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVerify(cmd, inv, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.mapping, "mapping", "m", "", "mapping file (YAML): the one the migration used")
	fl.StringVar(&f.source, "source", "", "where rows come from, as for migrate: file:PATH, cassandra://..., kafka://... (see below)")
	fl.StringVar(&f.target, "target", "", "what to check: the --out of a migrate or replicate, a folder or a bucket prefix (s3://BUCKET/PREFIX, oss://BUCKET/PREFIX?region=R), or a table: lindorm://USER@HOST:33060/DATABASE, mysql://USER@HOST:PORT/DATABASE")
	fl.StringVar(&f.sample, "sample", "", "check part of the keys, chosen by key hash: a row count (10000, 1m) or a percentage (1%); default: all")
	fl.StringVar(&f.jsonOut, "json", "", "also write the result as JSON to this file (every figure and the examples)")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "transform and target-reading workers")
	fl.IntVar(&f.lookups, "lookups", 4, "lookups in flight at once on a table target, each on its own connection")
	fl.StringVar(&f.tmp, "tmp", "", "directory for the temp files (about the size of the rows checked, both sides; removed at the end); default: the system temp directory")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget: the Go heap is kept near it (a soft limit at 80%, GOMEMLIMIT overrides); rows (or their digests) beyond their share of it spill to --tmp")
	f.progress.register(inv, fl)
	fl.StringVar(&f.statsJSON, "stats-json", "", "also write the run's figures (rows/s, peak memory) to this JSON file")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the verdict line")
	fl.StringVar(&f.repair, "repair", "", "write the source rows of the keys missing or differing to this JSON Lines file (.jsonl), for migrate --source file:FILE to repair the target; keys of extra target rows go to FILE.extra-keys")
	inv.sources.AddFlags(fl, source.Use{Scan: true})
	return cmd
}

func runVerify(cmd *cobra.Command, inv *invocation, f *verifyFlags) error {
	logger, err := inv.logger()
	if err != nil {
		return err
	}
	defer logger.Sync()
	sample, memory, err := f.check(cmd)
	if err != nil {
		return err
	}
	inv.sourceMemory = memory
	setMemoryBudget(inv.getenv, memory)
	heapOnHugePages(memory)
	if err := inv.sources.Refuse(f.source); err != nil {
		return err
	}
	prog, err := inv.loadProgramFor(f.mapping, f.source, f.workers, 0, logger)
	if err != nil {
		return err
	}
	// a kafka:// source is opened once the target says whether it is a replication's
	var src pipeline.Source
	if !isKafkaURI(f.source) {
		if src, err = inv.openSource(cmd.Context(), f.source, prog, logger); err != nil {
			return err
		}
		defer closeSource(src)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	cfg := verify.Config{
		Program: prog, Source: src, Sample: verify.Sample{Rows: sample.Rows, Fraction: sample.Fraction},
		Workers: f.workers, Lookups: f.lookups, TmpDir: f.tmp, Memory: memory / 2,
		Logger: logger.Named("verify"),
	}
	_, cfg.SourceOnce = src.(*file.Stdin) // read once: no second pass over the differences
	if err := refuseRepairOfSource(src, f.repair); err != nil {
		return err
	}
	repair, err := f.openRepair(&cfg, prog)
	if err != nil {
		return err
	}
	defer repair.discard()
	target, closeTarget, err := inv.openVerifyTarget(ctx, f, prog, &cfg)
	if err != nil {
		return err
	}
	defer closeTarget()
	rep, closeSrc, err := inv.openVerifyChanges(ctx, f, prog, &cfg, repair != nil, logger)
	if err != nil {
		return err
	}
	defer closeSrc()
	return f.run(ctx, cmd.OutOrStdout(), inv, cancel, cfg, target, rep, repair)
}

// run runs verify with its progress phases and prints the result; Ctrl-C cancels it.
func (f *verifyFlags) run(ctx context.Context, out io.Writer, inv *invocation, cancel context.CancelFunc, cfg verify.Config,
	target string, rep *replication, repair *repairFile) error {
	cfg.Phase = f.phases(cfg.Source)
	if _, err := progressMode(f.progress.mode, false); err != nil {
		return err
	}
	defer inv.onInterrupt(inv.stderr, "\nrekey: stopping verify", cancel, cancel)()
	res, err := verify.Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return interrupted(errors.New("verify interrupted"))
		}
		return runFailed(fmt.Errorf("verify failed: %w", err))
	}
	res.Source, res.Target = sourceuri.Redact(f.source), target
	rep.annotate(res, target)
	if n := heldPastTTLNote(cfg.Source, cfg.Program.WriteTime()); n != "" {
		res.Notes = append(res.Notes, n)
	}
	return f.printResult(out, res, repair)
}

// heldPastTTLNote says that the cells of another TTL a source with write times left out as
// expired (Cassandra still holds them) were compared as absent; "" when there were none.
func heldPastTTLNote(src pipeline.Source, writeTimes bool) string {
	st := cellTimeStats(src, writeTimes)
	if st == nil || st.OtherTTLLeftOut == 0 {
		return ""
	}
	return fmt.Sprintf("%d cells Cassandra still holds were read and compared as absent (counted at each read of the source): "+
		"a TTL of their own, or none, or the table's counted from a write later than their USING TIMESTAMP, keeps them there, "+
		"but their write time + the table's TTL has passed, so the target hides them and migrate "+
		"leaves them out; to keep them, migrate them without target.write_time, whose cells count the TTL from the load", st.OtherTTLLeftOut)
}

// openRepair creates --repair's file, into which cfg's run writes; nil without --repair.
func (f *verifyFlags) openRepair(cfg *verify.Config, prog *transform.Program) (*repairFile, error) {
	if f.repair == "" {
		return nil, nil
	}
	if cfg.SourceOnce {
		return nil, errRepairStdin
	}
	repair, err := createRepairFile(f.repair, prog.Source(), prog.WriteTime())
	if err != nil {
		return nil, err
	}
	cfg.Repair = repair.write
	return repair, nil
}

// annotate adds what verify of a replication knows to its result: the offsets its changes go up
// to, and notes. Nothing for a nil replication (the target is not a replication's).
func (r *replication) annotate(res *verify.Result, target string) {
	if r == nil {
		return
	}
	res.UpTo = r.upTo
	res.Notes = append(res.Notes, r.notes...)
	if n := r.refusedNote(target); n != "" {
		res.Notes = append(res.Notes, n)
	}
}

// check checks the flags that need no source or target, and reads --sample and --memory.
func (f *verifyFlags) check(cmd *cobra.Command) (report.Sample, int64, error) {
	if f.target == "" {
		return report.Sample{}, 0, errors.New("--target is required: the --out folder of the migration, or lindorm://USER@HOST:33060/DATABASE")
	}
	if f.repair != "" {
		if err := checkRepairPath(f.repair); err != nil {
			return report.Sample{}, 0, err
		}
	}
	for _, out := range [][2]string{{"--repair", f.repair}, {"--json", f.jsonOut}, {"--stats-json", f.statsJSON}} {
		if err := checkOutFolder(out[0], out[1]); err != nil {
			return report.Sample{}, 0, err
		}
	}
	if f.lookups < 1 {
		return report.Sample{}, 0, fmt.Errorf("--lookups %d: want at least 1 lookup in flight", f.lookups)
	}
	if !sqlsink.IsURI(f.target) && cmd.Flags().Changed("lookups") {
		return report.Sample{}, 0, fmt.Errorf("--lookups applies to a table target (lindorm://, mysql://), which verify reads by key; --target %s is read whole: drop --lookups", sourceuri.Redact(f.target))
	}
	sample, err := report.ParseSample(f.sample)
	if err != nil {
		return sample, 0, err
	}
	memory, err := parseSize("--memory", f.memory)
	return sample, memory, err
}

// openVerifyTarget opens --target into cfg: a table read by key (Lookup) or an output's folder
// (Folder). It returns the target as the result names it, and what closes it.
func (inv *invocation) openVerifyTarget(ctx context.Context, f *verifyFlags, prog *transform.Program, cfg *verify.Config) (string, func(), error) {
	if sqlsink.IsURI(f.target) {
		lt, err := inv.openLookup(ctx, f.target, prog.Target(), f.lookups)
		if err != nil {
			return "", nil, fmt.Errorf("--target %s: %w", sourceuri.Redact(f.target), err)
		}
		cfg.Lookup = lt
		return sourceuri.Redact(f.target), func() { lt.Close() }, nil
	}
	if !store.IsLocation(f.target) {
		return "", nil, fmt.Errorf("--target %s: unknown kind of target: give the --out of the migration (a folder, s3:// or oss://), or lindorm:// or mysql:// (%s)", sourceuri.Redact(f.target), knownLookups())
	}
	objs, loc, err := inv.openObjects(ctx, f.target)
	if err != nil {
		return "", nil, err
	}
	if cfg.Folder, err = verify.OpenFolder(ctx, objs, loc, prog.Target(), prog.Fingerprint()); err != nil {
		return "", nil, err
	}
	return loc, func() {}, nil
}

// openVerifyChanges opens a kafka:// source into cfg once the target is open: a replication's
// changes up to the offsets its manifest records (nil: the target is not a replication's), or the
// topic's rows. It returns what closes the source.
func (inv *invocation) openVerifyChanges(ctx context.Context, f *verifyFlags, prog *transform.Program, cfg *verify.Config, repair bool, logger *zap.Logger) (*replication, func(), error) {
	if !isKafkaURI(f.source) {
		return nil, func() {}, nil
	}
	rep, err := inv.replicationSource(ctx, f.source, prog, cfg.Folder, logger)
	if pipeline.Unreachable(err) {
		return nil, nil, fmt.Errorf("%w\nthe source could not be reached: run the same command again once it answers", err)
	}
	if err != nil {
		return nil, nil, err
	}
	if rep != nil {
		if repair {
			return nil, nil, errRepairChanges
		}
		cfg.Changes = rep.changes
		cfg.Logger.Info("verifying a replication", zap.String("up_to", rep.upTo))
		return rep, func() {}, nil
	}
	src, err := inv.openSource(ctx, f.source, prog, logger)
	if pipeline.Unreachable(err) {
		return nil, nil, fmt.Errorf("%w\nthe source could not be reached: run the same command again once it answers", err)
	}
	if err != nil {
		return nil, nil, err
	}
	cfg.Source = src
	return nil, func() { closeSource(src) }, nil
}

// phases shows verify's phases as progress bars; the source's reading counts against its row
// estimate.
func (f *verifyFlags) phases(src pipeline.Source) func(name string, total int64, c *pipeline.Counters) func() {
	return func(name string, total int64, c *pipeline.Counters) func() {
		var bar *progress
		var err error
		if strings.HasSuffix(name, "reading source") { // rows read, kept and rejected by the mapping
			bar, err = f.progress.startAccepted(name, estimatedRows(src), c)
		} else {
			bar, err = f.progress.startRows(name, total, c)
		}
		if err != nil {
			return func() {}
		}
		return bar.finish
	}
}

// printResult writes the result (--json, the text or the verdict line, --repair's file,
// --stats-json) and gives the exit: the target differs, or not.
func (f *verifyFlags) printResult(out io.Writer, res *verify.Result, repair *repairFile) error {
	if f.jsonOut != "" {
		// 0600: its examples are rows of the source and the target, as the repair file's are
		if err := writeReportFile(f.jsonOut, 0o600, func(w io.Writer) error { return verify.WriteJSON(w, res) }); err != nil {
			return runFailed(err)
		}
	}
	if f.quiet {
		fmt.Fprintln(out, verify.Verdict(res))
	} else if err := verify.WriteText(out, res); err != nil {
		return runFailed(err)
	}
	if repair != nil {
		if err := finishRepair(out, repair, res, f, f.quiet); err != nil {
			return runFailed(fmt.Errorf("--repair: %w", err))
		}
	}
	if f.statsJSON != "" {
		st := pipeline.Result{RowsIn: res.RowsRead, RowsInThisRun: res.RowsRead, RowsWritten: res.RowsChecked, RowsRejected: res.RowsRejected,
			RowsSkipped: res.RowsSkipped, Duration: secondsDuration(res.Seconds)}
		if res.Sample != "all" {
			// the rows a sample leaves out are read and not checked: skipped, as report's are
			st.RowsSkipped = max(st.RowsSkipped, st.RowsIn-st.RowsWritten-st.RowsRejected)
		}
		if err := writeStats(f.statsJSON, st); err != nil {
			return runFailed(err)
		}
	}
	if !res.Equal {
		return targetDiffers(errors.New(verify.Verdict(res)))
	}
	return nil
}

// knownLookups names the tables verify reads by key: the SQL targets.
func knownLookups() string {
	return "this build reads " + strings.Join(sqltargets.Schemes(), ", ")
}
