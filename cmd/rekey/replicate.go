package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/sourceuri"
	"github.com/rekey/rekey/transform"
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
	progress     string
	session      time.Duration
	cpuProfile   string
	memProfile   string
}

func newReplicateCmd(g *globalFlags) *cobra.Command {
	f := &replicateFlags{}
	cmd := &cobra.Command{
		Use:   "replicate -m MAPPING --source 'kafka://HOST:PORT/TOPIC?group=G&format=json' --out DIR",
		Short: "Continuous replication from Kafka: rewrite keys, roll region-split files, commit offsets when durable",
		Long: `replicate consumes a Kafka topic as a member of a consumer group, rewrites every message's key with
the mapping and writes region-split bulk-load files in rolls, plus DELETE statements for deletes:

  DIR/region-0003/p0002-<first offset>-<last offset>.parquet   upserts of partition 2 routed to region 3
  DIR/region-0003/p0002-<first offset>-<last offset>.sql       DELETE statements, applied after them
  DIR/rejects/p0002-<first offset>-<last offset>.jsonl         messages that could not be decoded or
                        mapped, with topic, partition and offset (mode 0600: raw messages)
  DIR/manifest.json     regions, files, every segment in the order to apply it, per partition the next
                        offset and rows_in = rows_written + rows_rejected (rewritten per roll)
  DIR/ddl.sql, DIR/bulkload.json, DIR/replicate.json (mapping fingerprint, region plan, group: fixed)

A roll closes at --roll-size or --roll-interval after its first message, whichever comes first, even
when no further message arrives. Offsets are committed to Kafka only after every file holding the
roll's messages is durable (written, fsynced, renamed, folder fsynced, manifest rewritten: the roll
commits when the manifest lists it). After a crash, a roll the manifest does not list is replayed
whole and its leftover files removed; a listed one is not replayed, so no message is written,
counted or rejected twice.

Run several processes with the same group AND THE SAME --out to share the partitions: the members
of a group share one output folder (a shared file system with flock, e.g. NFSv4, across hosts;
one bucket prefix once object storage is supported), where the next owner of a partition continues
its rolls and removes what a killed member left. Separate folders would each keep the messages a
killed member committed before its offset and the replay of them. On a rebalance each member closes
and commits its rolls before handing partitions over. SIGTERM or Ctrl-C closes and commits the
current rolls, commits the offsets, leaves the group and exits 0 (a second Ctrl-C aborts at once;
the open rolls are then replayed by the next run).

Message formats (format=): json, a row object per message (a null value deletes the key given
by the message key, a JSON object of key columns); debezium, Debezium change events (op c/r/u/d,
before/after, with or without the JSON converter's schema/payload wrapping; Cassandra connector
cells {"value": ...} too). An update whose new values give another target key deletes the old one.

The region plan comes from the mapping (count, split_keys, hash-prefix and bucket keys). A
quantile plan (any other first key column) is placed from a sample of the messages the topic
retains, taken at the first start; replicate.json keeps it for every later start.

` + kafka.URIHelp,
		Example: `  rekey replicate -m mappings/orders.yaml --source 'kafka://b1:9092,b2:9092/orders?group=rekey-orders&format=debezium' --out /data/orders
  REKEY_KAFKA_PASSWORD=... rekey replicate -m mappings/orders.yaml \
    --source 'kafka://b1:9093/orders?group=g&sasl=scram-sha-512&user=rekey&tls=true&ca=/etc/ca.pem' \
    --out /data/orders --roll-size 128MiB --roll-interval 5m --metrics-addr :9464`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReplicate(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.mapping, "mapping", "m", "", "mapping file (YAML) describing source columns and target key")
	fl.StringVar(&f.source, "source", "", "kafka://HOST:PORT[,HOST:PORT]/TOPIC?group=G&format=json|debezium (see below)")
	fl.StringVar(&f.out, "out", "", "output directory, the same for every member of the group (a restart continues it)")
	fl.StringVar(&f.format, "format", "parquet", "data file format: parquet (zstd) or csv")
	fl.IntVar(&f.regions, "regions", 0, "number of pre-split regions at the first start (overrides the mapping's regions:)")
	fl.StringVar(&f.rollSize, "roll-size", "64MiB", "close a partition's roll when its files reach this size")
	fl.DurationVar(&f.rollInterval, "roll-interval", time.Minute, "close a roll this long after its first message, even if no more arrive")
	fl.StringVar(&f.memory, "memory", "512MiB", "memory budget of the whole process; a quarter of it buffers the rows of the open files")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics (Prometheus text format) and /healthz on this address, e.g. :9464")
	fl.StringVar(&f.progress, "progress", "auto", "status line on stderr: auto (on a terminal), always, never")
	fl.DurationVar(&f.session, "session-timeout", 30*time.Second, "consumer group session timeout")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the run to this file")
	fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.memProfile, "mem-profile", "", "write a heap profile taken at the peak heap to this file")
	fl.MarkHidden("mem-profile")
	return cmd
}

func runReplicate(cmd *cobra.Command, g *globalFlags, f *replicateFlags) error {
	logger, err := g.logger()
	if err != nil {
		return exitWith(2, err)
	}
	defer logger.Sync()
	if f.out == "" {
		return exitWith(2, errors.New("--out is required: the directory for the bulk-load files"))
	}
	if f.source == "" {
		return exitWith(2, fmt.Errorf("--source is required:\n  %s", kafka.URIHelp))
	}
	kcfg, err := kafka.ParseURI(f.source)
	if err != nil {
		return exitWith(2, err)
	}
	if kcfg.Group == "" {
		return exitWith(2, fmt.Errorf("--source %s: name the consumer group: ...?group=NAME", sourceuri.Redact(f.source)))
	}
	format, err := fileFormat(f.format)
	if err != nil {
		return exitWith(2, err)
	}
	rollSize, err := parseSize("--roll-size", f.rollSize)
	if err != nil {
		return exitWith(2, err)
	}
	memory, err := parseSize("--memory", f.memory)
	if err != nil {
		return exitWith(2, err)
	}
	if f.rollInterval <= 0 {
		return exitWith(2, errors.New("--roll-interval must be positive"))
	}
	prog, err := loadProgram(f.mapping)
	if err != nil {
		return err
	}
	setMemoryBudget(memory) // GOGC=400 and a soft memory limit, as migrate does
	if os.Getenv("GOMEMLIMIT") == "" {
		// more headroom than migrate's 90%: every partition may close its roll at once, and
		// the limit bounds the Go heap, not the whole resident set
		debug.SetMemoryLimit(memory * 3 / 4)
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return exitWith(2, err)
		}
		pprof.StartCPUProfile(pf)
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}

	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if f.memProfile != "" {
		go peakHeapProfile(ctx, f.memProfile)
	}
	plan, err := replicationPlan(ctx, f, kcfg, prog, logger)
	if err != nil {
		return err
	}
	r, err := replicate.New(replicate.Config{
		Kafka:        kcfg,
		Program:      prog,
		Plan:         plan,
		Format:       format,
		OutDir:       f.out,
		RollSize:     rollSize,
		RollInterval: f.rollInterval,
		Memory:       memory / 4,
		Group:        replicate.GroupOptions{SessionTimeout: f.session, HeartbeatInterval: max(f.session/10, 100*time.Millisecond)},
		Version:      version,
		Logger:       logger.Named("replicate"),
	})
	if err != nil {
		return exitWith(2, err)
	}
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return exitWith(2, fmt.Errorf("--metrics-addr: %w", err))
		}
		srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		logger.Info("serving /metrics and /healthz", zap.String("addr", ln.Addr().String()))
	}

	stop := make(chan struct{})
	defer onInterrupt("\nrekey: stopping: closing and committing the open rolls (Ctrl-C again to abort at once)",
		func() { close(stop) }, cancel)()

	logger.Info("replication starting", zap.String("topic", kcfg.Topic), zap.String("group", kcfg.Group),
		zap.Int("regions", plan.Count()), zap.String("strategy", plan.Strategy), zap.String("out", f.out))
	started := time.Now()
	status := startStatus(f.progress, r.Metrics())
	runErr := r.Run(ctx, stop)
	status.finish()
	printReplicationSummary(cmd.OutOrStdout(), r.Metrics(), plan, f.out, time.Since(started))
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		return exitWith(130, errors.New("aborted: the open rolls were discarded and will be replayed by the next run"))
	}
	return fmt.Errorf("replication failed: %w\nthe files and offsets committed so far are consistent; run the same command to continue", runErr)
}

// replicationPlan is the directory's plan when it has one (the plan never changes for an
// output directory), else the mapping's, placed from a sample of the retained messages when
// the strategy needs one.
func replicationPlan(ctx context.Context, f *replicateFlags, kcfg kafka.Config, p *transform.Program, logger *zap.Logger) (pipeline.RegionPlan, error) {
	st, err := replicate.LoadState(f.out)
	if err != nil {
		return pipeline.RegionPlan{}, exitWith(2, err)
	}
	if st != nil {
		if f.regions > 0 && f.regions != st.Plan.Count() {
			logger.Warn("--regions ignored: the output directory keeps the plan of its first start", zap.Int("regions", st.Plan.Count()))
		}
		return st.Plan, nil
	}
	// count, split_keys, hash-prefix and bucket plans need no sample; quantile plans and
	// regions.size (a count from the data size) are placed from the retained messages
	if plan, err := p.PlanRegions(transform.RegionRequest{Count: f.regions}); err == nil &&
		(plan.Strategy != "single" || p.RegionSize() == transform.DefaultRegionSize) {
		return plan, nil
	}
	wcfg := kcfg
	wcfg.Start, wcfg.Max = kafka.StartEarliest, 0
	win, err := kafka.NewWindow(ctx, wcfg, p.Source(), logger.Named("source.kafka"))
	if err != nil {
		return pipeline.RegionPlan{}, exitWith(2, err)
	}
	plan, _, err := planRegions(ctx, p, win, f.regions)
	return plan, err
}

// status prints a one-line status on stderr every second on a terminal (or with
// --progress always): messages, rate, lag, partitions, files, rejects.
type status struct {
	done chan struct{}
	wg   sync.WaitGroup
	tty  bool
}

func startStatus(mode string, m *replicate.Metrics) *status {
	s := &status{done: make(chan struct{}), tty: term.IsTerminal(int(os.Stderr.Fd()))}
	if !(mode == "always" || mode == "auto" && s.tty) {
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last int64
		lastAt := time.Now()
		for {
			select {
			case <-s.done:
				if s.tty {
					fmt.Fprint(os.Stderr, "\r\033[K")
				}
				return
			case now := <-t.C:
				in := m.MessagesIn.Load()
				rate := float64(in-last) / now.Sub(lastAt).Seconds()
				last, lastAt = in, now
				state, _ := m.State()
				line := fmt.Sprintf("replicating  %s  %d msgs  %.0f msg/s  lag %d  partitions %d  files %d (%s)  deletes %d  rejected %d",
					state, in, rate, m.Lag(), m.Assigned(), m.FilesCommitted.Load(), transform.FormatSize(m.BytesWritten.Load()), m.Deletes.Load(), m.Rejected.Load())
				if s.tty {
					fmt.Fprint(os.Stderr, "\r\033[K"+line)
				} else {
					fmt.Fprintln(os.Stderr, line)
				}
			}
		}
	}()
	return s
}

func (s *status) finish() {
	close(s.done)
	s.wg.Wait()
}

func printReplicationSummary(w io.Writer, m *replicate.Metrics, plan pipeline.RegionPlan, out string, took time.Duration) {
	in := m.MessagesIn.Load()
	rate := 0.0
	if took > 0 {
		rate = float64(in) / took.Seconds()
	}
	fmt.Fprintln(w, "Replication summary (this process)")
	table(w, [][2]string{
		{"messages in", fmt.Sprintf("%d", in)},
		{"rows written", fmt.Sprintf("%d", m.RowsWritten.Load())},
		{"deletes", fmt.Sprintf("%d", m.Deletes.Load())},
		{"rejected", fmt.Sprintf("%d", m.Rejected.Load())},
		{"rolls", fmt.Sprintf("%d", m.Rolls.Load())},
		{"files", fmt.Sprintf("%d", m.FilesCommitted.Load())},
		{"bytes", transform.FormatSize(m.BytesWritten.Load())},
		{"offset commits", fmt.Sprintf("%d (%d failed)", m.OffsetCommits.Load(), m.CommitErrors.Load())},
		{"regions", fmt.Sprintf("%d (%s)", plan.Count(), plan.Strategy)},
		{"time", took.Round(10 * time.Millisecond).String()},
		{"messages/s", fmt.Sprintf("%.0f", rate)},
		{"peak memory", transform.FormatSize(peakRSS())},
		{"output", out},
	})
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
