package pipeline

import (
	"context"
	"errors"
	"fmt"
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
func (r *Runner) Run(ctx context.Context, stop <-chan struct{}, resume *Checkpoint) (Result, error) {
	cfg := r.cfg
	log := cfg.Logger
	started := time.Now()
	cp := &Checkpoint{Fingerprint: cfg.Fingerprint, Format: cfg.Format, Source: SourceIdentity(cfg.Source),
		Plan: cfg.Plan, Streams: map[string]StreamState{}, StartedAt: started.UTC()}
	if resume != nil {
		cp = resume
		r.Counters.RowsIn.Store(cp.RowsIn)
		r.Counters.RowsWritten.Store(cp.RowsWritten)
		r.Counters.RowsRejected.Store(cp.RowsRejected)
		r.Counters.RowsSkipped.Store(cp.RowsSkipped)
	}
	rowsBefore := cp.RowsIn
	if resume == nil {
		// The first checkpoint, before any row: it fixes the region plan and the source's
		// identity, so a run killed at any later instant can be resumed (from the start).
		if err := cfg.Journal.Cut(ctx, cp); err != nil {
			return Result{}, err
		}
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	srcCtx, cancelSrc := context.WithCancel(runCtx)
	defer cancelSrc()

	batches := make(chan Batch, cfg.Workers*2)
	srcErr := make(chan error, 1)
	resumeAt := make(map[string]StreamState, len(cp.Streams)) // the source's own copy: cp.Streams moves on
	for k, v := range cp.Streams {
		resumeAt[k] = v
	}
	go func() {
		err := cfg.Source.Run(srcCtx, resumeAt, batches)
		close(batches)
		srcErr <- err
	}()

	// The dispatcher hands batches to workers and remembers, per stream, the cursor of the last
	// batch handed out. A cut waits until every handed-out batch is written, so those cursors
	// describe exactly what the committed files hold, even though workers finish out of order.
	work := make(chan *Batch)
	var inflight sync.WaitGroup
	var workerErr atomic.Pointer[error]
	fail := func(err error) {
		workerErr.CompareAndSwap(nil, &err)
		cancelRun(err)
	}
	var workers sync.WaitGroup
	for i := 0; i < cfg.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			w := r.newWorker()
			for b := range work {
				if err := w.process(runCtx, b); err != nil {
					fail(err)
				} else if b.Release != nil {
					b.Release() // Sink.Write copied what it keeps
				}
				inflight.Done()
			}
		}()
	}

	cut := func(complete bool) error {
		inflight.Wait()
		if err := runCtx.Err(); err != nil {
			return context.Cause(runCtx)
		}
		files, err := cfg.Sink.Commit(runCtx)
		if err != nil {
			return fmt.Errorf("commit files: %w", err)
		}
		cp.Files = append(cp.Files, files...)
		cp.RowsIn = r.Counters.RowsIn.Load()
		cp.RowsWritten = r.Counters.RowsWritten.Load()
		cp.RowsRejected = r.Counters.RowsRejected.Load()
		cp.RowsSkipped = r.Counters.RowsSkipped.Load()
		cp.Complete = complete
		// the cut's context: a hard stop (ctx cancelled) must not write a checkpoint either
		if err := cfg.Journal.Cut(ctx, cp); err != nil {
			return err
		}
		log.Debug("checkpoint", zap.Int("files", len(files)), zap.Int64("rows", cp.RowsWritten))
		return nil
	}

	var tick <-chan time.Time
	var ticker *time.Ticker
	if cfg.CheckpointEvery > 0 {
		ticker = time.NewTicker(cfg.CheckpointEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	interrupted := false
	var runErr error
loop:
	for {
		select {
		case b, ok := <-batches:
			if !ok {
				break loop
			}
			bp := &b
			if b.Cursor != "" || b.Done {
				cp.Streams[b.Stream] = StreamState{Cursor: b.Cursor, Done: b.Done}
			}
			inflight.Add(1)
			select {
			case work <- bp:
			case <-runCtx.Done():
				inflight.Done()
				break loop
			}
		case <-tick:
			if err := cut(false); err != nil {
				runErr = err
				break loop
			}
			// The interval counts from the end of this cut: a cut slower than the interval
			// would otherwise be followed at once by another with nothing new to commit.
			ticker.Reset(cfg.CheckpointEvery)
		case <-stop:
			interrupted = true
			stop = nil
			cancelSrc() // stop reading; batches already read are drained below
		case <-runCtx.Done():
			break loop
		}
	}
	if runErr != nil {
		// A failed cut: stop everything now. The source may be blocked sending a batch that
		// nobody will take; cancelling the run unblocks it and the workers.
		cancelRun(runErr)
	}
	// Drain what the source already produced when it was told to stop: those rows were read.
	if interrupted && runErr == nil && runCtx.Err() == nil {
		for b := range batches {
			bp := &b
			cp.Streams[b.Stream] = StreamState{Cursor: b.Cursor, Done: b.Done}
			inflight.Add(1)
			work <- bp
		}
	}
	close(work)
	workers.Wait()
	if e := workerErr.Load(); e != nil && runErr == nil {
		runErr = *e
	}
	serr := <-srcErr
	sourceFailed := false
	if runErr == nil && serr != nil && !(interrupted && errors.Is(serr, context.Canceled)) {
		runErr = fmt.Errorf("source: %w", serr)
		sourceFailed = runCtx.Err() == nil && !errors.Is(serr, ErrDamagedInput)
	}
	if runErr == nil && runCtx.Err() != nil {
		runErr = context.Cause(runCtx)
	}
	if runErr == nil {
		runErr = r.checkRejects()
	}
	res := Result{Resumed: resume != nil, Interrupted: interrupted}
	if sourceFailed {
		// What was read before the source failed (a token range that kept timing out, say) is
		// sound: commit and checkpoint it so that --resume redoes only what is missing.
		if err := cut(false); err != nil {
			cfg.Sink.Abort()
			runErr = fmt.Errorf("%w (and committing what was read failed: %v)", runErr, err)
		}
	} else if runErr != nil {
		cfg.Sink.Abort()
	} else if err := cut(!interrupted); err != nil {
		cfg.Sink.Abort()
		runErr = err
	}
	// What the last checkpoint holds: rows counted in a failed run's uncommitted buffers were
	// never written, and a summary must not claim them.
	res.RowsIn, res.RowsWritten, res.RowsRejected, res.RowsSkipped = cp.RowsIn, cp.RowsWritten, cp.RowsRejected, cp.RowsSkipped
	res.RowsInThisRun = cp.RowsIn - rowsBefore
	res.RejectCodes = cp.RejectCodes
	res.Files = cp.Files
	res.Duration = time.Since(started)
	res.StartedAt = cp.StartedAt
	if runErr == nil && interrupted {
		runErr = ErrInterrupted
	}
	return res, runErr
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

type worker struct {
	r    *Runner
	t    Transformer
	rows []Row
	recs []int // recs[i] is the index in the batch of rows[i]'s record
	slab []Value
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
				w.rows = append(w.rows, Row{Values: out, Region: cfg.Plan.Route(out[0])})
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
