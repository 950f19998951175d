// Package runner is a migration's run: the engine (pipeline.Engine) with the transform and the
// sink in its workers, checkpoints as consistent cuts (commit, then save the positions the engine
// acknowledged), the reject limit, and how a run ends (settle: which error, if any; finish: the
// last cut or an abort). migrate runs it into files, and into a table.
package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
	Workers     int    // transform goroutines; default GOMAXPROCS
	RejectLimit RejectLimit
	// CheckpointEvery is how often the run commits open files and saves a checkpoint; 0 means
	// only at the end. Each cut closes every open file, so shorter intervals mean smaller files.
	CheckpointEvery time.Duration
	Logger          *zap.Logger
}

// ErrTooManyRejects is wrapped by the error a run returns when the reject limit was exceeded.
var ErrTooManyRejects = errors.New("too many rejected rows")

// ErrInterrupted is returned when stop was closed: what was read is committed and checkpointed.
var ErrInterrupted = errors.New("interrupted")

// Runner executes one run; Counters may be read while Run is in progress.
type Runner struct {
	cfg      Config
	Counters pipeline.Counters
}

// New validates the configuration.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Source == nil:
		return nil, errors.New("runner: no source")
	case cfg.Sink == nil:
		return nil, errors.New("runner: no sink")
	case cfg.NewTransformer == nil:
		return nil, errors.New("runner: no transform")
	case cfg.Journal == nil:
		return nil, errors.New("runner: no journal (the output's rejects and checkpoints)")
	case len(cfg.Target.Columns) == 0:
		return nil, errors.New("runner: target schema has no columns")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Runner{cfg: cfg}, nil
}

// Run moves every record from the source through the transform into the sink. Closing stop
// (Ctrl-C) stops reading; what was read is finished, committed and checkpointed, and Run
// returns ErrInterrupted. ctx cancellation is a hard stop: nothing more is committed.
//
// A run is a small state machine: open (the first checkpoint) -> read (the engine: workers
// transform and write, a cut on the ticker; after stop, the same while the source drains) ->
// settle (which error ends the run, if any) -> finish (the last cut, or abort).
func (r *Runner) Run(ctx context.Context, stop <-chan struct{}, resume *pipeline.Checkpoint) (pipeline.Result, error) {
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

	cp         *pipeline.Checkpoint
	rowsBefore int64
	engine     *pipeline.Engine
	outcome    pipeline.Outcome

	interrupted    bool
	sourceFailed   bool
	tooManyRejects bool // the run stopped for its rejects: what was read is committed
	err            error
	result         pipeline.Result
}

type runStep func() runStep

// open loads or starts the checkpoint and prepares the engine: the workers transform and write,
// the engine records each stream's position as batches are acknowledged, and a cut commits and
// checkpoints on the ticker.
func (m *runState) open() runStep {
	cfg, r := m.cfg, m.r
	m.cp = &pipeline.Checkpoint{Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: pipeline.SourceIdentity(cfg.Source),
		Plan: cfg.Plan, Streams: map[string]pipeline.StreamState{}, StartedAt: m.started.UTC()}
	if m.resume != nil {
		m.cp = m.resume
		r.Counters.RowsIn.Store(m.cp.RowsIn)
		r.Counters.RowsWritten.Store(m.cp.RowsWritten)
		r.Counters.RowsRejected.Store(m.cp.RowsRejected)
		r.Counters.RowsSkipped.Store(m.cp.RowsSkipped)
	}
	m.rowsBefore = m.cp.RowsIn
	if m.resume == nil {
		// The first checkpoint, before any row: it fixes the region plan and the source's
		// identity, so a run killed at any later instant can be resumed (from the start).
		if err := cfg.Journal.Cut(m.ctx, m.cp); err != nil {
			m.err = err
			return nil
		}
	}
	m.engine = pipeline.NewEngine(pipeline.EngineConfig{
		Source: cfg.Source, Resume: m.cp.Streams, Workers: cfg.Workers, Positions: m.cp.Streams,
		NewWorker: func(int) (func(context.Context, *pipeline.Job) error, func()) {
			w := r.newWorker()
			return func(ctx context.Context, j *pipeline.Job) error {
				err := w.process(ctx, &j.Batch)
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

// finish makes the last cut (or aborts the sink) and fills the result from the last checkpoint.
func (m *runState) finish() runStep {
	// the cleanup of a failed run, cancelled or not (a hard stop commits nothing, but leaves no
	// uncommitted file behind either)
	cleanup := context.WithoutCancel(m.ctx)
	switch {
	case m.sourceFailed, m.tooManyRejects:
		// What was read before the source failed (a token range that kept timing out, say), or
		// before the rejects went over the limit, is sound: commit and checkpoint it so that
		// --resume (after a fix, with a higher --max-rejects) redoes only what is missing, and the
		// rejects file holds the rejects counted, once each.
		if err := m.cut(m.ctx, false); err != nil {
			m.cfg.Sink.Abort(cleanup)
			m.err = fmt.Errorf("%w (and committing what was read failed: %v)", m.err, err)
		}
	case m.err != nil:
		m.cfg.Sink.Abort(cleanup)
	default:
		if err := m.cut(m.ctx, !m.interrupted); err != nil {
			m.cfg.Sink.Abort(cleanup)
			m.err = err
		}
	}
	// What the last checkpoint holds: rows counted in a failed run's uncommitted buffers were
	// never written, and a summary must not claim them.
	cp := m.cp
	m.result = pipeline.Result{Resumed: m.resume != nil, Interrupted: m.interrupted,
		RowsIn: cp.RowsIn, RowsWritten: cp.RowsWritten, RowsRejected: cp.RowsRejected, RowsSkipped: cp.RowsSkipped,
		RowsInThisRun: cp.RowsIn - m.rowsBefore, RejectCodes: cp.RejectCodes, Files: cp.Files,
		Duration: time.Since(m.started), StartedAt: cp.StartedAt}
	if m.err == nil && m.interrupted {
		m.err = ErrInterrupted
	}
	return nil
}

// cut commits what every acknowledged batch wrote and saves a checkpoint with the positions the
// engine recorded; complete marks the run's last checkpoint. The engine calls it between batches
// with every batch handed out acknowledged; finish calls it once the engine returned.
func (m *runState) cut(ctx context.Context, complete bool) error {
	cfg, cp, c := m.cfg, m.cp, &m.r.Counters
	files, err := cfg.Sink.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit files: %w", err)
	}
	cp.Files = append(cp.Files, files...)
	cp.RowsIn = c.RowsIn.Load()
	cp.RowsWritten = c.RowsWritten.Load()
	cp.RowsRejected = c.RowsRejected.Load()
	cp.RowsSkipped = c.RowsSkipped.Load()
	cp.Complete = complete
	// the caller's context: a hard stop (ctx cancelled) must not write a checkpoint either
	if err := cfg.Journal.Cut(m.ctx, cp); err != nil {
		return err
	}
	cfg.Logger.Debug("checkpoint", zap.Int("files", len(files)), zap.Int64("rows", cp.RowsWritten))
	return nil
}

// MinRowsForPercent keeps a percentage reject limit from firing on the first few rows.
const MinRowsForPercent = 1000

func (r *Runner) checkRejects() error {
	lim := r.cfg.RejectLimit
	// a percentage is of the rows the transform saw, not of those the source's filter left out
	rej, in := r.Counters.RowsRejected.Load(), r.Counters.RowsIn.Load()-r.Counters.RowsSkipped.Load()
	if lim.Count != nil && rej > *lim.Count {
		return fmt.Errorf("%w: %d rows rejected, more than --max-rejects %d allows; see %s for each row's reason", ErrTooManyRejects, rej, *lim.Count, r.cfg.Journal.RejectsName())
	}
	if lim.Percent > 0 && in >= MinRowsForPercent {
		if pct := 100 * float64(rej) / float64(in); pct > lim.Percent {
			return fmt.Errorf("%w: %d of %d rows rejected (%.2f%%), more than --max-rejects %g%% allows; see %s for each row's reason", ErrTooManyRejects, rej, in, pct, lim.Percent, r.cfg.Journal.RejectsName())
		}
	}
	return nil
}

// rejectsWentOver is the error of a run whose rejects went over the percentage limit while
// its rows were read, and whose rows read by the time it stopped bring them back under it.
func (r *Runner) rejectsWentOver() error {
	rej, in := r.Counters.RowsRejected.Load(), r.Counters.RowsIn.Load()-r.Counters.RowsSkipped.Load()
	return fmt.Errorf("%w: the rejects went over --max-rejects %g%% as the rows were read; %d of %d rows rejected (%.2f%%) when the run stopped; see %s for each row's reason",
		ErrTooManyRejects, r.cfg.RejectLimit.Percent, rej, in, 100*float64(rej)/float64(max(in, 1)), r.cfg.Journal.RejectsName())
}

type worker struct {
	r    *Runner
	t    Transformer
	rows []pipeline.Row
	recs []int // recs[i] is the index in the batch of rows[i]'s record
	slab []pipeline.Value
	// times: the rows' cell write times (Row.Times), laid out as slab
	times []int64
}

func (r *Runner) newWorker() *worker {
	return &worker{r: r, t: r.cfg.NewTransformer()}
}

func (w *worker) process(ctx context.Context, b *pipeline.Batch) error {
	cfg := &w.r.cfg
	ncol := len(cfg.Target.Columns)
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
				row := pipeline.Row{Values: out, Region: cfg.Plan.Route(out[0])}
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
		if err := w.reject(b, rec, stage, rerr); err != nil {
			return err
		}
	}
	written := int64(len(w.rows))
	if len(w.rows) > 0 {
		if err := cfg.Sink.Write(ctx, w.rows); err != nil {
			var rr *pipeline.RowRejects
			if !errors.As(err, &rr) {
				return fmt.Errorf("write rows of %s: %w", b.Stream, err)
			}
			// Values the file format cannot hold exactly are rejected, never rounded.
			for _, x := range rr.Rows {
				if err := w.reject(b, &b.Records[w.recs[x.Index]], "sink", x.Err); err != nil {
					return err
				}
			}
			rejected += int64(len(rr.Rows))
			written -= int64(len(rr.Rows))
		}
	}
	w.t.Reset()
	c := &w.r.Counters
	c.RowsIn.Add(int64(len(b.Records)) + b.Skipped)
	if b.Skipped > 0 {
		c.RowsSkipped.Add(b.Skipped)
	}
	c.RowsWritten.Add(written)
	if rejected > 0 {
		c.RowsRejected.Add(rejected)
		return w.r.checkRejects()
	}
	return nil
}

func (w *worker) reject(b *pipeline.Batch, rec *pipeline.Record, stage string, rerr *pipeline.RowError) error {
	return w.r.cfg.Journal.Reject(b, rec, stage, rerr)
}
