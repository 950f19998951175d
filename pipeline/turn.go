package pipeline

import (
	"context"
	"sync"
)

// OrderedSink is a Sink whose writes of one key must follow the source's order across batches,
// which the runner's workers write at once: a table keeps the row written last under a key, so
// a batch's write overtaking the one before it would leave that batch's older row. The runner
// calls WriteInTurn in place of Write, with the batch's turn (Turnstile): the sink renders its
// rows, waits for the turn, queues its writes behind those of the batches before it, and then
// gives the turn up (Done), so that the batches' other work still overlaps.
type OrderedSink interface {
	Sink
	WriteInTurn(ctx context.Context, rows []Row, turn *Turn) error
}

// Turnstile hands out the turns of a run's batches in source order (Job.Seq from 0): a batch's
// turn comes once every batch before it is done with its own.
type Turnstile struct {
	mu   sync.Mutex
	next int64          // the batch whose turn it is
	done map[int64]bool // batches after next done already (a batch with no row to write)
	wake chan struct{}  // closed when next moves
}

// Turn is one batch's turn.
type Turn struct {
	t    *Turnstile
	seq  int64
	once sync.Once
}

// Turn is the turn of batch seq.
func (t *Turnstile) Turn(seq int64) *Turn { return &Turn{t: t, seq: seq} }

// Wait returns once it is the batch's turn, or ctx's error.
func (u *Turn) Wait(ctx context.Context) error {
	t := u.t
	for {
		t.mu.Lock()
		if t.next >= u.seq {
			t.mu.Unlock()
			return nil
		}
		if t.wake == nil {
			t.wake = make(chan struct{})
		}
		wake := t.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done gives the turn up, or, before it came, says the batch will not need it; again, nothing.
func (u *Turn) Done() {
	u.once.Do(func() {
		t := u.t
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.done == nil {
			t.done = map[int64]bool{}
		}
		t.done[u.seq] = true
		moved := false
		for t.done[t.next] {
			delete(t.done, t.next)
			t.next++
			moved = true
		}
		if moved && t.wake != nil {
			close(t.wake)
			t.wake = nil
		}
	})
}
