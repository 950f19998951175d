package files_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
