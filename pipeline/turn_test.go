package pipeline

import (
	"context"
	"sync"
	"testing"
)

// Turns come in the batches' order whatever order their batches ask in, a batch done before
// its turn came (no row to write) lets the next through, and a cancelled wait returns.
func TestTurnsComeInBatchOrder(t *testing.T) {
	var ts Turnstile
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for _, seq := range []int64{4, 2, 3, 0} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn := ts.Turn(seq)
			defer turn.Done()
			if err := turn.Wait(context.Background()); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, seq)
			mu.Unlock()
		}()
	}
	ts.Turn(1).Done() // batch 1 writes nothing
	wg.Wait()
	want := []int64{0, 2, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("turns %v, want %v", got, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.Turn(7).Wait(ctx); err == nil {
		t.Fatal("a cancelled wait for a turn that never comes returned nil")
	}
}
