package runner

import (
	"context"
	"strconv"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// replayBatches sends the same prebuilt batches every run: what is measured is the engine's
// hand-out, the transform call and the sink call, not building records.
type replayBatches struct{ batches []pipeline.Batch }

func (s *replayBatches) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for _, b := range s.batches {
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

type discardSink struct{}

func (discardSink) Write(context.Context, []pipeline.Row) error         { return nil }
func (discardSink) Commit(context.Context) ([]pipeline.FileInfo, error) { return nil, nil }
func (discardSink) Abort(context.Context) error                         { return nil }

// discardJournal keeps no rejects and saves no checkpoint: the benchmark measures the run's own
// path, not the output's I/O.
type discardJournal struct{}

func (discardJournal) Reject(*pipeline.Batch, *pipeline.Record, string, *pipeline.RowError) error {
	return nil
}
func (discardJournal) Cut(context.Context, *pipeline.Checkpoint) error { return nil }
func (discardJournal) RejectsName() string                             { return "rejects.jsonl" }

// BenchmarkRunner is migrate's per-row path without I/O: 1M rows in batches of 1000 through
// the dispatcher, 2 workers, an identity transform and a sink that keeps nothing.
func BenchmarkRunner(b *testing.B) {
	const batches, rows = 1000, 1000
	src := &replayBatches{}
	for i := range batches {
		bt := pipeline.Batch{Stream: "s", Cursor: strconv.Itoa(i + 1), Done: i == batches-1}
		for j := range rows {
			bt.Records = append(bt.Records, pipeline.Record{Seq: int64(j), Values: []pipeline.Value{pipeline.Int(int64(i)), pipeline.Int(int64(j))}})
		}
		src.batches = append(src.batches, bt)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := New(Config{Source: src, NewTransformer: func() Transformer { return copyTransform{} },
			Target:  pipeline.TargetSchema{Columns: []pipeline.Column{{Name: "s", Type: pipeline.TypeBigint}, {Name: "n", Type: pipeline.TypeBigint, KeyPos: -1}}, KeyLen: 1},
			Plan:    pipeline.RegionPlan{Type: pipeline.TypeBigint},
			Sink:    discardSink{},
			Journal: discardJournal{},
			Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		res, err := r.Run(context.Background(), nil, nil)
		if err != nil || res.RowsWritten != batches*rows {
			b.Fatalf("%d rows written, %v", res.RowsWritten, err)
		}
	}
	b.ReportMetric(float64(b.N*batches*rows)/b.Elapsed().Seconds(), "rows/s")
}

// copyTransform passes values through.
type copyTransform struct{}

func (copyTransform) Apply(b *pipeline.Batch, r *pipeline.Record, out []pipeline.Value) *pipeline.RowError {
	copy(out, r.Values)
	return nil
}
func (copyTransform) Reset() {}
