package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Transformer turns source records into target rows. One per worker goroutine.
type Transformer interface {
	// Apply fills out (one value per target column) or says why the record is rejected.
	Apply(b *Batch, r *Record, out []Value) *RowError
	// Reset releases memory the last batch's rows pointed into; called after Sink.Write returned.
	Reset()
}

// CellTimer is a Transformer that gives each row's cell write times (Row.Times): the worker
// asks it for records that carry times (Record.Times).
type CellTimer interface {
	CellTimes(r *Record, times []int64)
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
	Source         Source
	NewTransformer func() Transformer
	Target         TargetSchema
	Plan           RegionPlan
	Sink           Sink
	// Journal records the rejects and the checkpoints (package output: the output's).
	Journal     Journal
	Fingerprint string // of the resolved mapping, stored in checkpoints
	Format      string // of the data files, stored in checkpoints
	Workers     int    // transform goroutines; default GOMAXPROCS
	RejectLimit RejectLimit
	// CheckpointEvery is how often the run commits open files and saves a checkpoint; 0 means
	// only at the end. Each cut closes every open file, so shorter intervals mean smaller files.
	CheckpointEvery time.Duration
	Logger          *zap.Logger
}

// Counters are live figures for progress displays; read them with Load.
type Counters struct {
	RowsIn       atomic.Int64
	RowsWritten  atomic.Int64
	RowsRejected atomic.Int64
	RowsSkipped  atomic.Int64 // Batch.Skipped: in RowsIn, neither written nor rejected
}

// Result is the outcome of a run: what its last checkpoint holds. Files lists every committed
// file (across resumes).
type Result struct {
	// RowsIn = RowsWritten + RowsRejected + RowsSkipped (rows the source's filter left out).
	RowsIn, RowsWritten, RowsRejected, RowsSkipped int64
	RejectCodes                                    map[string]int64
	Files                                          []FileInfo
	Resumed                                        bool
	// RowsInThisRun is what this attempt read: RowsIn less what the checkpoint it resumed from
	// held. Rates divide this by Duration (which is this attempt's time too).
	RowsInThisRun int64
	Interrupted   bool // stopped by the caller's stop signal before the end
	Duration      time.Duration
	// StartedAt is when the first attempt of the run started (a resume keeps it); zero for a
	// checkpoint written before rekey recorded it.
	StartedAt time.Time
}

// ErrTooManyRejects is wrapped by the error a run returns when the reject limit was exceeded.
var ErrTooManyRejects = errors.New("too many rejected rows")

// ErrDamagedInput is wrapped by a source's error when its input turned out to be damaged (a
// truncated or corrupt file): what was read from it is not committed, since it may already hold
// wrong values, and the run fails.
var ErrDamagedInput = errors.New("damaged input")

// ErrUnreachable is wrapped by the error of a server that could not be reached (connection
// refused, a name that does not resolve, a dial timeout) where the driver loses the network
// error itself; Unreachable also finds the network error. The same command may succeed once
// the server is up, so it is a failure of the run, never invalid use.
var ErrUnreachable = errors.New("could not be reached")

// Unreachable tells whether err is a server that could not be reached: it wraps
// ErrUnreachable or a network error (*net.OpError: dial, read or write on a connection).
func Unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, ErrUnreachable) || errors.As(err, &op)
}

// ErrInterrupted is returned when stop was closed: what was read is committed and checkpointed.
var ErrInterrupted = errors.New("interrupted")

// Runner executes one run; Counters may be read while Run is in progress.
type Runner struct {
	cfg      Config
	Counters Counters
}

// NewRunner validates the configuration.
func NewRunner(cfg Config) (*Runner, error) {
	switch {
	case cfg.Source == nil:
		return nil, errors.New("pipeline: no source")
	case cfg.Sink == nil:
		return nil, errors.New("pipeline: no sink")
	case cfg.NewTransformer == nil:
		return nil, errors.New("pipeline: no transform")
	case cfg.Journal == nil:
		return nil, errors.New("pipeline: no journal (the output's rejects and checkpoints)")
	case len(cfg.Target.Columns) == 0:
		return nil, errors.New("pipeline: target schema has no columns")
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
// A run is a small state machine: open (the first checkpoint) -> read (hand batches to
// the workers, cut on the ticker; after stop, the same while the source drains) -> settle (which
// error ends the run, if any) -> finish (the last cut, or abort).
func (r *Runner) Run(ctx context.Context, stop <-chan struct{}, resume *Checkpoint) (Result, error) {
	m := &runState{r: r, cfg: r.cfg, ctx: ctx, stop: stop, resume: resume, started: time.Now()}
	state := m.open
	for state != nil {
		state = state()
	}
	if m.cancelRun != nil {
		m.cancelRun(nil)
	}
	if m.ticker != nil {
		m.ticker.Stop()
	}
	return m.result, m.err
}

// runState is one Run in progress; each state method returns the next state, nil at the end.
type runState struct {
	r       *Runner
	cfg     Config
	ctx     context.Context // the caller's: cancelled, it is a hard stop
	stop    <-chan struct{}
	resume  *Checkpoint
	started time.Time

	cp         *Checkpoint
	rowsBefore int64
	runCtx     context.Context
	cancelRun  context.CancelCauseFunc
	feed       *Feed
	workers    *Workers[*Batch]
	// inflight counts batches handed out and not yet written: a cut waits for it
	inflight  sync.WaitGroup
	workerErr atomic.Pointer[error]
	ticker    *time.Ticker
	// overLimit is closed (once, overOnce) when a worker finds the rejects over the limit:
	// reading stops, the batches handed out are finished, and what they hold is committed, so
	// that the summary, the error and the rejects file count the same rows.
	overLimit chan struct{}
	overOnce  sync.Once

	interrupted    bool
	sourceFailed   bool
	tooManyRejects bool // the run stopped for its rejects: what was read is committed
	err            error
	result         Result
}

type runStep func() runStep

// open loads or starts the checkpoint, and starts the source and workers.
func (m *runState) open() runStep {
	cfg, r := m.cfg, m.r
	m.cp = &Checkpoint{Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: SourceIdentity(cfg.Source),
		Plan: cfg.Plan, Streams: map[string]StreamState{}, StartedAt: m.started.UTC()}
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
	m.runCtx, m.cancelRun = context.WithCancelCause(m.ctx)
	resumeAt := make(map[string]StreamState, len(m.cp.Streams)) // the source's own copy: cp.Streams moves on
	for k, v := range m.cp.Streams {
		resumeAt[k] = v
	}
	m.feed = StartFeed(m.runCtx, cfg.Source, resumeAt, cfg.Workers*2)
	m.overLimit = make(chan struct{})
	m.workers = StartWorkers(cfg.Workers, 0, func(int) (func(*Batch), func()) {
		w := r.newWorker()
		return func(b *Batch) {
			err := w.process(m.runCtx, b)
			if errors.Is(err, ErrTooManyRejects) { // the batch is written: stop reading
				m.overOnce.Do(func() { close(m.overLimit) })
				err = nil
			}
			if err != nil {
				m.fail(err)
			} else if b.Release != nil {
				b.Release() // Sink.Write copied what it keeps
			}
			m.inflight.Done()
		}, nil
	})
	if cfg.CheckpointEvery > 0 {
		m.ticker = time.NewTicker(cfg.CheckpointEvery)
	}
	return m.read
}

// fail ends the run with a worker's error (the first one wins).
func (m *runState) fail(err error) {
	m.workerErr.CompareAndSwap(nil, &err)
	m.cancelRun(err)
}

// handOut records the batch's cursor for the next cut and gives the batch to a worker. The
// dispatcher remembers, per stream, the cursor of the last batch handed out; a cut waits until
// every handed-out batch is written, so those cursors describe exactly what the committed files
// hold, even though workers finish out of order.
func (m *runState) handOut(b Batch) bool {
	if b.Cursor != "" || b.Done {
		m.cp.Streams[b.Stream] = StreamState{Cursor: b.Cursor, Done: b.Done}
	}
	m.inflight.Add(1)
	select {
	case m.workers.Jobs() <- &b:
		return true
	case <-m.runCtx.Done():
		m.inflight.Done()
		return false
	}
}

// read dispatches batches until the source ends or the run fails, cutting on the ticker.
func (m *runState) read() runStep {
	var tick <-chan time.Time
	if m.ticker != nil {
		tick = m.ticker.C
	}
	for {
		select {
		case b, ok := <-m.feed.Batches:
			if !ok || !m.handOut(b) {
				return m.settle
			}
		case <-tick:
			if err := m.cut(false); err != nil {
				// A failed cut: stop everything now. The source may be blocked sending a batch
				// that nobody will take; cancelling the run unblocks it and the workers.
				m.err = err
				m.cancelRun(err)
				return m.settle
			}
			// The interval counts from the end of this cut: a cut slower than the interval
			// would otherwise be followed at once by another with nothing new to commit.
			m.ticker.Reset(m.cfg.CheckpointEvery)
		case <-m.stop:
			// Draining: the source stops reading, and what it already read is still handed
			// out (those rows were read) until it closes its batches.
			m.interrupted = true
			m.stop = nil
			m.feed.Stop()
			return m.read
		case <-m.overLimit:
			// Too many rejects: nothing more is handed out. The batches the source read ahead
			// are dropped (no checkpoint records their cursors: a resume reads them again).
			m.tooManyRejects = true
			m.feed.Stop()
			for range m.feed.Batches {
			}
			return m.settle
		case <-m.runCtx.Done():
			return m.settle
		}
	}
}

// settle waits for the workers and the source and decides how the run ends.
func (m *runState) settle() runStep {
	m.workers.Close()
	if e := m.workerErr.Load(); e != nil && m.err == nil {
		m.err = *e
	}
	select {
	case <-m.overLimit: // found by the last batches, after the source ended
		m.tooManyRejects = true
	default:
	}
	serr := m.feed.Err()
	if m.err == nil && serr != nil && !((m.interrupted || m.tooManyRejects) && errors.Is(serr, context.Canceled)) {
		m.err = fmt.Errorf("source: %w", serr)
		m.sourceFailed = m.runCtx.Err() == nil && !errors.Is(serr, ErrDamagedInput)
	}
	if m.err == nil && m.runCtx.Err() != nil {
		m.err = context.Cause(m.runCtx)
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
		if err := m.cut(false); err != nil {
			m.cfg.Sink.Abort(cleanup)
			m.err = fmt.Errorf("%w (and committing what was read failed: %v)", m.err, err)
		}
	case m.err != nil:
		m.cfg.Sink.Abort(cleanup)
	default:
		if err := m.cut(!m.interrupted); err != nil {
			m.cfg.Sink.Abort(cleanup)
			m.err = err
		}
	}
	// What the last checkpoint holds: rows counted in a failed run's uncommitted buffers were
	// never written, and a summary must not claim them.
	cp := m.cp
	m.result = Result{Resumed: m.resume != nil, Interrupted: m.interrupted,
		RowsIn: cp.RowsIn, RowsWritten: cp.RowsWritten, RowsRejected: cp.RowsRejected, RowsSkipped: cp.RowsSkipped,
		RowsInThisRun: cp.RowsIn - m.rowsBefore, RejectCodes: cp.RejectCodes, Files: cp.Files,
		Duration: time.Since(m.started), StartedAt: cp.StartedAt}
	if m.err == nil && m.interrupted {
		m.err = ErrInterrupted
	}
	return nil
}

// cut commits what every handed-out batch wrote and saves a checkpoint with the dispatcher's
// cursors; complete marks the run's last checkpoint.
func (m *runState) cut(complete bool) error {
	cfg, cp, c := m.cfg, m.cp, &m.r.Counters
	m.inflight.Wait()
	if err := m.runCtx.Err(); err != nil {
		return context.Cause(m.runCtx)
	}
	files, err := cfg.Sink.Commit(m.runCtx)
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
	rows []Row
	recs []int // recs[i] is the index in the batch of rows[i]'s record
	slab []Value
	// times: the rows' cell write times (Row.Times), laid out as slab
	times []int64
}

func (r *Runner) newWorker() *worker {
	return &worker{r: r, t: r.cfg.NewTransformer()}
}

func (w *worker) process(ctx context.Context, b *Batch) error {
	cfg := &w.r.cfg
	ncol := len(cfg.Target.Columns)
	if need := len(b.Records) * ncol; cap(w.slab) < need {
		w.slab = make([]Value, need)
	}
	w.rows, w.recs = w.rows[:0], w.recs[:0]
	var rejected int64
	for i := range b.Records {
		rec := &b.Records[i]
		stage, rerr := "source", rec.Err
		if rerr == nil {
			out := w.slab[len(w.rows)*ncol : (len(w.rows)+1)*ncol]
			if rerr = w.t.Apply(b, rec, out); rerr == nil {
				row := Row{Values: out, Region: cfg.Plan.Route(out[0])}
				if ct, ok := w.t.(CellTimer); ok && rec.Times != nil {
					if cap(w.times) < len(w.slab) {
						w.times = make([]int64, len(w.slab))
					}
					row.Times = w.times[len(w.rows)*ncol : (len(w.rows)+1)*ncol]
					ct.CellTimes(rec, row.Times)
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
			var rr *RowRejects
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

func (w *worker) reject(b *Batch, rec *Record, stage string, rerr *RowError) error {
	return w.r.cfg.Journal.Reject(b, rec, stage, rerr)
}
