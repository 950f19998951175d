package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

type recorder struct{ slept []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.slept = append(r.slept, d)
	return ctx.Err()
}

// The delays double from Min and stay at Max; none is slept for real.
func TestDelaysDoubleUpToMax(t *testing.T) {
	var rec recorder
	b := Policy{Min: 100 * time.Millisecond, Max: time.Second, Sleep: rec.sleep}.Start()
	for range 6 {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if rec.slept[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", rec.slept, want)
		}
	}
	if b.Delay() != time.Second {
		t.Fatalf("Delay() = %v after reaching Max, want 1s", b.Delay())
	}
}

// A jittered delay lies between half the nominal delay and the delay; the sequence still doubles.
func TestJitterStaysWithinHalfAndWhole(t *testing.T) {
	var rec recorder
	b := Policy{Min: 100 * time.Millisecond, Max: 10 * time.Second, Jitter: true, Sleep: rec.sleep}.Start()
	for range 50 {
		nominal := b.Delay()
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := rec.slept[len(rec.slept)-1]; got < nominal/2 || got > nominal {
			t.Fatalf("jittered delay %v outside [%v, %v]", got, nominal/2, nominal)
		}
	}
}

// A cancelled context ends a real wait at once with the context's error.
func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := Policy{Min: time.Hour, Max: time.Hour}.Start()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v, want context.Canceled", err)
	}
}

// Max below Min (a zero Max) keeps the delay at Min rather than shrinking it to zero.
func TestMaxBelowMinKeepsMin(t *testing.T) {
	var rec recorder
	b := Policy{Min: 50 * time.Millisecond, Sleep: rec.sleep}.Start()
	_ = b.Wait(context.Background())
	_ = b.Wait(context.Background())
	if rec.slept[1] != 50*time.Millisecond {
		t.Fatalf("delays %v with Max 0, want Min kept", rec.slept)
	}
}
