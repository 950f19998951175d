// Package backoff is the one wait between retries: exponential from Min up to Max, optionally
// jittered, cut short by ctx. Callers keep their own decision of what to retry and how often.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy describes the delays. The zero Sleep waits on a real timer; tests inject one that
// records the delays and returns at once.
type Policy struct {
	Min, Max time.Duration
	// Jitter waits a random time between half the delay and the delay, so that clients that
	// failed together do not retry together.
	Jitter bool
	Sleep  func(ctx context.Context, d time.Duration) error
}

// Backoff is one retry sequence; not safe for concurrent use.
type Backoff struct {
	p    Policy
	next time.Duration
}

// Start begins a sequence at Min.
func (p Policy) Start() *Backoff {
	if p.Sleep == nil {
		p.Sleep = Sleep
	}
	return &Backoff{p: p, next: p.Min}
}

// Delay is the nominal delay the next Wait sleeps (before jitter): what logs report.
func (b *Backoff) Delay() time.Duration { return b.next }

// Wait sleeps the next delay, doubles it up to Max, and returns ctx's error when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	d := b.next
	if b.p.Jitter {
		d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	}
	b.next = min(2*b.next, max(b.p.Max, b.p.Min))
	return b.p.Sleep(ctx, d)
}

// Sleep waits d on a real timer, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
