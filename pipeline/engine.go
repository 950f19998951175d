package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The engine: the one loop every command that reads a source through the mapping runs (migrate,
// report and its collision check's second read, verify and its repair, replicate: one engine per
// assigned partition). The source runs in its
// own goroutine and yields batches that carry their resume position (Batch.Cursor); a dispatcher
// numbers them and hands them to N workers, each with its own state (an Evaluator is not shared);
// a fan-in takes each batch back in source order once its worker is done, runs the caller's
// in-order step (Ack), records the batch's position (Positions) and gives the batch's memory back
// to the source (Batch.Release: workers never release; a batch of a failed run is not released). A cut (Cut, every Every, or
// when a worker asks for one with CutAfter) runs between batches once every batch handed out is acknowledged, so the positions it sees
// describe exactly what the workers wrote, even though they finish out of order.

// Job is one batch on its way through the engine.
type Job struct {
	Batch Batch
	// Seq is the batch's number in source order (held batches first), from 0; FirstOrd is the
	// number of records handed out before it.
	Seq, FirstOrd int64
	// Data is what the worker made of the batch, for Ack.
	Data any

	err  error
	done chan struct{}
}

// EngineConfig is one read of a source.
type EngineConfig struct {
	Source Source
	// Feed, when set, is Source already running (its Resume was given to StartFeed).
	Feed *Feed
	// Resume is where each stream starts (nil: from the start); the engine does not change it.
	Resume map[string]StreamState
	// Held are batches already read from Source (a prefix sample): they are handed out first.
	Held []Batch
	// Workers is how many goroutines run the per-batch function; Queue how many batches wait for
	// a free worker (0: the dispatcher hands each batch straight to a worker).
	Workers, Queue int
	// Limit stops the read after this many records (the last batch is cut short); 0: no limit.
	Limit int64
	// NewWorker runs once per worker before any batch; it returns the worker's per-batch function
	// and, optionally (nil), what it does once the batches end (a flush). An error fails the run.
	NewWorker func(i int) (process func(ctx context.Context, j *Job) error, finish func())
	// Ack, when set, runs on each processed batch in source order, in one goroutine. An error
	// fails the run.
	Ack func(j *Job) error
	// Positions, when set, receives each acknowledged batch's position (its Cursor and Done, per
	// stream), in source order; read it from Cut or after Run returned.
	Positions map[string]StreamState
	// Cut, when set, runs every Every between batches, once every batch handed out is
	// acknowledged (a consistent cut: commit, then save Positions). An error fails the run.
	// The interval counts from the end of the last cut, or from the last CutAfter (Every 0: only
	// when CutAfter asks for it).
	Cut   func(ctx context.Context) error
	Every time.Duration
	// Stop, closed, ends the read gracefully: the source stops, and what it already read is
	// still handed out.
	Stop <-chan struct{}
}

// Outcome is how a read ended.
type Outcome struct {
	Interrupted bool // Stop was closed
	Halted      bool // Halt was called (a worker found the run must stop reading)
	Limited     bool // Limit records were handed out
	// SourceErr is the source's error; the cancellation the engine itself asked for (Stop, Halt,
	// Limit) is left out.
	SourceErr error
	// SourceFailed: SourceErr came while the run was not being cancelled.
	SourceFailed bool
	// Cancelled is the run's cancellation cause (the caller's context, or a failure), nil when
	// it was not cancelled.
	Cancelled error
}

// Engine is one run of EngineConfig; build it with NewEngine, then Run it once.
type Engine struct {
	cfg    EngineConfig
	rearm  chan time.Duration // CutAfter's latest request, for the dispatcher
	halt   chan struct{}
	halted sync.Once
	failed atomic.Pointer[error]
	cancel context.CancelCauseFunc
}

// NewEngine prepares a run of cfg (at least one worker).
func NewEngine(cfg EngineConfig) *Engine {
	cfg.Workers = max(cfg.Workers, 1)
	return &Engine{cfg: cfg, rearm: make(chan time.Duration, 1), halt: make(chan struct{})}
}

// CutAfter moves the next cut to d from now, in place of the one Every had scheduled (the cuts
// after it follow Every again): a worker whose cuts are due some time after something it saw
// (replicate: a roll closes its interval after it opened) asks for them. Safe to call from
// workers, before Run and after it (then it does nothing); the latest request wins. A cut may
// still run from the old schedule if it fell due while the request was on its way: Cut decides
// what is due.
func (e *Engine) CutAfter(d time.Duration) {
	if e.cfg.Cut == nil {
		return
	}
	for {
		select {
		case e.rearm <- d:
			return
		default:
			select { // an older request not taken yet: this one replaces it
			case <-e.rearm:
			default:
			}
		}
	}
}

// Halt stops the read: nothing more is handed out, the batches the source read ahead are dropped
// (their positions are never recorded), and the batches handed out are finished. Safe to call
// from workers, more than once.
func (e *Engine) Halt() { e.halted.Do(func() { close(e.halt) }) }

// fail ends the run with err (the first failure wins) and cancels it.
func (e *Engine) fail(err error) {
	e.failed.CompareAndSwap(nil, &err)
	e.cancel(err)
}

// Run reads the source to its end (or Stop, Halt, Limit, a failure, ctx's cancellation) and
// returns when every batch handed out is processed and acknowledged. err is the first failure
// of a worker, Ack or Cut; the rest of the ending is in Outcome.
func (e *Engine) Run(ctx context.Context) (o Outcome, err error) {
	cfg := e.cfg
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.cancel = cancel
	feed := cfg.Feed
	if feed == nil {
		feed = StartFeed(runCtx, cfg.Source, cfg.Resume, cfg.Workers*2)
	} else {
		// the feed runs under its starter's context: a failure of this run stops it too
		stopFeed := context.AfterFunc(runCtx, feed.Stop)
		defer stopFeed()
	}
	// the fan-in's queue: every batch a worker holds or may take, so that the dispatcher never
	// waits on it for long
	order := make(chan *Job, cfg.Workers+cfg.Queue+1)
	var inflight sync.WaitGroup
	workers := startWorkers(cfg.Workers, cfg.Queue, func(i int) (func(*Job), func()) {
		process, finish := cfg.NewWorker(i)
		return func(j *Job) {
			if j.err = process(runCtx, j); j.err != nil {
				e.fail(j.err)
			}
			close(j.done)
		}, finish
	})
	fanIn := make(chan struct{})
	go func() {
		defer close(fanIn)
		for j := range order {
			<-j.done
			if e.failed.Load() == nil && j.err == nil {
				e.ack(j)
			}
			inflight.Done()
		}
	}()

	d := dispatcher{e: e, runCtx: runCtx, feed: feed, workers: workers, order: order, inflight: &inflight}
	d.run(&o)

	workers.close()
	close(order)
	<-fanIn
	select {
	case <-e.halt: // found by the last batches, after the source ended
		o.Halted = true
	default:
	}
	serr := feed.Err()
	if serr != nil && !((o.Interrupted || o.Halted || o.Limited) && errors.Is(serr, context.Canceled)) {
		o.SourceErr = serr
		o.SourceFailed = runCtx.Err() == nil
	}
	if runCtx.Err() != nil {
		o.Cancelled = context.Cause(runCtx)
	}
	if p := e.failed.Load(); p != nil {
		err = *p
	}
	return o, err
}

// ack runs the in-order step on a processed batch and records its position.
func (e *Engine) ack(j *Job) {
	cfg := &e.cfg
	if cfg.Ack != nil {
		if err := cfg.Ack(j); err != nil {
			e.fail(err)
			return
		}
	}
	if b := &j.Batch; cfg.Positions != nil && (b.Cursor != "" || b.Done) {
		cfg.Positions[b.Stream] = StreamState{Cursor: b.Cursor, Done: b.Done}
	}
	if j.Batch.Release != nil {
		j.Batch.Release()
	}
}

// dispatcher is the loop that takes the source's batches in order and hands them out.
type dispatcher struct {
	e          *Engine
	runCtx     context.Context
	feed       *Feed
	workers    *workers[*Job]
	order      chan<- *Job
	inflight   *sync.WaitGroup
	seq, ord   int64
	timer      *time.Timer // the next cut; nil without Cut
	stop, halt <-chan struct{}
}

func (d *dispatcher) run(o *Outcome) {
	cfg := &d.e.cfg
	d.stop, d.halt = cfg.Stop, d.e.halt
	var tick <-chan time.Time
	var rearm <-chan time.Duration
	if cfg.Cut != nil {
		d.timer = time.NewTimer(cfg.Every)
		if cfg.Every <= 0 {
			d.timer.Stop() // until CutAfter asks for a cut
		}
		defer d.timer.Stop()
		tick, rearm = d.timer.C, d.e.rearm
	}
	for _, b := range cfg.Held {
		if !d.handOut(b) {
			d.endRead(o)
			return
		}
	}
	for {
		select {
		case <-d.halt: // before any further batch: a halt stops the hand-out at once
			o.Halted = true
			d.dropReadAhead()
			return
		default:
		}
		select {
		case b, ok := <-d.feed.Batches:
			if !ok {
				return
			}
			if !d.handOut(b) {
				d.endRead(o)
				return
			}
		case <-tick:
			d.inflight.Wait()
			if err := d.runCtx.Err(); err != nil {
				return
			}
			if err := cfg.Cut(d.runCtx); err != nil {
				// A failed cut: stop everything now. The source may be blocked sending a batch
				// that nobody will take; cancelling the run unblocks it and the workers.
				d.e.fail(err)
				return
			}
			// The interval counts from the end of this cut: a cut slower than the interval
			// would otherwise be followed at once by another with nothing new to commit.
			if cfg.Every > 0 {
				d.timer.Reset(cfg.Every)
			}
		case after := <-rearm:
			d.timer.Reset(after)
		case <-d.stop:
			// Draining: the source stops reading, and what it already read is still handed out
			// (those rows were read) until it closes its batches.
			o.Interrupted = true
			d.stop = nil
			d.feed.Stop()
		case <-d.halt:
			o.Halted = true
			d.dropReadAhead()
			return
		case <-d.runCtx.Done():
			return
		}
	}
}

// endRead ends a read that handOut refused to go on with: at the limit, the source stops and
// what it read ahead is dropped.
func (d *dispatcher) endRead(o *Outcome) {
	if lim := d.e.cfg.Limit; lim > 0 && d.ord >= lim && d.runCtx.Err() == nil {
		o.Limited = true
		d.dropReadAhead()
	}
}

// dropReadAhead stops the source and drops the batches it had read ahead (no position of theirs
// is recorded: a resume reads them again).
func (d *dispatcher) dropReadAhead() {
	d.feed.Stop()
	for range d.feed.Batches {
	}
}

// handOut numbers the batch (cut to the limit) and gives it to a worker; false ends the read
// (the limit reached, or the run cancelled).
func (d *dispatcher) handOut(b Batch) bool {
	lim := d.e.cfg.Limit
	if lim > 0 {
		if d.ord >= lim {
			return false
		}
		if rest := lim - d.ord; int64(len(b.Records)) > rest {
			b.Records = b.Records[:rest]
		}
	}
	j := &Job{Batch: b, Seq: d.seq, FirstOrd: d.ord, done: make(chan struct{})}
	d.inflight.Add(1)
	select {
	case d.workers.jobs <- j:
	case <-d.runCtx.Done():
		d.inflight.Done()
		return false
	}
	d.order <- j // back-pressure: at most cap(order) batches wait for the fan-in
	d.seq++
	d.ord += int64(len(b.Records))
	return lim == 0 || d.ord < lim
}

// Feed is a source running in its own goroutine, its batches on a buffered channel. An engine
// starts its own, or runs one already started (EngineConfig.Feed: report reads a prefix sample
// from it first).
type Feed struct {
	// Batches is closed when the source returned.
	Batches <-chan Batch
	cancel  context.CancelFunc
	errc    chan error
}

// StartFeed starts src with the resume positions (nil: from the start); buffer bounds the
// batches read ahead of the dispatcher (back-pressure).
func StartFeed(ctx context.Context, src Source, resume map[string]StreamState, buffer int) *Feed {
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan Batch, buffer)
	// the source's own copy: the caller's positions move on
	resumeAt := make(map[string]StreamState, len(resume))
	for k, v := range resume {
		resumeAt[k] = v
	}
	if resume == nil {
		resumeAt = nil
	}
	f := &Feed{Batches: batches, cancel: cancel, errc: make(chan error, 1)}
	go func() {
		err := src.Run(ctx, resumeAt, batches)
		close(batches)
		f.errc <- err
	}()
	return f
}

// Stop tells the source to stop reading; batches it already sent stay in Batches.
func (f *Feed) Stop() { f.cancel() }

// Discard stops the source, drops what it had read, and returns its error.
func (f *Feed) Discard() error {
	f.cancel()
	return f.Err()
}

// Err drains what the source still sends, waits until it returned and returns its error. Call it
// once.
func (f *Feed) Err() error {
	for range f.Batches {
	}
	err := <-f.errc
	f.cancel()
	return err
}

// workers is a fixed set of goroutines taking jobs from one channel, each with its own state.
type workers[J any] struct {
	jobs chan J
	wg   sync.WaitGroup
}

// startWorkers starts n workers. newWorker runs once per worker, before any job, and returns
// what it does with each job and, optionally (nil), what it does once the jobs end (flush).
// buffer is the jobs channel's capacity: 0 hands each job over directly.
func startWorkers[J any](n, buffer int, newWorker func(i int) (process func(J), finish func())) *workers[J] {
	w := &workers[J]{jobs: make(chan J, buffer)}
	for i := 0; i < n; i++ {
		process, finish := newWorker(i)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				process(j)
			}
			if finish != nil {
				finish()
			}
		}()
	}
	return w
}

// close ends the jobs and waits until every worker processed its last one and finished.
func (w *workers[J]) close() {
	close(w.jobs)
	w.wg.Wait()
}
