package main

import (
	"context"
	"encoding/json"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/store"
	"github.com/rekey/rekey/store/s3store"
)

// Seams through which a test meets a run at a chosen point (a checkpoint saved) rather than at
// a time on the clock, so that the point is the same however fast or loaded the machine is.

// interrupt sends sigs (a cliRun's signals) one Ctrl-C or SIGTERM and returns once the run has
// received it, which only its interrupt handler does.
func interrupt(t *testing.T, sigs chan os.Signal, sig syscall.Signal) {
	select {
	case sigs <- sig:
	case <-time.After(wait.Timeout):
		t.Errorf("the run did not take the %v within %v: it is not listening", sig, wait.Timeout)
	}
}

// atCheckpoint wraps an output's store so that at the first checkpoint saved that matches, once
// it is saved and before the run goes on, do runs.
func atCheckpoint(matches func(*pipeline.Checkpoint) bool, do func()) func(store.Store) store.Store {
	h := &checkpointHook{matches: matches, do: do}
	return func(st store.Store) store.Store {
		switch s := st.(type) {
		case *store.Local:
			return &hookedLocal{s, h}
		case *s3store.Store:
			return &hookedS3{s, h}
		}
		panic("atCheckpoint: no wrapper for the store " + st.Location(""))
	}
}

type checkpointHook struct {
	matches func(*pipeline.Checkpoint) bool
	do      func()
	hit     atomic.Bool
}

func (h *checkpointHook) saved(name string, data []byte) {
	if name != pipeline.CheckpointFile || h.hit.Load() {
		return
	}
	var cp pipeline.Checkpoint
	if json.Unmarshal(data, &cp) != nil || !h.matches(&cp) || h.hit.Swap(true) {
		return
	}
	h.do()
}

// The wrappers embed the store's own type, so that what pipeline asks of it (store.Dir, a
// conditional put) stays as it is.
type hookedLocal struct {
	*store.Local
	h *checkpointHook
}

func (s *hookedLocal) Put(ctx context.Context, name string, data []byte) error {
	if err := s.Local.Put(ctx, name, data); err != nil {
		return err
	}
	s.h.saved(name, data)
	return nil
}

type hookedS3 struct {
	*s3store.Store
	h *checkpointHook
}

func (s *hookedS3) Put(ctx context.Context, name string, data []byte) error {
	if err := s.Store.Put(ctx, name, data); err != nil {
		return err
	}
	s.h.saved(name, data)
	return nil
}

// midRun matches a checkpoint of a run that has written rows and has more to read.
func midRun(cp *pipeline.Checkpoint) bool { return cp.RowsWritten > 0 && !cp.Complete }
