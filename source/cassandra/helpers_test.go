package cassandra_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// open builds a source from a URI with test-friendly retry settings.
func open(t testing.TB, c *cassandratest.Cluster, ks, table, params string, mods ...func(*cassandra.Config)) *cassandra.Source {
	t.Helper()
	src, err := tryOpen(t, c, ks, table, params, mods...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func tryOpen(t testing.TB, c *cassandratest.Cluster, ks, table, params string, mods ...func(*cassandra.Config)) (*cassandra.Source, error) {
	cfg, err := cassandra.ParseURI(c.URI(ks, table, params))
	if err != nil {
		return nil, err
	}
	cfg.RetryBackoff = 5e6 // 5ms
	cfg.MaxBackoff = 20e6
	for _, m := range mods {
		m(&cfg)
	}
	src, err := cassandra.New(context.Background(), cfg, testLogger(t))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { src.Close() })
	return src, nil
}

func testLogger(t testing.TB) *zap.Logger {
	if testing.Verbose() {
		return zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	return zap.NewNop()
}

// collect runs the source to its end (or error) and returns every batch, in arrival order.
func collect(ctx context.Context, src pipeline.Source, resume map[string]pipeline.StreamState) ([]pipeline.Batch, error) {
	out := make(chan pipeline.Batch, 16)
	var batches []pipeline.Batch
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for b := range out {
			batches = append(batches, b)
		}
	}()
	err := src.Run(ctx, resume, out)
	close(out)
	wg.Wait()
	return batches, err
}

// rowKey renders a record's values as one comparable string.
func rowKey(vals []pipeline.Value) string {
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(show(v))
	}
	return b.String()
}

func show(v pipeline.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Kind.String() + ":" + fmt.Sprintf("%q", v.String())
}

// rowSet is the sorted list of rows in batches (error-free records only; fails on errors).
func rowSet(t testing.TB, batches []pipeline.Batch) []string {
	t.Helper()
	var out []string
	for _, b := range batches {
		for _, r := range b.Records {
			if r.Err != nil {
				t.Fatalf("%s: %v", b.Position(&r), r.Err)
			}
			out = append(out, rowKey(r.Values))
		}
	}
	sort.Strings(out)
	return out
}

// checkpointOf plays the pipeline's part: the last cursor of each stream.
func checkpointOf(batches []pipeline.Batch) map[string]pipeline.StreamState {
	cp := map[string]pipeline.StreamState{}
	for _, b := range batches {
		cp[b.Stream] = pipeline.StreamState{Cursor: b.Cursor, Done: b.Done}
	}
	return cp
}
