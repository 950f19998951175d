// Package migrate is `rekey migrate` into bulk-load files: Open (the output, with its resume
// checks), Plan (the region plan), Run (the pipeline from the source into region files) and
// Finish (ddl.sql, bulkload.json, manifest.json). The command line opens the pieces (the
// mapping's program, the source, the --out store), shows progress and prints the summary; a run
// into a SQL table shares Execute.
package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/migrate/runner"
	"github.com/rekey/rekey/output"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/formats"
	"github.com/rekey/rekey/sink/lindorm"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/transform"
)

// Config is one migration into bulk-load files: what the command line chose and the pieces it
// opened.
type Config struct {
	Out     string      // --out as given: messages, the bulkload job
	Store   store.Store // --out opened
	Program *transform.Program
	Source  pipeline.Source
	Format  files.Format
	// Shard is the part of the source this run reads (the zero Shard: all of it); with SharedOut
	// the shards of one migration write one output together.
	Shard     pipeline.Shard
	SharedOut bool
	Regions   int // --regions (0: the mapping's)
	Resume    bool
	Overwrite bool
	// MaxFileSize and Memory (the whole budget: the sink takes a quarter) bound the files and
	// the buffers; Sort writes each file's rows in key order.
	MaxFileSize int64
	Memory      int64
	Sort        bool
	// TimeSlice is the width of the time slices of a mapping with target.write_time (0:
	// files.DefaultTimeSlice): each slice's rows go to files of their own, loaded by a bulkload
	// job of their own stamped with the slice's newest write time, at most the run's start.
	TimeSlice time.Duration
	Options   Options
	Job       lindorm.JobOptions // the bulkload job's options (Format and Out are set here)
	Next      lindorm.NextRun    // the next steps printed after the run
	// Plan makes a new run's region plan (a sample of the source, then the mapping's plan); a
	// resume keeps its checkpoint's.
	Plan    func(ctx context.Context) (pipeline.RegionPlan, error)
	Version string // rekey's, recorded in the manifest
	Logger  *zap.Logger
}

// Options are the pipeline's: how many workers, how often a checkpoint, how many rejects, and
// the logger it names "pipeline".
type Options struct {
	Workers         int
	CheckpointEvery time.Duration
	RejectLimit     runner.RejectLimit
	Logger          *zap.Logger
}

// Refused is an error of the command line (a resume of another job, a plan other shards do not
// share, a sink configuration): running again as is fails the same way.
type Refused struct{ Err error }

func (r *Refused) Error() string { return r.Err.Error() }
func (r *Refused) Unwrap() error { return r.Err }

// Migration is an opened output of a migration.
type Migration struct {
	cfg    Config
	out    *output.Output
	plan   pipeline.RegionPlan
	prefix string // the shard's file name prefix in a shared output
}

// Open opens the output: a new one, a resume of the same job, or a shard's part of a shared one.
func Open(ctx context.Context, cfg Config) (*Migration, error) {
	name := cfg.Format.Name()
	cfg.Job.FileType, cfg.Job.Out = formats.LoadAs(name), cfg.Out
	// the run ends by writing the bulkload job: a format the job cannot read is refused before
	// any row is read, not after the last
	if cfg.Job.FileType == "" {
		return nil, fmt.Errorf("--format %s: lindorm: unknown bulkload file type %q (want %s)", name, name, formats.Loadable("or"))
	}
	verifier, _ := cfg.Format.(output.Verifier)
	prog := cfg.Program
	spec := output.Spec{
		Dir: cfg.Out, Fingerprint: prog.Fingerprint(), Format: cfg.Format.Name(), Source: cfg.Source,
		Regions: cfg.Regions, Resume: cfg.Resume, Verify: verifier, Overwrite: cfg.Overwrite,
	}
	m := &Migration{cfg: cfg}
	var err error
	if cfg.SharedOut {
		m.out, err = output.OpenShard(ctx, cfg.Store, cfg.Shard, spec, cfg.Logger.Named("pipeline"))
		m.prefix = output.ShardFilePrefix(cfg.Shard)
		m.cfg.Next.SharedOut = true
	} else {
		m.out, err = output.Open(ctx, cfg.Store, spec, cfg.Logger.Named("pipeline"))
	}
	if errors.Is(err, output.ErrRefusedResume) {
		return nil, &Refused{err}
	} else if err != nil {
		return nil, err
	}
	if cp := m.out.Checkpoint; cp != nil && len(cp.Job) > 0 {
		if err := checkJobSettings(cp.Job); err != nil {
			m.out.Close()
			return nil, &Refused{fmt.Errorf("--resume: %s: %w", cfg.Out, err)}
		}
	}
	return m, nil
}

// checkJobSettings reads the settings a checkpoint keeps (jobSettings) whole: one this rekey
// does not know, a newer rekey's, would be dropped without a word by the resume.
func checkJobSettings(job json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(job))
	dec.DisallowUnknownFields()
	err := dec.Decode(new(jobSettings))
	if field, ok := strings.CutPrefix(fmt.Sprint(err), "json: unknown field "); ok {
		return fmt.Errorf("the checkpoint's job settings were written by another rekey version (they hold the setting %s, which this rekey does not know): "+
			"resume with the rekey that began the run, or start over with --overwrite or in a new --out directory", field)
	} else if err != nil {
		return fmt.Errorf("the checkpoint's job settings are damaged (%v): the run cannot be resumed: start over with --overwrite or in a new --out directory", err)
	}
	return nil
}

// Close releases the output's lock.
func (m *Migration) Close() error { return m.out.Close() }

// Source and Program are what the migration reads and how it rewrites the rows.
func (m *Migration) Source() pipeline.Source     { return m.cfg.Source }
func (m *Migration) Program() *transform.Program { return m.cfg.Program }

// Output is the opened output; its Store is fenced: it writes nothing once another run took the
// output over.
func (m *Migration) Output() *output.Output { return m.out }

// jobSettings are the settings a run's checkpoints keep: the load job's names and resources its
// first attempt was given (--lts-source, --lts-target, --namespace, --lts-driver-spec,
// --lts-instances), which a resume not given them again takes; and the settings that shaped its
// files (FileSettings; nil in a checkpoint of an earlier rekey), which a resume continues.
type jobSettings struct {
	Source     string `json:"src"`
	Target     string `json:"dst"`
	Namespace  string `json:"namespace"`
	DriverSpec string `json:"driver_spec"`
	Instances  int    `json:"instances"`

	Sort        *bool  `json:"sort,omitempty"`
	MaxFileSize *int64 `json:"max_file_size,omitempty"`
	TimeSlice   string `json:"time_slice,omitempty"` // with target.write_time
}

func jobSettingsOf(cfg Config) []byte {
	j, fs := cfg.Job, cfg.files()
	s := jobSettings{Source: j.Source, Target: j.Target, Namespace: j.Namespace, DriverSpec: j.DriverSpec, Instances: j.Instances,
		Sort: &fs.Sort, MaxFileSize: &fs.MaxFileSize}
	if fs.TimeSlice > 0 {
		s.TimeSlice = fs.TimeSlice.String()
	}
	b, _ := json.Marshal(s)
	return b
}

// resumed is the settings the resumed run's checkpoint keeps; false when this is no resume or
// its checkpoint keeps none.
func (m *Migration) resumed() (jobSettings, bool) {
	cp := m.out.Checkpoint
	var s jobSettings
	if cp == nil || len(cp.Job) == 0 || json.Unmarshal(cp.Job, &s) != nil {
		return jobSettings{}, false
	}
	return s, true
}

// ResumedJob is the load job's settings the resumed run's first attempt was given; false when
// this is no resume, or its checkpoint keeps none (written by an earlier rekey).
func (m *Migration) ResumedJob() (lindorm.JobOptions, bool) {
	s, ok := m.resumed()
	if !ok {
		return lindorm.JobOptions{}, false
	}
	j := m.cfg.Job
	j.Source, j.Target, j.Namespace, j.DriverSpec, j.Instances = s.Source, s.Target, s.Namespace, s.DriverSpec, s.Instances
	return j, true
}

// FileSettings are the settings that shape a run's files: a resume writes the rest of the rows
// the way its first attempt wrote the others, so that the output is not a mix of two kinds.
type FileSettings struct {
	Sort        bool
	MaxFileSize int64
	TimeSlice   time.Duration // the slices' width with target.write_time; 0 without
}

// files is the FileSettings cfg gives.
func (cfg Config) files() FileSettings {
	fs := FileSettings{Sort: cfg.Sort, MaxFileSize: cfg.MaxFileSize}
	if cfg.Program != nil && cfg.Program.WriteTime() {
		fs.TimeSlice = cfg.TimeSlice
		if fs.TimeSlice == 0 {
			fs.TimeSlice = files.DefaultTimeSlice
		}
	}
	return fs
}

// Files is the FileSettings this run was configured with (SetFiles: as a resume settles them).
func (m *Migration) Files() FileSettings { return m.cfg.files() }

// ResumedFiles is the FileSettings of the resumed run's first attempt; false when this is no
// resume, or its checkpoint does not keep them (written by an earlier rekey).
func (m *Migration) ResumedFiles() (FileSettings, bool) {
	s, ok := m.resumed()
	if !ok || s.Sort == nil || s.MaxFileSize == nil {
		return FileSettings{}, false
	}
	fs := FileSettings{Sort: *s.Sort, MaxFileSize: *s.MaxFileSize}
	if s.TimeSlice != "" {
		d, err := time.ParseDuration(s.TimeSlice)
		if err != nil {
			return FileSettings{}, false
		}
		fs.TimeSlice = d
	}
	return fs, true
}

// settingsDiffer lists the settings that shape the files which the shard peer's checkpoint
// (job: its Job) keeps otherwise than this run has them; none when it keeps none.
func (m *Migration) settingsDiffer(peer string, job json.RawMessage) []string {
	var s jobSettings
	if len(job) == 0 || json.Unmarshal(job, &s) != nil || s.Sort == nil || s.MaxFileSize == nil {
		return nil
	}
	here := m.cfg.files()
	var d []string
	if *s.Sort != here.Sort {
		d = append(d, fmt.Sprintf("--sort: %t in shard %s, %t here", *s.Sort, peer, here.Sort))
	}
	if *s.MaxFileSize != here.MaxFileSize {
		d = append(d, fmt.Sprintf("--max-file-size: %s in shard %s, %s here", transform.FormatSize(*s.MaxFileSize), peer, transform.FormatSize(here.MaxFileSize)))
	}
	return d
}

// SetFiles sets the settings that shape the files (a resume's, settled from ResumedFiles and
// the flags given).
func (m *Migration) SetFiles(fs FileSettings) {
	m.cfg.Sort, m.cfg.MaxFileSize = fs.Sort, fs.MaxFileSize
	if fs.TimeSlice > 0 {
		m.cfg.TimeSlice = fs.TimeSlice
	}
}

// SetJob sets the load job's options (a resume's, settled from ResumedJob and the flags given).
func (m *Migration) SetJob(j lindorm.JobOptions) { m.cfg.Job = j }

// Complete tells whether this is a resume of a run whose source was read to its end.
func (m *Migration) Complete() bool { return m.out.Checkpoint != nil && m.out.Checkpoint.Complete }

// Plan settles the region plan: the checkpoint's on a resume, else a new one that a shard of a
// shared output shares with the others (their splits, when it is theirs but for the splits); a
// shard whose files would be made otherwise than the others' (--sort, --max-file-size) is refused.
func (m *Migration) Plan(ctx context.Context) (pipeline.RegionPlan, error) {
	// the shards' files are loaded as one output: all made the same way (checked here, after a
	// resume has settled its settings with SetFiles)
	if err := m.out.CheckSharedSettings(m.settingsDiffer); err != nil {
		return pipeline.RegionPlan{}, &Refused{err}
	}
	if cp := m.out.Checkpoint; cp != nil {
		m.plan = cp.Plan
		return m.plan, nil
	}
	plan, err := m.cfg.Plan(ctx)
	if err != nil {
		return plan, err
	}
	plan = m.out.SharedPlan(plan)
	if err := m.out.CheckSharedPlan(plan); err != nil {
		return plan, &Refused{err}
	}
	m.plan = plan
	return plan, nil
}

// Watch is shown a run as it goes: the counters, the bytes written so far (those of the files a
// resume keeps included) and the rows a resume starts from; it returns what ends the display.
type Watch func(counters *pipeline.Counters, bytes func() int64, before int64) (done func(), err error)

// Run reads the source into region files with the plan Plan settled; stop ends it gracefully
// (the rows already read are committed). runErr is the run's outcome; err says it could not
// start.
func (m *Migration) Run(ctx context.Context, stop <-chan struct{}, watch Watch) (res pipeline.Result, runErr, err error) {
	results, runErr, err := RunTogether(ctx, []*Migration{m}, stop, watch)
	if len(results) > 0 {
		res = results[0]
	}
	return res, runErr, err
}

// RunTogether fills several migrations' outputs from one read of their source (each opened on
// the same Source, each with its own mapping, plan and output): one feed, one transform and sink
// per migration in every worker. The results are in the order of ms; runErr is the run's
// outcome; err says it could not start. The first migration's options (workers, checkpoints,
// reject limit) apply to all.
func RunTogether(ctx context.Context, ms []*Migration, stop <-chan struct{}, watch Watch) (results []pipeline.Result, runErr, err error) {
	parts := make([]part, len(ms))
	var sinks []pipeline.Sink
	for i, m := range ms {
		cfg := m.cfg
		fcfg := files.Config{
			Store: m.out.Store, Schema: cfg.Program.Target(), Plan: m.plan, Format: cfg.Format,
			MaxFileSize: cfg.MaxFileSize, Memory: cfg.Memory / 4 / int64(len(ms)), Sort: cfg.Sort, NamePrefix: m.prefix,
			ExpectedRows: max(estimatedRows(cfg.Source), 0),
		}
		sink, bytes, err := newSink(ctx, fcfg, cfg)
		if err != nil {
			for _, s := range sinks {
				s.Abort(context.WithoutCancel(ctx))
			}
			return nil, nil, &Refused{err}
		}
		sinks = append(sinks, sink)
		cfg.Logger.Info("migration starting", zap.String("mapping", cfg.Program.Name()), zap.String("table", cfg.Program.Table()),
			zap.Int("regions", m.plan.Count()), zap.String("strategy", m.plan.Strategy), zap.String("out", cfg.Out))
		parts[i] = part{prog: cfg.Program, t: Target{Sink: sink, Output: m.out, Format: cfg.Format.Name(), Plan: m.plan, Bytes: bytes, Job: jobSettingsOf(cfg)}, files: true}
	}
	return execute(ctx, ms[0].cfg.Source, parts, ms[0].cfg.Options, stop, watch)
}

// newSink opens the files sink of one migration: one files.Sink, or with target.write_time a
// files.SliceSink of one files.Sink per time slice (the budget split across the most slices it
// may open); bytes counts what it has written so far.
func newSink(ctx context.Context, fcfg files.Config, cfg Config) (sink pipeline.Sink, bytes func() int64, err error) {
	log := cfg.Logger.Named("sink.files")
	if !cfg.Program.WriteTime() {
		s, err := files.New(ctx, fcfg, log)
		if err != nil {
			return nil, nil, err
		}
		return s, func() int64 { return s.Stats().Bytes }, nil
	}
	if fcfg.NamePrefix != "" {
		return nil, nil, errors.New("target.write_time writes one file set per time slice, which shards in one output (--shared-out) cannot share: run without --shard")
	}
	fcfg.Memory = files.SliceMemory(fcfg.Memory, files.DefaultMaxSlices)
	s, err := files.NewSliceSink(files.SliceConfig{Width: cfg.TimeSlice, New: func(ctx context.Context, prefix string) (*files.Sink, error) {
		c := fcfg
		c.NamePrefix = prefix
		return files.New(ctx, c, log.With(zap.String("slice", prefix)))
	}})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Bytes, nil
}

// estimatedRows is the source's row estimate, -1 when it has none.
func estimatedRows(src pipeline.Source) int64 {
	if s, ok := src.(pipeline.Sizer); ok {
		return s.EstimatedRows()
	}
	return -1
}

// Target is where Execute writes: a sink, and the output that holds the checkpoint and rejects
// (and the checkpoint to resume from).
type Target struct {
	Sink   pipeline.Sink
	Output *output.Output
	Format string
	Plan   pipeline.RegionPlan
	Bytes  func() int64 // bytes written so far, for the progress display
	Job    []byte       // the load job's settings, kept in the checkpoints (pipeline.Checkpoint.Job)
}

// Execute runs the pipeline from src into t: the journal of t's output, the workers applying
// prog, a checkpoint every opt.CheckpointEvery. stop ends it gracefully. runErr is the run's
// outcome; err says it could not start.
func Execute(ctx context.Context, prog *transform.Program, src pipeline.Source, t Target, opt Options, stop <-chan struct{},
	watch Watch) (res pipeline.Result, runErr, err error) {
	results, runErr, err := execute(ctx, src, []part{{prog: prog, t: t}}, opt, stop, watch)
	if len(results) > 0 {
		res = results[0]
	}
	return res, runErr, err
}

// part is one table of a run: its mapping and where it writes; files: into files, whose bytes
// count once committed (a table's are its statements').
type part struct {
	prog  *transform.Program
	t     Target
	files bool
}

// execute runs the pipeline from src into every part (one read): the journal of each part's
// output, the workers applying each part's mapping, a checkpoint every opt.CheckpointEvery.
func execute(ctx context.Context, src pipeline.Source, parts []part, opt Options, stop <-chan struct{},
	watch Watch) (results []pipeline.Result, runErr, err error) {
	tables := make([]runner.Table, len(parts))
	for i, p := range parts {
		journal, err := p.t.Output.Journal(src, p.prog.Source())
		if err != nil {
			return nil, nil, err
		}
		defer journal.Close()
		prog := p.prog
		tables[i] = runner.Table{NewTransformer: func() runner.Transformer { return prog.NewEvaluator() },
			Target: prog.Target(), Plan: p.t.Plan, Sink: p.t.Sink, Journal: journal, Fingerprint: prog.Fingerprint(), Format: p.t.Format, Job: p.t.Job}
	}
	first := tables[0]
	r, err := runner.New(runner.Config{
		Source:          src,
		NewTransformer:  first.NewTransformer,
		Target:          first.Target,
		Plan:            first.Plan,
		Sink:            first.Sink,
		Journal:         first.Journal,
		Fingerprint:     first.Fingerprint,
		Format:          first.Format,
		Job:             first.Job,
		Also:            tables[1:],
		Workers:         opt.Workers,
		RejectLimit:     opt.RejectLimit,
		CheckpointEvery: opt.CheckpointEvery,
		Logger:          opt.Logger.Named("pipeline"),
	})
	if err != nil {
		return nil, nil, err
	}
	resume := parts[0].t.Output.Checkpoint
	var before int64
	if resume != nil {
		before = resume.RowsIn
	}
	// the files earlier attempts committed count as their rows do (before), and as the
	// summary counts them
	var earlier int64
	for _, p := range parts {
		if cp := p.t.Output.Checkpoint; cp != nil {
			for _, f := range cp.Files {
				earlier += f.Bytes
			}
		}
	}
	var final atomic.Int64 // the bytes of the files committed, once the run is over; -1 before
	final.Store(-1)
	bytes := func() int64 {
		if n := final.Load(); n >= 0 {
			return n
		}
		n := earlier
		for _, p := range parts {
			n += p.t.Bytes()
		}
		return n
	}
	done, err := watch(&r.Counters, bytes, before)
	if err != nil {
		return nil, nil, err
	}
	_, runErr = r.Run(ctx, stop, resume)
	results = r.Results()
	if parts[0].files {
		// the last progress line shows the bytes the summary does: a run that failed or was
		// aborted keeps only the files its last checkpoint lists
		var n int64
		for _, res := range results {
			for _, f := range res.Files {
				n += f.Bytes
			}
		}
		final.Store(n)
	}
	done()
	return results, runErr, nil
}

// Finals are a finished run's final files as written, for its summary and next steps.
type Finals struct {
	Manifest *output.Manifest
	Jobs     []*lindorm.BulkloadJob // bulkload.json's: one, or one per time slice (target.write_time)
	Next     lindorm.NextRun
}

// Finish writes the final files of a run whose source was read to its end (ddl.sql,
// bulkload.json, manifest.json last); nextSince (zero: none) is the since= of the next catch-up.
func (m *Migration) Finish(ctx context.Context, res pipeline.Result, nextSince time.Time, catchupSource string) (*Finals, error) {
	cfg := m.cfg
	prog := cfg.Program
	next := cfg.Next
	if !nextSince.IsZero() {
		next.NextSince, next.CatchupSource = nextSince, catchupSource
	}
	table := lindorm.Table{Schema: prog.Target(), Options: prog.Options(), Mapping: prog.Name(), Fingerprint: prog.Fingerprint(),
		RegionSize: prog.RegionSize(), Version: cfg.Version, WriteTime: prog.WriteTime()}
	man, files, jobs, err := lindorm.Finals(table, m.plan, cfg.Format.Name(), res, nextSince, cfg.Job)
	if err != nil {
		return nil, err
	}
	if err := m.out.Finish(ctx, man, files...); err != nil {
		return nil, err
	}
	next.RowsWritten = res.RowsWritten
	return &Finals{Manifest: man, Jobs: jobs, Next: next}, nil
}

// Finished tells whether a complete run's final files are all written (a run killed before
// writing manifest.json, which is written last, is complete but not finished).
func (m *Migration) Finished(ctx context.Context) (bool, error) {
	ok, err := m.out.Finished(ctx)
	if err != nil {
		return false, fmt.Errorf("--resume: %w", err)
	}
	return ok, nil
}
