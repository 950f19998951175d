package output

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/store"
)

// A write that passed the lock check and then failed because another run took the output over in
// between (its sweep removed this run's temporary file) says that the lock was lost, not only
// the store's error: the run stops as a run that lost its output, with the message saying why.
func TestFencedWriteFailingAfterATakeOverSaysTheLockWasLost(t *testing.T) {
	ctx := context.Background()
	local, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Bool
	st := fence(local, func(context.Context) error {
		if lost.Load() {
			return fmt.Errorf("%w: taken over", ErrLockLost)
		}
		return nil
	})
	w, err := st.Create(ctx, "data/region-0000/part-00000.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("rows")); err != nil {
		t.Fatal(err)
	}
	// the check passes; then, before the rename, another run takes over and sweeps
	takeOver := func() {
		lost.Store(true)
		if err := local.Sweep(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	afterCheck = takeOver
	defer func() { afterCheck = nil }()
	_, err = w.Commit(ctx)
	if err == nil {
		t.Fatal("the commit of a swept temporary file succeeded")
	}
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("commit failed with %v, want an error wrapping ErrLockLost", err)
	}
}
