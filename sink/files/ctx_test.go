package files_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/csv"
	"github.com/rekey/rekey/sink/files"
	"github.com/rekey/rekey/sink/parquet"
	"github.com/rekey/rekey/sink/sinktest"
	"github.com/rekey/rekey/store"
)

type ctxKey struct{}

// ctxStore records every store call whose ctx is not one of the sink's caller's (it lacks the
// value the test put in).
type ctxStore struct {
	store.Store
	mu     sync.Mutex
	calls  int
	strays []string
}

func (s *ctxStore) saw(ctx context.Context, op, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if ctx.Value(ctxKey{}) == nil {
		s.strays = append(s.strays, op+" "+name)
	}
}

func (s *ctxStore) Create(ctx context.Context, name string) (store.Writer, error) {
	s.saw(ctx, "create", name)
	w, err := s.Store.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &ctxWriter{Writer: w, s: s, name: name}, nil
}

func (s *ctxStore) Remove(ctx context.Context, names ...string) error {
	s.saw(ctx, "remove", fmt.Sprint(names))
	return s.Store.Remove(ctx, names...)
}

func (s *ctxStore) Sweep(ctx context.Context, prefix string) error {
	s.saw(ctx, "sweep", prefix)
	return s.Store.Sweep(ctx, prefix)
}

func (s *ctxStore) List(ctx context.Context, prefix string) ([]store.Info, error) {
	s.saw(ctx, "list", prefix)
	return s.Store.List(ctx, prefix)
}

type ctxWriter struct {
	store.Writer
	s    *ctxStore
	name string
}

func (w *ctxWriter) Commit(ctx context.Context) (int64, error) {
	w.s.saw(ctx, "commit", w.name)
	return w.Writer.Commit(ctx)
}

// The sink does its store I/O under its caller's ctx (New, Write, Commit, Abort): creating,
// committing, listing, sweeping and removing files, so a cancelled run stops them and a store
// sees the caller's deadline and values.
func TestStoreCallsCarryTheCallersContext(t *testing.T) {
	schema := sinktest.AllTypes()
	plan := sinktest.VarcharPlan("h")
	rows := sinktest.AllTypesRows(20000, 9, plan)
	ctx := context.WithValue(context.Background(), ctxKey{}, true)
	for _, sorted := range []bool{false, true} {
		st := &ctxStore{Store: sinktest.Folder(t, t.TempDir())}
		s, err := files.New(ctx, files.Config{Store: st, Schema: schema, Plan: plan, Format: parquet.New(), MaxFileSize: 32 << 10, Memory: 1 << 20, Sort: sorted}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10000; i += 500 {
			if err := s.Write(ctx, rows[i:i+500]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 10000; i < len(rows); i += 500 {
			if err := s.Write(ctx, rows[i:i+500]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if st.calls < 4 || len(st.strays) != 0 {
			t.Fatalf("sort=%v: %d store calls, %d without the caller's ctx: %v", sorted, st.calls, len(st.strays), st.strays)
		}
	}
}

// cancelStore cancels a context at the first write of a chunk to a data file and counts the
// data writes made after it.
type cancelStore struct {
	store.Store
	cancel func()
	mu     sync.Mutex
	writes int // data writes: the CSV header's, then one per chunk
	after  int // writes after the cancel
}

func (s *cancelStore) Create(ctx context.Context, name string) (store.Writer, error) {
	w, err := s.Store.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	return &cancelWriter{Writer: w, s: s}, nil
}

type cancelWriter struct {
	store.Writer
	s *cancelStore
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	w.s.writes++
	switch {
	case w.s.writes == 2: // the first chunk, after the header
		w.s.cancel()
	case w.s.writes > 2:
		w.s.after++
	}
	w.s.mu.Unlock()
	return w.Writer.Write(p)
}

// A sorted sink's Commit merges the region's runs into its files; a Commit whose context is
// cancelled while it merges (the second Ctrl-C of a run finishing its last commit: "abort at
// once") stops at the next chunk and says so, instead of writing the rest of the region first.
func TestSortedCommitStopsWhenItsContextIsCancelled(t *testing.T) {
	schema, rows := sinktest.ForCSV(sinktest.AllTypes(), keyRows(20000, pipeline.RegionPlan{Type: pipeline.TypeVarchar}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &cancelStore{Store: sinktest.Folder(t, t.TempDir()), cancel: cancel}
	// 64 KiB of memory: the rows spill into runs, and the merge cuts chunks of ~40 KiB (one
	// write each)
	s, err := files.New(context.Background(), files.Config{Store: st, SpillDir: t.TempDir(), Schema: schema,
		Plan: pipeline.RegionPlan{Type: pipeline.TypeVarchar}, Format: csv.New(), Sort: true, Memory: 64 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort(context.Background())
	for i := 0; i < len(rows); i += 500 {
		if err := s.Write(ctx, rows[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Commit(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit cancelled while it merged: %v, want the cancellation", err)
	}
	if st.after > 0 {
		t.Fatalf("the merge went on after its context was cancelled: %d more chunks written", st.after)
	}
}
