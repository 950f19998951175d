// Package runner is a migration's run: the engine (pipeline.Engine) with the transform and the
// sink in its workers, checkpoints as consistent cuts (commit, then save the positions the engine
// acknowledged), the reject limit, and how a run ends (settle: which error, if any; finish: the
// last cut or an abort). migrate runs it into files, and into a table.
package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
)

// Transformer turns source records into target rows. One per worker goroutine.
type Transformer interface {
	// Apply fills out (one value per target column) or says why the record is rejected.
	Apply(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError
	// Reset releases memory the last batch's rows pointed into; called after the sink's Write returned.
	Reset()
}

// CellTimer is a Transformer that gives each row's cell write times (Row.Times): the worker
// asks it for records that carry times (Record.Times).
type CellTimer interface {
	CellTimes(r *pipeline.Record, times []int64)
}

// RejectLimit aborts a run when too many rows are rejected: more than *Count rows (Count set;
// 0 aborts at the first reject), or more than Percent of the rows read (Percent > 0, judged once
// MinRowsForPercent rows have been read, so that a handful of rows never decides). The zero
// value sets no limit.
type RejectLimit struct {
	Count   *int64
	Percent float64
}

// Config wires one run.
type Config struct {
	Source         pipeline.Source
	NewTransformer func() Transformer
	Target         pipeline.TargetSchema
	Plan           pipeline.RegionPlan
	Sink           pipeline.Sink
	// Journal records the rejects and the checkpoints (package output: the output's).
	Journal     pipeline.Journal
	Fingerprint string // of the resolved mapping, stored in checkpoints
	Format      string // of the data files, stored in checkpoints
	Job         []byte // the load job's settings, stored in checkpoints (Checkpoint.Job)
	// Also are more tables filled from the same read of Source, one mapping each: every record
	// goes through each one's transform into its sink, with its own journal, checkpoints, counts
	// and reject limit. A run with Also starts from the beginning (no resume).
	Also        []Table
	Workers     int // transform goroutines; default GOMAXPROCS
	RejectLimit RejectLimit
	// CheckpointEvery is how often the run commits open files and saves a checkpoint; 0 means
	// only at the end. Each cut closes every open file, so shorter intervals mean smaller files.
	CheckpointEvery time.Duration
	Logger          *zap.Logger
}

// Table is one more table a run fills from its source (Config.Also): what Config says of the
// first.
type Table struct {
	NewTransformer func() Transformer
	Target         pipeline.TargetSchema
	Plan           pipeline.RegionPlan
	Sink           pipeline.Sink
	Journal        pipeline.Journal
	Fingerprint    string
	Format         string
	Job            []byte
	// Counters, when set, are the table's live figures (nil: the runner keeps its own).
	Counters *pipeline.Counters
}

// ErrTooManyRejects is wrapped by the error a run returns when the reject limit was exceeded.
var ErrTooManyRejects = errors.New("too many rejected rows")

// ErrInterrupted is returned when stop was closed: what was read is committed and checkpointed.
var ErrInterrupted = errors.New("interrupted")

// Runner executes one run; Counters (the first table's) may be read while Run is in progress.
type Runner struct {
	cfg      Config
	Counters pipeline.Counters
	legs     []*leg
	// overLeg is the table whose rejects went over the limit while rows were read (-1: none)
	overLeg atomic.Int32
}

// leg is one table of a run: its transform, sink, journal, counts and checkpoint.
type leg struct {
	Table
	router  *pipeline.Router // Plan's
	cp      *pipeline.Checkpoint
	results pipeline.Result
	// turns orders the writes of an OrderedSink (a table) by batch: nil for other sinks
	turns *pipeline.Turnstile
}

// New validates the configuration.
func New(cfg Config) (*Runner, error) {
	if cfg.Source == nil {
		return nil, errors.New("runner: no source")
	}
	r := &Runner{cfg: cfg}
	first := Table{NewTransformer: cfg.NewTransformer, Target: cfg.Target, Plan: cfg.Plan, Sink: cfg.Sink, Journal: cfg.Journal,
		Fingerprint: cfg.Fingerprint, Format: cfg.Format, Job: cfg.Job, Counters: &r.Counters}
	for i, t := range append([]Table{first}, cfg.Also...) {
		switch {
		case t.Sink == nil:
			return nil, fmt.Errorf("runner: table %d: no sink", i+1)
		case t.NewTransformer == nil:
			return nil, fmt.Errorf("runner: table %d: no transform", i+1)
		case t.Journal == nil:
			return nil, fmt.Errorf("runner: table %d: no journal (the output's rejects and checkpoints)", i+1)
		case len(t.Target.Columns) == 0:
			return nil, fmt.Errorf("runner: table %d: target schema has no columns", i+1)
		}
		if t.Counters == nil {
			t.Counters = &pipeline.Counters{}
		}
		r.legs = append(r.legs, &leg{Table: t, router: t.Plan.Router()})
	}
	if cfg.Workers <= 0 {
		r.cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		r.cfg.Logger = zap.NewNop()
	}
	r.overLeg.Store(-1)
	return r, nil
}

// Results are the outcome of each table of the last Run, the first table's first (Run returns
// it too).
func (r *Runner) Results() []pipeline.Result {
	out := make([]pipeline.Result, len(r.legs))
	for i, l := range r.legs {
		out[i] = l.results
	}
	return out
}

// Run moves every record from the source through the transform into the sink. Closing stop
// (Ctrl-C) stops reading; what was read is finished, committed and checkpointed, and Run
// returns ErrInterrupted. ctx cancellation is a hard stop: nothing more is committed.
//
// A run is a small state machine: open (the first checkpoint) -> read (the engine: workers
// transform and write, a cut on the ticker; after stop, the same while the source drains) ->
// settle (which error ends the run, if any) -> finish (the last cut, or abort).
func (r *Runner) Run(ctx context.Context, stop <-chan struct{}, resume *pipeline.Checkpoint) (pipeline.Result, error) {
	if resume != nil && len(r.legs) > 1 {
		return pipeline.Result{}, errors.New("runner: a run that fills several tables cannot resume: start it over")
	}
	m := &runState{r: r, cfg: r.cfg, ctx: ctx, stop: stop, resume: resume, started: time.Now()}
	state := m.open
	for state != nil {
		state = state()
	}
	return m.result, m.err
}

// runState is one Run in progress; each state method returns the next state, nil at the end.
type runState struct {
	r       *Runner
	cfg     Config
	ctx     context.Context // the caller's: cancelled, it is a hard stop
	stop    <-chan struct{}
	resume  *pipeline.Checkpoint
	started time.Time

	rowsBefore int64
	positions  map[string]pipeline.StreamState // what the engine acknowledged, every table's
	engine     *pipeline.Engine
	outcome    pipeline.Outcome

	interrupted    bool
	sourceFailed   bool
	tooManyRejects bool // the run stopped for its rejects: what was read is committed
	err            error
	result         pipeline.Result
}

type runStep func() runStep

// open loads or starts the checkpoints and prepares the engine: the workers transform and write,
// the engine records each stream's position as batches are acknowledged, and a cut commits and
// checkpoints on the ticker.
func (m *runState) open() runStep {
	cfg, r := m.cfg, m.r
	m.positions = map[string]pipeline.StreamState{}
	for _, l := range r.legs {
		l.cp = &pipeline.Checkpoint{Fingerprint: l.Fingerprint, Format: l.Format, Source: pipeline.SourceIdentity(cfg.Source),
			Plan: l.Plan, Streams: m.positions, StartedAt: m.started.UTC(), Job: l.Job}
	}
	if m.resume != nil {
		l := r.legs[0]
		l.cp, m.positions = m.resume, m.resume.Streams
		l.Counters.RowsIn.Store(l.cp.RowsIn)
		l.Counters.RowsWritten.Store(l.cp.RowsWritten)
		l.Counters.RowsRejected.Store(l.cp.RowsRejected)
		l.Counters.RowsSkipped.Store(l.cp.RowsSkipped)
	}
	m.rowsBefore = r.legs[0].cp.RowsIn
	if m.resume == nil {
		// The first checkpoint, before any row: it fixes the region plan and the source's
		// identity, so a run killed at any later instant can be resumed (from the start).
		for _, l := range r.legs {
			if err := l.Journal.Cut(m.ctx, l.cp); err != nil {
				m.err = r.named(l, err)
				return nil
			}
		}
	}
	for _, l := range r.legs {
		l.turns = nil
		if _, ok := l.Sink.(pipeline.OrderedSink); ok {
			l.turns = &pipeline.Turnstile{} // the engine's batches count from 0
		}
	}
	m.engine = pipeline.NewEngine(pipeline.EngineConfig{
		Source: cfg.Source, Resume: m.positions, Workers: cfg.Workers, Positions: m.positions,
		NewWorker: func(int) (func(context.Context, *pipeline.Job) error, func()) {
			w := r.newWorker()
			return func(ctx context.Context, j *pipeline.Job) error {
				err := w.process(ctx, &j.Batch, j.Seq)
				if errors.Is(err, ErrTooManyRejects) {
					// The batch is written: stop reading, finish the batches handed out, and
					// commit what they hold, so that the summary, the error and the rejects
					// file count the same rows.
					m.engine.Halt()
					err = nil
				}
				return err
			}, nil
		},
		Cut:   func(ctx context.Context) error { return m.cut(ctx, false) },
		Every: cfg.CheckpointEvery,
		Stop:  m.stop,
	})
	return m.read
}

// read runs the engine until the source ends, the run is stopped or fails.
func (m *runState) read() runStep {
	m.outcome, m.err = m.engine.Run(m.ctx)
	return m.settle
}

// settle decides how the run ends.
func (m *runState) settle() runStep {
	o := m.outcome
	m.interrupted, m.tooManyRejects = o.Interrupted, o.Halted
	if m.err == nil && o.SourceErr != nil {
		m.err = fmt.Errorf("source: %w", o.SourceErr)
		m.sourceFailed = o.SourceFailed && !errors.Is(o.SourceErr, pipeline.ErrDamagedInput)
	}
	if m.err == nil && o.Cancelled != nil {
		m.err = o.Cancelled
	}
	if m.err == nil {
		// with every handed-out batch written: the counts the summary and the rejects file give
		if m.err = m.r.checkRejects(); m.err == nil && m.tooManyRejects {
			m.err = m.r.rejectsWentOver()
		}
		m.tooManyRejects = m.err != nil
	}
	return m.finish
}

// finish makes the last cut (or aborts the sinks) and fills the results from the last
// checkpoints.
func (m *runState) finish() runStep {
	// the cleanup of a failed run, cancelled or not (a hard stop commits nothing, but leaves no
	// uncommitted file behind either)
	cleanup := context.WithoutCancel(m.ctx)
	abort := func() {
		for _, l := range m.r.legs {
			l.Sink.Abort(cleanup)
		}
	}
	switch {
	case m.sourceFailed, m.tooManyRejects:
		// What was read before the source failed (a token range that kept timing out, say), or
		// before the rejects went over the limit, is sound: commit and checkpoint it so that
		// --resume (after a fix, with a higher --max-rejects) redoes only what is missing, and the
		// rejects file holds the rejects counted, once each.
		if err := m.cut(m.ctx, false); err != nil {
			abort()
			m.err = fmt.Errorf("%w (and committing what was read failed: %v)", m.err, err)
		}
	case m.err != nil:
		abort()
	default:
		if err := m.cut(m.ctx, !m.interrupted); err != nil {
			abort()
			m.err = err
		}
	}
	// What the last checkpoints hold: rows counted in a failed run's uncommitted buffers were
	// never written, and a summary must not claim them.
	for _, l := range m.r.legs {
		cp := l.cp
		// the live figures end at the checkpoint's too, so that a display read once the run is
		// over (the last progress line) shows what the summary does; outcomes first, as a
		// worker counts the rows read first
		l.Counters.RowsWritten.Store(cp.RowsWritten)
		l.Counters.RowsRejected.Store(cp.RowsRejected)
		l.Counters.RowsSkipped.Store(cp.RowsSkipped)
		l.Counters.RowsIn.Store(cp.RowsIn)
		l.results = pipeline.Result{Resumed: m.resume != nil, Interrupted: m.interrupted,
			RowsIn: cp.RowsIn, RowsWritten: cp.RowsWritten, RowsRejected: cp.RowsRejected, RowsSkipped: cp.RowsSkipped,
			RowsInThisRun: cp.RowsIn - m.rowsBefore, RejectCodes: cp.RejectCodes, Files: cp.Files,
			Duration: time.Since(m.started), StartedAt: cp.StartedAt}
	}
	m.result = m.r.legs[0].results
	if m.err == nil && m.interrupted {
		m.err = ErrInterrupted
	}
	return nil
}

// cut commits what every acknowledged batch wrote and saves a checkpoint with the positions the
// engine recorded, for each table; complete marks the run's last checkpoint. The engine calls it
// between batches with every batch handed out acknowledged; finish calls it once the engine
// returned.
func (m *runState) cut(ctx context.Context, complete bool) error {
	for _, l := range m.r.legs {
		files, err := l.Sink.Commit(ctx)
		if err != nil {
			return m.r.named(l, fmt.Errorf("commit files: %w", err))
		}
		// the next checkpoint is l.cp once saved: a cut that fails leaves the last one saved,
		// which the results (the summary) count
		cp, c := *l.cp, l.Counters
		if len(m.r.legs) > 1 {
			cp.Streams = maps.Clone(m.positions) // each table's checkpoint is its own
		}
		cp.Files = append(cp.Files[:len(cp.Files):len(cp.Files)], files...)
		cp.RowsIn = c.RowsIn.Load()
		cp.RowsWritten = c.RowsWritten.Load()
		cp.RowsRejected = c.RowsRejected.Load()
		cp.RowsSkipped = c.RowsSkipped.Load()
		cp.Complete = complete
		// the caller's context: a hard stop (ctx cancelled) must not write a checkpoint either
		if err := l.Journal.Cut(m.ctx, &cp); err != nil {
			return m.r.named(l, err)
		}
		*l.cp = cp
		m.cfg.Logger.Debug("checkpoint", zap.Int("files", len(files)), zap.Int64("rows", cp.RowsWritten))
	}
	return nil
}

// MinRowsForPercent keeps a percentage reject limit from firing on the first few rows.
const MinRowsForPercent = 1000

// checkRejects is the error of the first table whose rejects are over the limit.
func (r *Runner) checkRejects() error {
	for _, l := range r.legs {
		if err := r.checkLeg(l); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) checkLeg(l *leg) error {
	lim := r.cfg.RejectLimit
	// a percentage is of the rows the transform saw, not of those the source's filter left out
	c := l.Counters
	rej, in := c.RowsRejected.Load(), c.RowsIn.Load()-c.RowsSkipped.Load()
	table, rejects := r.rejectsOf(l)
	if lim.Count != nil && rej > *lim.Count {
		return fmt.Errorf("%w: %s%d rows rejected, more than --max-rejects %d allows; see %s for each row's reason", ErrTooManyRejects, table, rej, *lim.Count, rejects)
	}
	if lim.Percent > 0 && in >= MinRowsForPercent {
		if pct := 100 * float64(rej) / float64(in); pct > lim.Percent {
			return fmt.Errorf("%w: %s%d of %d rows rejected (%.2f%%), more than --max-rejects %g%% allows; see %s for each row's reason", ErrTooManyRejects, table, rej, in, pct, lim.Percent, rejects)
		}
	}
	return nil
}

// named is err of table l: in a run of several tables, prefixed with the table ("table T: ").
func (r *Runner) named(l *leg, err error) error {
	if len(r.legs) == 1 {
		return err
	}
	return fmt.Errorf("table %s: %w", l.Target.Table, err)
}

// rejectsOf names, in a run of several tables, the table l ("table T: ") and its rejects file
// under the run's output (T/rejects.jsonl); in a run of one, no table and the rejects file.
func (r *Runner) rejectsOf(l *leg) (table, rejects string) {
	if len(r.legs) == 1 {
		return "", l.Journal.RejectsName()
	}
	return "table " + l.Target.Table + ": ", l.Target.Table + "/" + l.Journal.RejectsName()
}

// rejectsWentOver is the error of a run whose rejects went over the percentage limit while
// its rows were read, and whose rows read by the time it stopped bring them back under it.
func (r *Runner) rejectsWentOver() error {
	l := r.legs[max(0, r.overLeg.Load())]
	c := l.Counters
	rej, in := c.RowsRejected.Load(), c.RowsIn.Load()-c.RowsSkipped.Load()
	table, rejects := r.rejectsOf(l)
	return fmt.Errorf("%w: %sthe rejects went over --max-rejects %g%% as the rows were read; %d of %d rows rejected (%.2f%%) when the run stopped; see %s for each row's reason",
		ErrTooManyRejects, table, r.cfg.RejectLimit.Percent, rej, in, 100*float64(rej)/float64(max(in, 1)), rejects)
}

// worker is one goroutine's state: per table, its transform and row buffers.
type worker struct {
	r    *Runner
	legs []legWorker
}

type legWorker struct {
	l    *leg
	i    int32
	t    Transformer
	rows []pipeline.Row
	recs []int // recs[i] is the index in the batch of rows[i]'s record
	slab []pipeline.Value
	// times: the rows' cell write times (Row.Times), laid out as slab
	times []int64
}

func (r *Runner) newWorker() *worker {
	w := &worker{r: r}
	for i, l := range r.legs {
		w.legs = append(w.legs, legWorker{l: l, i: int32(i), t: l.NewTransformer()})
	}
	return w
}

// process runs the batch (seq: its number in source order) through every table's transform
// into its sink.
func (w *worker) process(ctx context.Context, b *pipeline.Batch, seq int64) error {
	var over error
	for i := range w.legs {
		var turn *pipeline.Turn
		if t := w.legs[i].l.turns; t != nil {
			// given up however the batch ends (with no row to write, or a table before this one
			// failing it): the next batches wait for it
			turn = t.Turn(seq)
			defer turn.Done()
		}
		if err := w.legs[i].process(ctx, w.r, b, turn); errors.Is(err, ErrTooManyRejects) {
			over = err
		} else if err != nil {
			return err
		}
	}
	return over
}

// process runs the batch through the table's transform into its sink, in its turn when the
// sink takes the batches in order (turn not nil).
func (w *legWorker) process(ctx context.Context, r *Runner, b *pipeline.Batch, turn *pipeline.Turn) error {
	l := w.l
	ncol := len(l.Target.Columns)
	if need := len(b.Records) * ncol; cap(w.slab) < need {
		w.slab = make([]pipeline.Value, need)
	}
	w.rows, w.recs = w.rows[:0], w.recs[:0]
	var rejected int64
	for i := range b.Records {
		rec := &b.Records[i]
		stage, rerr := "source", rec.Err
		if rerr == nil {
			out := w.slab[len(w.rows)*ncol : (len(w.rows)+1)*ncol]
			if rerr = w.t.Apply(b, rec, out); rerr == nil {
				row := pipeline.Row{Values: out, Region: l.router.Route(out[0])}
				if rec.Times != nil { // the type check only for records that carry times
					if ct, ok := w.t.(CellTimer); ok {
						if cap(w.times) < len(w.slab) {
							w.times = make([]int64, len(w.slab))
						}
						row.Times = w.times[len(w.rows)*ncol : (len(w.rows)+1)*ncol]
						ct.CellTimes(rec, row.Times)
					}
				}
				w.rows = append(w.rows, row)
				w.recs = append(w.recs, i)
				continue
			}
			stage = "transform"
		}
		rejected++
		if err := l.Journal.Reject(b, rec, stage, rerr); err != nil {
			return r.named(l, err)
		}
	}
	written := int64(len(w.rows))
	if len(w.rows) > 0 {
		var err error
		if turn != nil {
			err = l.Sink.(pipeline.OrderedSink).WriteInTurn(ctx, w.rows, turn)
		} else {
			err = l.Sink.Write(ctx, w.rows)
		}
		if err != nil {
			var rr *pipeline.RowRejects
			if !errors.As(err, &rr) {
				return r.named(l, fmt.Errorf("write rows of %s: %w", b.Stream, err))
			}
			// Values the file format cannot hold exactly are rejected, never rounded.
			for _, x := range rr.Rows {
				if err := l.Journal.Reject(b, &b.Records[w.recs[x.Index]], "sink", x.Err); err != nil {
					return r.named(l, err)
				}
			}
			rejected += int64(len(rr.Rows))
			written -= int64(len(rr.Rows))
		}
	}
	w.t.Reset()
	c := l.Counters
	c.RowsIn.Add(int64(len(b.Records)) + b.Skipped)
	if b.Skipped > 0 {
		c.RowsSkipped.Add(b.Skipped)
	}
	c.RowsWritten.Add(written)
	if rejected > 0 {
		c.RowsRejected.Add(rejected)
		if err := r.checkLeg(l); err != nil {
			r.overLeg.CompareAndSwap(-1, w.i)
			return err
		}
	}
	return nil
}
