package report

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// heldBytesSource is memSource whose batches count the bytes handed out and not yet released.
type heldBytesSource struct {
	memSource
	out, peak atomic.Int64
}

func (s *heldBytesSource) Run(ctx context.Context, _ map[string]pipeline.StreamState, out chan<- pipeline.Batch) error {
	for i := 0; i < s.n; i += s.batch {
		var recs []pipeline.Record
		var n int64
		for k := i; k < min(i+s.batch, s.n); k++ {
			recs = append(recs, pipeline.Record{Values: s.make(k), Seq: int64(k + 1)})
			n += recs[len(recs)-1].Size()
		}
		if o := s.out.Add(n); o > s.peak.Load() {
			s.peak.Store(o)
		}
		select {
		case out <- pipeline.Batch{Stream: "mem", Records: recs, Release: func() { s.out.Add(-n) }}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// A source that cannot sample (a stream) places its quantile splits from its first rows, held
// until the plan is made: at most half of SubsampleBytes of them, however many rows that is.
// Before, the first 20,000 rows were held however large (20,000 rows of 2 MB from stdin: 40 GB).
func TestPrefixSampleStaysWithinHalfSubsampleBytes(t *testing.T) {
	const n, size, batch, budget = 600, 16 << 10, 10, 1 << 20
	body := strings.Repeat("b", size)
	src := &heldBytesSource{memSource: memSource{n: n, batch: batch, make: func(i int) []pipeline.Value {
		return []pipeline.Value{pipeline.Int(int64(i)), pipeline.Text(body)}
	}}}
	runReport(t, `
version: 1
source:
  name: ks.t
  columns: {id: bigint, body: text}
target:
  table: t
  primary_key: "[id]"
regions:
  count: 4
`, src, func(c *Config) { c.SubsampleBytes = budget })
	// half the budget, and the batches on their way: the feed's 4, the engine's queue of 2, the 2
	// workers', those waiting to be acknowledged, with room to spare (before: all 600 rows)
	if peak, most := src.peak.Load(), int64(budget/2+16*batch*size); peak > most {
		t.Fatalf("%d bytes of rows held at once; want at most %d", peak, most)
	}
}
