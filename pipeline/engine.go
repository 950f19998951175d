package pipeline

import (
	"context"
	"sync"
)

// The engine: every command that reads a source through the mapping (migrate's Runner, report,
// verify) runs the same fan-out. A Feed runs the source in its own goroutine; the caller's
// dispatcher takes its batches in source order (numbering them, recording cursors, cutting) and
// hands jobs to Workers, each goroutine with its own state (an Evaluator is not shared).

// Feed is a source running in its own goroutine, its batches on a buffered channel.
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
	f := &Feed{Batches: batches, cancel: cancel, errc: make(chan error, 1)}
	go func() {
		err := src.Run(ctx, resume, batches)
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
	for range f.Batches {
	}
	return f.Err()
}

// Err waits until the source returned (Batches is closed, or being drained by the caller) and
// returns its error. Call it once.
func (f *Feed) Err() error {
	err := <-f.errc
	f.cancel()
	return err
}

// Workers is a fixed set of goroutines taking jobs from one channel, each with its own state.
type Workers[J any] struct {
	jobs chan J
	wg   sync.WaitGroup
}

// StartWorkers starts n workers. newWorker runs once per worker, before any job, and returns
// what it does with each job and, optionally (nil), what it does once the jobs end (flush).
// buffer is the jobs channel's capacity: 0 hands each job over directly, so that the dispatcher
// knows a worker took it.
func StartWorkers[J any](n, buffer int, newWorker func(i int) (process func(J), finish func())) *Workers[J] {
	w := &Workers[J]{jobs: make(chan J, buffer)}
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

// Jobs is where the dispatcher sends jobs.
func (w *Workers[J]) Jobs() chan<- J { return w.jobs }

// Close ends the jobs and waits until every worker processed its last one and finished.
func (w *Workers[J]) Close() {
	close(w.jobs)
	w.wg.Wait()
}
