package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
	"github.com/rekey/rekey/verify"
)

type replicateFlags struct {
	mapping      string
	source       string
	out          string
	format       string
	regions      int
	rollSize     string
	rollInterval time.Duration
	memory       string
	metricsAddr  string
	progress     progressFlags
	session      time.Duration
	rebalance    time.Duration
	acceptGaps   bool
	markStart    bool
	cpuProfile   string
	memProfile   string
	lts          ltsFlags
	sql          sqlFlags
}

// replicateLong is replicate's --help text, before kafka.URIHelp.
const replicateLong = `replicate consumes a Kafka topic as a member of a consumer group, rewrites every message's key with
the mapping and writes region-split bulk-load files in rolls, plus DELETE statements for deletes:

  DIR/data/region-0003/p0002-<first offset>-<last offset>.parquet    upserts of partition 2 routed to region 3
  DIR/deletes/region-0003/p0002-<first offset>-<last offset>.sql    DELETE statements, applied after them
  DIR/rejects/p0002-<first offset>-<last offset>.jsonl              messages that could not be decoded or
                        mapped, with topic, partition and offset (mode 0600: raw messages)
  DIR/manifest.json     regions, files, every segment in the order to apply it, per partition the next
                        offset and rows_in = rows_written + rows_rejected (rewritten per roll)
  DIR/ddl.sql, DIR/bulkload.json, DIR/replicate.json (mapping fingerprint, region plan, group: fixed)

A roll closes at --roll-size or --roll-interval after its first message, whichever comes first, even
when no further message arrives; the first roll of each partition assigned (at the start and after
each rebalance) closes after its first fetched batch, so that the first offset commit is early. Offsets are committed to Kafka only after every file holding the
roll's messages is durable (written and fsynced under a hidden .rekey-tmp- name, manifest rewritten:
the roll commits when the manifest lists it; then renamed, folder fsynced). Into a folder, a file
under data/ has its final name only once the manifest lists it. After a crash, a roll the manifest
does not list is replayed whole and its leftover files removed; a listed one is not replayed (the
renames a crash interrupted are finished), so no message is written, counted or rejected twice.

Run several processes with the same group AND THE SAME --out to share the partitions: the members
of a group share one output folder (a shared file system with flock, e.g. NFSv4, across hosts),
where the next owner of a partition continues its rolls and removes what a killed member left. Separate folders would each keep the messages a
killed member committed before its offset and the replay of them. On a rebalance each member closes
and commits its rolls before handing partitions over. SIGTERM or Ctrl-C closes and commits the
current rolls, commits the offsets, leaves the group (waiting at most 5s) and exits 0, or 1 when
it rejected messages (a warning after the summary counts them by code and says what to do; a
second Ctrl-C aborts at once; the open rolls are then replayed by the next run). A stop takes the open
rolls' close plus 5s: set Kubernetes' terminationGracePeriodSeconds above that.

Messages the topic deleted (retention) before replicate read them are lost to the table: replicate
stops with an error naming the partition, its committed next offset and the earliest available one.
--accept-gaps continues at the earliest offset instead, logs the gap at Warn, counts it
(rekey_gaps_total, rekey_gap_messages_total), records it in manifest.json (partitions[].gaps; a
table has none) and names the messages lost in the summary.

Exit codes: 0 stopped cleanly (SIGTERM, Ctrl-C: everything read is committed); 1 stopped cleanly,
but this process rejected messages (their changes are not in the output); 2 invalid use
(flags, mapping, another group's folder); 3 the replication failed (Kafka, disk, a lost partition:
what is committed is consistent, run the same command to continue); 130 aborted by a second Ctrl-C.

Message formats (format=): json, a row object per message (a null value deletes the key given
by the message key, a JSON object of key columns); debezium, Debezium change events (op c/r/u/d,
before/after, with or without the JSON converter's schema/payload wrapping; Cassandra connector
cells {"value": ...} too). An update whose new values give another target key deletes the old one.

To an object store (--out s3://BUCKET/PREFIX or oss://BUCKET/PREFIX, credentials from the
environment as for migrate), a roll's files are spooled on local disk (TMPDIR: about --roll-size per
partition) and uploaded under their final names when the roll closes, manifest.json after them. A
prefix has ONE member: a bucket has no lock the members could share to commit rolls, so the
output's lock object (.rekey.lock, renewed while the member runs) refuses a second process, and a
member that sees the group's other partitions held by someone else for two session timeouts fails. A restart after a kill
waits for the killed member's lock to expire (up to 2 minutes) and continues.

Into a SQL table (--out lindorm://... or mysql://...), every change is applied through the MySQL
protocol instead: each fetched batch of a partition becomes batched upserts and deletes (in message
order per key, spread over --sql-conns connections by key), and its offset is committed to Kafka
once every statement holding its messages succeeded. A crash replays the uncommitted batch
(upserts and deletes by key are idempotent). Rejects go to --state (default .rekey-state/<hash>)
rejects/p<partition>-<first>-<last>.jsonl. Transient errors (connection lost, timeouts, deadlocks,
throttling) are retried with backoff; a row the server refuses is rejected and the stream goes on.
/metrics adds rekey_sql_statements_total, rekey_sql_retries_total, rekey_sql_statement_seconds.

The region plan comes from the mapping (count, split_keys, hash-prefix and bucket keys). A
quantile plan (any other first key column) is placed from a sample of the messages the topic
retains, taken at the first start; replicate.json keeps it for every later start.

`

const replicateExample = `  rekey replicate -m mappings/orders.yaml --source 'kafka://b1:9092,b2:9092/orders?group=rekey-orders&format=debezium' --out /data/orders
  REKEY_KAFKA_PASSWORD=... rekey replicate -m mappings/orders.yaml \
    --source 'kafka://b1:9093/orders?group=g&sasl=scram-sha-512&user=rekey&tls=true&ca=/etc/ca.pem' \
    --out /data/orders --roll-size 128MiB --roll-interval 5m --metrics-addr :9464`

func newReplicateCmd(inv *invocation) *cobra.Command {
	f := &replicateFlags{}
	cmd := &cobra.Command{
		Use:     "replicate -m MAPPING --source 'kafka://HOST:PORT/TOPIC?group=G&format=json' --out DIR",
		Short:   "Continuous replication from Kafka: rewrite keys, roll region-split files, commit offsets when durable",
		Long:    replicateLong + kafka.URIHelp,
		Example: replicateExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runReplicate(cmd, inv, f) },
	}
	f.register(inv, cmd.Flags())
	return cmd
}

// register defines replicate's flags on fl.
func (f *replicateFlags) register(inv *invocation, fl *pflag.FlagSet) {
	fl.StringVarP(&f.mapping, "mapping", "m", "", "mapping file (YAML) describing source columns and target key")
	fl.StringVar(&f.source, "source", "", "kafka://HOST:PORT[,HOST:PORT]/TOPIC?group=G&format=json|debezium (see below)")
	fl.StringVar(&f.out, "out", "", "output directory, the same for every member of the group (a restart continues it); s3://BUCKET/PREFIX or oss://BUCKET/PREFIX (one member); or a SQL table: lindorm://USER@HOST:33060/DB, mysql://USER@HOST:PORT/DB")
	f.sql.register(fl)
	fl.StringVar(&f.format, "format", formats.Default(), formats.Help())
	fl.IntVar(&f.regions, "regions", 0, "number of pre-split regions at the first start (overrides the mapping's regions:); later starts take the output's plan and refuse another count")
	fl.StringVar(&f.rollSize, "roll-size", "64MiB", "close a partition's roll when its files reach this size")
	fl.DurationVar(&f.rollInterval, "roll-interval", time.Minute, "close a roll this long after its first message, even if no more arrive")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget: the Go heap is kept near it (a soft limit at 80%, GOMEMLIMIT overrides) and a quarter of it buffers the rows of the open files; the resident size can pass it by what lives outside the heap")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics (Prometheus text format) and /healthz on this address, e.g. :9464")
	f.progress.register(inv, fl)
	fl.Lookup("progress").Usage = "status on stderr: auto (a line redrawn every second on a terminal, a plain line every --progress-interval otherwise), bar (the redrawn line), plain, never"
	fl.DurationVar(&f.session, "session-timeout", 30*time.Second, "consumer group session timeout; into a table, a member with no heartbeat accepted for the shorter of this and --rebalance-timeout (less two heartbeats) runs no more statements, since its partitions may be another member's")
	fl.DurationVar(&f.rebalance, "rebalance-timeout", 60*time.Second, "consumer group rebalance timeout: how long the broker waits for the members to rejoin (each closes its rolls first)")
	fl.BoolVar(&f.acceptGaps, "accept-gaps", false, "continue past messages the topic deleted (retention) before they were read: logged, counted (rekey_gap_messages_total) and recorded in manifest.json (default: stop with an error)")
	fl.BoolVar(&f.markStart, "mark-start", false, "fix where a new consumer group starts: commit the topic's end offsets now for the group, then exit (takes --source alone, without start=); the next replicate with that group applies only the messages produced after the mark")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the run to this file")
	fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.memProfile, "mem-profile", "", "write a heap profile taken at the peak heap to this file")
	fl.MarkHidden("mem-profile")
	addLTSFlags(fl, &f.lts)
}

// runReplicate wires the flags into a replicate.Config and runs it until stopped.
func runReplicate(cmd *cobra.Command, inv *invocation, f *replicateFlags) error {
	logger, err := inv.logger()
	if err != nil {
		return usageError(err)
	}
	defer logger.Sync()
	kcfg, err := f.kafkaSource(inv)
	if err != nil {
		return err
	}
	if f.markStart {
		return markStart(cmd, kcfg)
	}
	if err := refuseOtherOutputFlags(cmd, f.out); err != nil {
		return err
	}
	o, err := f.options(inv)
	if err != nil {
		return err
	}
	prog, err := loadProgram(f.mapping)
	if err != nil {
		return err
	}
	if err := refuseKeyOnly(f.mapping, prog); err != nil {
		return err
	}
	if !o.toSQL {
		if err := refuseFormat(f.mapping, o.format, prog); err != nil {
			return err
		}
		if err := refuseWriteTimeInReplicaFiles(f.mapping, prog); err != nil {
			return err
		}
	}
	stopProfile, err := f.startProfile(inv, o.memory)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if f.memProfile != "" {
		go peakHeapProfile(ctx, f.memProfile)
	}
	tgt, err := f.openTarget(ctx, inv, kcfg, prog, logger)
	if err != nil {
		return err
	}
	r, err := replicate.New(ctx, f.config(inv, kcfg, prog, o, tgt, logger))
	if err != nil {
		if errors.Is(err, replicate.ErrOutput) {
			return runFailed(fmt.Errorf("%w\nonce the cause is fixed, run the same command again", err))
		}
		if o.toSQL && !errors.Is(err, sqlsink.ErrTableMismatch) && !errors.Is(err, kafka.ErrSchema) && !errors.Is(err, replicate.ErrStateOfAnotherTopic) {
			return runFailed(err)
		}
		return usageError(err)
	}
	if f.metricsAddr != "" {
		addr, stopServing, err := r.Serve(f.metricsAddr)
		if err != nil {
			return usageError(fmt.Errorf("--metrics-addr: %w", err))
		}
		defer stopServing()
		logger.Info("serving /metrics and /healthz", zap.String("addr", addr.String()))
	}
	return f.replicate(ctx, cancel, cmd, inv, r, kcfg, o, tgt, logger)
}

// replicateOptions are replicate's flags parsed: how it shows progress, and what it writes.
type replicateOptions struct {
	toSQL            bool
	progress         string
	format           files.Format
	rollSize, memory int64
	job              lindorm.JobOptions
}

// replicateTarget is where the replication writes: an output of files (a folder, a bucket's
// prefix) and its region plan, or a SQL table and the state folder of its rejects.
type replicateTarget struct {
	out    store.Store
	outDir string
	plan   pipeline.RegionPlan
	sql    sqlsink.Config
}

// kafkaSource checks --out and --source and returns the topic's consumer group configuration.
func (f *replicateFlags) kafkaSource(inv *invocation) (kafka.Config, error) {
	if f.out == "" && !f.markStart {
		return kafka.Config{}, usageError(errors.New("--out is required: the directory for the bulk-load files"))
	}
	if f.source == "" {
		return kafka.Config{}, usageError(fmt.Errorf("--source is required:\n  %s", kafka.URIHelp))
	}
	kcfg, err := inv.kafkaConfig(f.source)
	if err != nil {
		return kafka.Config{}, usageError(err)
	}
	if kcfg.Group == "" {
		return kafka.Config{}, usageError(fmt.Errorf("--source %s: name the consumer group: ...?group=NAME", sourceuri.Redact(f.source)))
	}
	u, err := sourceuri.Parse(f.source, "kafka", kafka.PasswordEnv)
	if err != nil { // ParseURI read it: not reached
		return kafka.Config{}, usageError(fmt.Errorf("--source %s: %w", sourceuri.Redact(f.source), err))
	}
	// --mark-start fixes where the group starts: a start= in the URI would be ignored
	if f.markStart && len(u.Query["start"]) > 0 {
		return kafka.Config{}, usageError(fmt.Errorf("--source %s: --mark-start commits the topic's end offsets for the group, which then starts there whatever start= says: drop start= "+
			"(without --mark-start, a new group starts at the oldest retained message)", sourceuri.Redact(f.source)))
	}
	// a group reads from its committed offsets (a new one from the first): a window's bounds,
	// start=earliest included, would be ignored, so they are refused
	if len(u.Query["start"]) > 0 || len(u.Query["max"]) > 0 {
		return kafka.Config{}, usageError(fmt.Errorf("--source %s: start= and max= bound the window of report and migrate; replicate reads from the group's committed offsets "+
			"(a new group from the topic's first offset). To begin at the topic's current end, run once, before anything else: "+
			"rekey replicate --source '%s' --mark-start (it commits the end offsets for the group)", sourceuri.Redact(f.source), sourceuri.Redact(withoutParams(f.source, "start", "max"))))
	}
	return kcfg, nil
}

// withoutParams is the URI raw without its query parameters of the given (lower-case) names.
func withoutParams(raw string, names ...string) string {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw
	}
	var kept []string
	for _, piece := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(piece, "=")
		if n, err := url.QueryUnescape(name); err == nil && slices.Contains(names, strings.ToLower(n)) {
			continue
		}
		kept = append(kept, piece)
	}
	if len(kept) == 0 {
		return base
	}
	return base + "?" + strings.Join(kept, "&")
}

// options parses the flags that need parsing, in the order their errors have always come.
func (f *replicateFlags) options(inv *invocation) (o replicateOptions, err error) {
	o.toSQL = sqlsink.IsURI(f.out)
	if o.progress, err = progressMode(f.progress.mode, isTerminal(inv.stderr)); err != nil {
		return o, usageError(err)
	}
	if o.format, err = fileFormat(f.format); err != nil {
		return o, usageError(err)
	}
	if o.rollSize, err = parseSize("--roll-size", f.rollSize); err != nil {
		return o, usageError(err)
	}
	if o.memory, err = parseSize("--memory", f.memory); err != nil {
		return o, usageError(err)
	}
	if f.rollInterval <= 0 {
		return o, usageError(errors.New("--roll-interval must be positive"))
	}
	if f.session <= 0 || f.rebalance <= 0 {
		return o, usageError(errors.New("--session-timeout and --rebalance-timeout must be positive"))
	}
	if o.job, err = f.lts.options(); err != nil {
		return o, usageError(err)
	}
	o.job.Out = f.out
	return o, nil
}

// startProfile sets the memory budget and starts the CPU profile; stop ends the profile.
func (f *replicateFlags) startProfile(inv *invocation, memory int64) (stop func(), err error) {
	setMemoryBudget(inv.getenv, memory) // GOGC=400 and a soft memory limit, as migrate does
	if inv.getenv("GOMEMLIMIT") == "" {
		// more headroom than migrate's 90%: every partition may close its roll at once, and
		// the limit bounds the Go heap, not the whole resident set
		debug.SetMemoryLimit(memory * 3 / 4)
	}
	if f.cpuProfile == "" {
		return func() {}, nil
	}
	pf, err := os.Create(f.cpuProfile)
	if err != nil {
		return nil, usageError(err)
	}
	pprof.StartCPUProfile(pf)
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// openTarget opens --out: a folder or a bucket's prefix and its region plan, or a SQL table
// (one region, no files) and the state folder of its rejects.
func (f *replicateFlags) openTarget(ctx context.Context, inv *invocation, kcfg kafka.Config, prog *transform.Program, logger *zap.Logger) (tgt replicateTarget, err error) {
	if !sqlsink.IsURI(f.out) {
		if tgt.out, err = inv.openStore(ctx, f.out); err != nil {
			return tgt, err
		}
		// a folder that cannot be made fails the run (3), before its state is read
		if err := store.MakeRoot(tgt.out); err != nil {
			return tgt, runFailed(fmt.Errorf("--out %s: %w", f.out, err))
		}
		tgt.outDir = store.DisplayName(tgt.out, f.out)
		tgt.plan, err = replicationPlan(ctx, f, tgt.out, kcfg, prog, logger)
		return tgt, err
	}
	// a table has no regions to cut files by; the state folder keeps the rejects
	t, err := sqlsink.ParseURI(f.out, inv.getenv)
	if err != nil {
		return tgt, usageError(fmt.Errorf("--out %w", err))
	}
	if prog.WriteTime() {
		// the mapping's write times are the events' own: ?write_time=true
		if err := t.UseCellWriteTimes(); err != nil {
			return tgt, usageError(err)
		}
	}
	if t.CellTimestamps && kcfg.Format != kafka.FormatDebezium {
		return tgt, usageError(fmt.Errorf("--out %s: write_time takes each change's write time from Debezium's Cassandra connector events: use format=debezium in --source, or drop write_time", t.Redacted))
	}
	if f.sql.conns < 1 {
		return tgt, usageError(fmt.Errorf("--sql-conns %d: want at least 1", f.sql.conns))
	}
	table := prog.Target().Table
	if t.Table != "" {
		table = t.Table
	}
	tgt.outDir = f.sql.stateDir(t, table)
	tgt.plan = pipeline.RegionPlan{Type: prog.Target().Columns[0].Type, Strategy: "single"}
	tgt.sql = sqlsink.Config{Target: t, Conns: f.sql.conns, Logger: logger.Named("sink.sql")}
	if tgt.out, err = output.OpenStateFolder(tgt.outDir); err != nil {
		return tgt, runFailed(fmt.Errorf("--out %s: %w", tgt.outDir, err))
	}
	return tgt, nil
}

// config is the replicate.Config of the flags.
func (f *replicateFlags) config(inv *invocation, kcfg kafka.Config, prog *transform.Program, o replicateOptions, tgt replicateTarget, logger *zap.Logger) replicate.Config {
	return replicate.Config{
		SQL:          tgt.sql,
		Kafka:        kcfg,
		Program:      prog,
		Plan:         tgt.plan,
		Format:       o.format,
		Store:        tgt.out,
		Out:          tgt.outDir,
		Job:          o.job,
		RollSize:     o.rollSize,
		RollInterval: f.rollInterval,
		Memory:       o.memory / 4,
		Group:        replicate.GroupOptions{SessionTimeout: f.session, HeartbeatInterval: max(f.session/10, 100*time.Millisecond), RebalanceTimeout: f.rebalance},
		AcceptGaps:   f.acceptGaps,
		Version:      version,
		Logger:       logger.Named("replicate"),
		Hooks:        inv.replicateHooks,
	}
}

// replicate runs r until a signal stops it (or ctx ends), showing its status, then prints the
// summary and the rejects, and says how the run ended.
func (f *replicateFlags) replicate(ctx context.Context, cancel func(), cmd *cobra.Command, inv *invocation, r *replicate.Replicator, kcfg kafka.Config, o replicateOptions, tgt replicateTarget, logger *zap.Logger) error {
	stop := make(chan struct{})
	stopping := "\nrekey: stopping: closing and committing the open rolls (Ctrl-C again to abort at once)"
	if o.toSQL {
		stopping = "\nrekey: stopping: finishing the statements in flight and committing their offsets (Ctrl-C again to abort at once)"
	}
	defer inv.onInterrupt(inv.stderr, stopping, func() { close(stop) }, cancel)()

	logger.Info("replication starting", zap.String("topic", kcfg.Topic), zap.String("group", kcfg.Group),
		zap.Int("regions", r.Plan().Count()), zap.String("strategy", r.Plan().Strategy), zap.String("out", f.out))
	started := time.Now()
	interval := f.progress.interval
	if o.progress == "bar" {
		interval = time.Second
	}
	status := startStatus(inv.stderr, o.progress, interval, r.Metrics())
	runErr := r.Run(ctx, stop)
	status.finish()
	printReplicationSummary(cmd.OutOrStdout(), summaryTitle(runErr, o.toSQL), r.Metrics(), r.Plan(), sourceuri.Redact(f.out), o.toSQL, time.Since(started))
	rejected := rejectedMessages(cmd.OutOrStdout(), r.Metrics(), tgt.out.Location(output.RejectsDir+"/"), o.toSQL)
	if runErr == nil {
		return rejected
	}
	return replicationFailed(runErr, o.toSQL)
}

// summaryTitle is the title of the summary of a replication that ended with runErr: a failed or
// aborted one says so, and, into files, that its rows written count the open rolls it discarded
// (the next run writes them again); a table holds every row its statements wrote.
func summaryTitle(runErr error, toSQL bool) string {
	if runErr == nil {
		return "Replication summary (this process)"
	}
	how := "failed"
	if errors.Is(runErr, context.Canceled) {
		how = "aborted"
	}
	if toSQL {
		return "Replication " + how + " (this process)"
	}
	return "Replication " + how + " (this process; rows written include those of the open rolls it discarded, which the next run writes again)"
}

// replicationFailed is the exit of a replication that ended with err.
func replicationFailed(err error, toSQL bool) error {
	switch {
	case errors.Is(err, context.Canceled):
		if toSQL {
			return interrupted(errors.New("aborted: the messages whose offsets were not committed will be applied again by the next run (upserts and deletes in order: harmless)"))
		}
		return interrupted(errors.New("aborted: the open rolls were discarded and will be replayed by the next run"))
	case errors.Is(err, kafka.ErrAuthentication), errors.Is(err, replicate.ErrGroupSettings): // the same command would fail again: the error says what to fix
		return runFailed(fmt.Errorf("replication failed: %w", err))
	}
	var gap *kafka.GapError
	var past *kafka.PastEndError
	if errors.As(err, &gap) || errors.As(err, &past) { // the same command stops again: the error says what to do
		return runFailed(fmt.Errorf("replication stopped: %w", err))
	}
	return runFailed(fmt.Errorf("replication failed: %w\nthe files and offsets committed so far are consistent; run the same command to continue", err))
}

// markStart commits the topic's end offsets for a new group (replicate --mark-start) and says
// what it fixed. It takes --source alone: any other flag of replicate would be ignored.
func markStart(cmd *cobra.Command, kcfg kafka.Config) error {
	var other []string
	own := cmd.LocalNonPersistentFlags() // replicate's flags, not the global ones (--log-level)
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if own.Lookup(fl.Name) != nil && fl.Name != "source" && fl.Name != "mark-start" {
			other = append(other, "--"+fl.Name)
		}
	})
	if len(other) > 0 {
		return usageError(fmt.Errorf("--mark-start takes --source alone (it only commits offsets for the group): drop %s", strings.Join(other, ", ")))
	}
	offs, err := kcfg.MarkStart(cmd.Context())
	if errors.Is(err, kafka.ErrGroupHasOffsets) {
		return usageError(err)
	}
	if pipeline.Unreachable(err) {
		return runFailed(fmt.Errorf("mark the start: %w\nno broker could be reached: run the same command again once one answers", err))
	}
	if err != nil {
		return runFailed(fmt.Errorf("mark the start: %w", err))
	}
	var total int64
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("%d:%d", o.Partition, o.End)
		total += o.End - o.First
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Marked the start of group %s on topic %s at the end offsets (partition:offset) %s.\n"+
		"replicate with group=%s applies the messages produced from now on; the %d retained before the mark are skipped.\n",
		kcfg.Group, kcfg.Topic, strings.Join(parts, " "), kcfg.Group, total)
	return nil
}

// replicationPlan is the output's region plan (replicate.Plan), its failures told apart by exit
// code: the output's state unreadable (3), an output holding something else or a --regions its
// plan overrides (2), the topic not opened (as a source that cannot be opened), the sample's own.
func replicationPlan(ctx context.Context, f *replicateFlags, out store.Store, kcfg kafka.Config, p *transform.Program, logger *zap.Logger) (pipeline.RegionPlan, error) {
	plan, err := replicate.Plan(ctx, replicate.PlanRequest{Store: out, Out: f.out, Kafka: kcfg, Program: p, Regions: f.regions, Logger: logger,
		Sample: func(ctx context.Context, src pipeline.Source) (pipeline.RegionPlan, error) {
			plan, _, err := planRegions(ctx, p, src, f.regions)
			return plan, err
		}})
	var pe *replicate.PlanError
	if !errors.As(err, &pe) {
		return plan, err
	}
	switch pe.Step {
	case replicate.StepState:
		return plan, runFailed(pe.Err)
	case replicate.StepOutput, replicate.StepFlags:
		return plan, usageError(pe.Err)
	case replicate.StepSource:
		return plan, sourceOpenExit(pe.Err)
	}
	return plan, pe.Err
}

// startStatus shows the replicator's status on w as progress does migrate's: in mode "bar" (a
// terminal) one line redrawn every interval; in mode "plain" (Kubernetes, nohup, CI) a line every
// interval and a last one at the end, with no carriage returns or colour codes; nothing in mode
// "never".
func startStatus(w io.Writer, mode string, interval time.Duration, m *replicate.Metrics) *progress {
	p := &progress{done: make(chan struct{})}
	if mode == "never" {
		return p
	}
	if interval <= 0 {
		interval = 10 * time.Second
	}
	started := time.Now()
	var last int64
	lastAt := started
	read := func() replicationStatus {
		now := time.Now()
		st := readReplicationStatus(m, now.Sub(started))
		if d := now.Sub(lastAt).Seconds(); d > 0 {
			st.rate = float64(st.in-last) / d // a stream's rate now, not since the start
		}
		last, lastAt = st.in, now
		return st
	}
	if mode == "plain" {
		line := func() { fmt.Fprintln(w, read().plain()) }
		p.fin = line
		p.every(interval, line)
		return p
	}
	p.fin = func() { fmt.Fprint(w, "\r\033[K") }
	p.every(interval, func() { fmt.Fprint(w, "\r\033[K"+read().frame()) })
	return p
}

// replicationStatus is one reading of the replicator's metrics.
type replicationStatus struct {
	state                                             string
	in, written, deletes, rejected, files, bytes, lag int64
	partitions                                        int
	rate                                              float64 // messages/s since the previous reading
	elapsed                                           time.Duration
	sql                                               bool  // a table: statements, no files
	statements                                        int64 // SQL statements the table took
}

func readReplicationStatus(m *replicate.Metrics, elapsed time.Duration) replicationStatus {
	state, _ := m.State()
	return replicationStatus{state: state, in: m.MessagesIn.Load(), written: m.RowsWritten.Load(), deletes: m.Deletes.Load(),
		rejected: m.Rejected.Load(), files: m.FilesCommitted.Load(), bytes: m.BytesWritten.Load(), lag: m.Lag(),
		partitions: m.Assigned(), elapsed: elapsed, sql: m.ToSQL(), statements: m.Statements.Load()}
}

// written is what the target holds so far: files and bytes, or a table's statements.
func (s replicationStatus) output() string {
	if s.sql {
		return groupDigits(s.statements) + " statements"
	}
	return groupDigits(s.files) + " files " + transform.FormatSize(s.bytes)
}

// plain is a line for a log: `replicating (consuming): 1,200 messages read, 834 rows written, 24
// deletes, 156 rejected, 240 msg/s, 22 files 20.0 KiB, lag 0 over 3 partitions, elapsed 5s`
// (into a table: `..., 240 msg/s, 31 statements, lag ...`).
func (s replicationStatus) plain() string {
	return fmt.Sprintf("replicating (%s): %s messages read, %s rows written, %s deletes, %s rejected, %s msg/s, %s, lag %s over %d partitions, elapsed %s",
		s.state, groupDigits(s.in), groupDigits(s.written), groupDigits(s.deletes), groupDigits(s.rejected), groupDigits(int64(s.rate)),
		s.output(), groupDigits(s.lag), s.partitions, s.elapsed.Round(time.Second))
}

// frame is the line redrawn on a terminal, short enough for one.
func (s replicationStatus) frame() string {
	return fmt.Sprintf("replicating  %s  %s msgs  %s msg/s  lag %s  partitions %d  %s  deletes %s  rejected %s",
		s.state, groupDigits(s.in), groupDigits(int64(s.rate)), groupDigits(s.lag), s.partitions, s.output(),
		groupDigits(s.deletes), groupDigits(s.rejected))
}

// printReplicationSummary prints what this process replicated; rolls, files, bytes and regions
// only for an output of files (toSQL: a table, which has none of them).
func printReplicationSummary(w io.Writer, title string, m *replicate.Metrics, plan pipeline.RegionPlan, out string, toSQL bool, took time.Duration) {
	in := m.MessagesIn.Load()
	rate := 0.0
	if took > 0 {
		rate = float64(in) / took.Seconds()
	}
	fmt.Fprintln(w, title)
	rows := [][2]string{
		{"messages in", fmt.Sprintf("%d", in)},
		{"rows written", fmt.Sprintf("%d", m.RowsWritten.Load())},
		{"deletes", fmt.Sprintf("%d", m.Deletes.Load())},
		{"rejected", fmt.Sprintf("%d", m.Rejected.Load())},
	}
	// messages that needed nothing applied, so that the figures account for every message
	if n := m.TombstonesDropped.Load(); n > 0 {
		rows = append(rows, [2]string{"tombstones", fmt.Sprintf("%d (Debezium's, after their delete events: nothing left to delete)", n)})
	}
	if n := m.RepeatsSkipped.Load(); n > 0 {
		rows = append(rows, [2]string{"repeats", fmt.Sprintf("%d (events the connector published again: applied once, skipped now)", n)})
	}
	if n := m.OtherTableEvents.Load(); n > 0 {
		by := m.OtherTables()
		names := slices.Sorted(maps.Keys(by))
		for i, t := range names {
			names[i] = fmt.Sprintf("%s %d", t, by[t])
		}
		rows = append(rows, [2]string{"other tables", fmt.Sprintf("%d (events of tables other than the mapping's source.table, not applied: %s)", n, strings.Join(names, ", "))})
	}
	if n := m.TTLCells.Load(); n > 0 {
		rows = append(rows, [2]string{"cells with a TTL", fmt.Sprintf("%d (written with Cassandra's USING TTL, held without it: they stay after Cassandra expires them, unless the table's TTL expires them)", n)})
	}
	// not in "messages in" (never read), but lost to the target: a table keeps no other record
	// of them once the process ends
	if n := m.GapMessages.Load(); n > 0 {
		where := "recorded in manifest.json"
		if toSQL {
			where = "logged at Warn"
		}
		rows = append(rows, [2]string{"messages lost", fmt.Sprintf("%d (in %d gaps the topic's retention deleted before they were read, skipped with --accept-gaps and %s: their changes are not in the output)", n, m.Gaps.Load(), where)})
	}
	if !toSQL {
		rows = append(rows,
			[2]string{"rolls", fmt.Sprintf("%d", m.Rolls.Load())},
			[2]string{"files", fmt.Sprintf("%d", m.FilesCommitted.Load())},
			[2]string{"bytes", transform.FormatSize(m.BytesWritten.Load())},
		)
	}
	rows = append(rows, [2]string{"offset commits", fmt.Sprintf("%d (%d failed)", m.OffsetCommits.Load(), m.CommitErrors.Load())})
	if !toSQL {
		rows = append(rows, [2]string{"regions", fmt.Sprintf("%d (%s)", plan.Count(), plan.Strategy)})
	}
	rows = append(rows,
		[2]string{"time", took.Round(10 * time.Millisecond).String()},
		[2]string{"messages/s", fmt.Sprintf("%.0f", rate)},
		[2]string{"peak memory", transform.FormatSize(peakRSS())},
		[2]string{"output", out},
	)
	table(w, rows)
}

// wholeRowCodes are the rejects of changes a folder of bulk-load files cannot hold and a table
// applies.
var wholeRowCodes = map[string]bool{pipeline.CodePartialUpdate: true, pipeline.CodeRangeTombstone: true}

// rejectedMessages warns, after the summary, of the messages this process rejected, by code and
// with what to do; the replication then exits 1 (as migrate does with rejected rows), since the
// output does not hold those changes.
func rejectedMessages(w io.Writer, m *replicate.Metrics, rejects string, toSQL bool) error {
	codes := m.RejectCodes()
	var n int64
	for _, c := range codes {
		n += c
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nwarning: %d messages rejected by this process (%s): their changes are not in the output; %s names each message and why\n",
		n, verify.CodeCounts(codes), rejects)
	var whole []string
	for c := range codes {
		if wholeRowCodes[c] {
			whole = append(whole, c)
		}
	}
	if len(whole) > 0 && !toSQL {
		sort.Strings(whole)
		fmt.Fprintf(w, "  %s: changes of some columns, and range or partition deletes, which bulk-load files (whole rows) cannot hold:\n"+
			"  replicate Debezium's Cassandra events into the table instead (--out mysql://... or lindorm://...), which applies them\n", strings.Join(whole, ", "))
	}
	return completedWithRejects(fmt.Errorf("stopped, but %d messages were rejected: see %s", n, rejects))
}

// peakHeapProfile rewrites a heap profile whenever the heap in use reaches a new high.
func peakHeapProfile(ctx context.Context, path string) {
	var high uint64
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= high {
			continue
		}
		high = ms.HeapInuse
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
}
