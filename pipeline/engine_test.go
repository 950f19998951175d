package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Every batch the source sends reaches exactly one worker, each worker finishes once after its
// last job, and every stream's last position is recorded.
func TestEngineHandsEveryBatchToOneWorker(t *testing.T) {
	src := &seqSource{streams: 3, rows: 100, batch: 7}
	var rows, finished atomic.Int64
	pos := map[string]StreamState{}
	e := NewEngine(EngineConfig{Source: src, Workers: 4, Positions: pos,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error { rows.Add(int64(len(j.Batch.Records))); return nil },
				func() { finished.Add(1) }
		}})
	o, err := e.Run(context.Background())
	if err != nil || o.SourceErr != nil {
		t.Fatal(err, o.SourceErr)
	}
	if rows.Load() != 300 || finished.Load() != 4 {
		t.Fatalf("%d rows processed, %d workers finished; want 300 and 4", rows.Load(), finished.Load())
	}
	for _, s := range []string{"s0", "s1", "s2"} {
		if pos[s] != (StreamState{Cursor: "100", Done: true}) {
			t.Fatalf("position of %s: %+v, want the stream done at 100", s, pos[s])
		}
	}
}

// Ack sees the batches in source order, numbered, even when a later batch is processed first;
// each batch is released once, after its Ack.
func TestEngineAcknowledgesInSourceOrder(t *testing.T) {
	src := &seqSource{streams: 1, rows: 40, batch: 4, release: &atomic.Int64{}}
	secondDone := make(chan struct{})
	var acked []int64
	e := NewEngine(EngineConfig{Source: src, Workers: 2,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error {
				switch j.Seq {
				case 0:
					<-secondDone // the first batch finishes after the second
				case 1:
					close(secondDone)
				}
				return nil
			}, nil
		},
		Ack: func(j *Job) error {
			if j.FirstOrd != j.Seq*4 || j.Batch.Records[0].Seq != j.FirstOrd {
				t.Errorf("batch %d: first ord %d, first record %d", j.Seq, j.FirstOrd, j.Batch.Records[0].Seq)
			}
			acked = append(acked, j.Seq)
			return nil
		}})
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, s := range acked {
		if s != int64(i) {
			t.Fatalf("acknowledged %v, want 0..9 in order", acked)
		}
	}
	if len(acked) != 10 || src.release.Load() != 10 {
		t.Fatalf("%d batches acknowledged, %d released; want 10 and 10", len(acked), src.release.Load())
	}
}

// A cut runs with every batch handed out acknowledged: the positions it sees cover exactly the
// rows the workers processed.
func TestEngineCutSeesEveryHandedOutBatch(t *testing.T) {
	src := &seqSource{streams: 1, rows: 200, batch: 1}
	var processed atomic.Int64
	pos := map[string]StreamState{}
	cuts := 0
	e := NewEngine(EngineConfig{Source: src, Workers: 3, Positions: pos, Every: time.Nanosecond,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error { processed.Add(1); return nil }, nil
		},
		Cut: func(context.Context) error {
			cuts++
			want := strconv.FormatInt(processed.Load(), 10)
			if want == "0" {
				want = "" // before the first batch: no position yet
			}
			if got := pos["s0"].Cursor; got != want {
				t.Errorf("cut at cursor %s with %d rows processed", got, processed.Load())
			}
			return nil
		}})
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cuts == 0 {
		t.Fatal("no cut ran")
	}
}

// CutAfter replaces Every's schedule: a worker asks for a cut some time after a batch it saw, and
// the cut runs then, between batches, although Every alone would not have run one yet.
func TestEngineCutAfterSchedulesTheNextCut(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	var e *Engine
	var asked atomic.Int64 // the time CutAfter was called, in ns since the epoch
	cut := make(chan time.Duration, 1)
	e = NewEngine(EngineConfig{Source: src, Workers: 1, Every: time.Hour,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error {
				if j.Seq == 0 {
					asked.Store(time.Now().UnixNano())
					e.CutAfter(50 * time.Millisecond)
				}
				return nil
			}, nil
		},
		Cut: func(context.Context) error {
			cut <- time.Since(time.Unix(0, asked.Load()))
			e.Halt()
			return nil
		}})
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-cut:
		if d < 50*time.Millisecond {
			t.Fatalf("the cut ran %v after CutAfter(50ms)", d)
		}
	default:
		t.Fatal("no cut ran: CutAfter did not schedule one (Every is an hour)")
	}
	e.CutAfter(time.Millisecond) // after Run: nothing waits for it, nothing blocks
}

// Limit cuts the last batch short and stops the source; the cancellation it asked for is not
// the source's error.
func TestEngineLimitStopsTheSource(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	var rows atomic.Int64
	e := NewEngine(EngineConfig{Source: src, Workers: 2, Limit: 25,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error { rows.Add(int64(len(j.Batch.Records))); return nil }, nil
		}})
	o, err := e.Run(context.Background())
	if err != nil || o.SourceErr != nil || !o.Limited || rows.Load() != 25 {
		t.Fatalf("%d rows, %+v, %v; want 25 rows, limited, no error", rows.Load(), o, err)
	}
}

// Halt stops reading: the batches handed out are finished and acknowledged, no more follow.
func TestEngineHaltStopsReading(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	var e *Engine
	var acked int64
	e = NewEngine(EngineConfig{Source: src, Workers: 1,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error {
				if j.Seq == 2 {
					e.Halt()
				}
				return nil
			}, nil
		},
		Ack: func(*Job) error { acked++; return nil }})
	o, err := e.Run(context.Background())
	if err != nil || o.SourceErr != nil || !o.Halted {
		t.Fatalf("%+v, %v; want halted without error", o, err)
	}
	if acked < 3 || acked > 4 { // the batch after the halting one may already be handed out
		t.Fatalf("%d batches acknowledged, want 3 or 4", acked)
	}
}

// A worker's error fails the run: it is Run's error, the run is cancelled, and no later batch
// is acknowledged.
func TestEngineWorkerErrorFailsTheRun(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	boom := errors.New("boom")
	var acked []int64
	e := NewEngine(EngineConfig{Source: src, Workers: 2,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error {
				if j.Seq == 5 {
					return boom
				}
				return nil
			}, nil
		},
		Ack: func(j *Job) error { acked = append(acked, j.Seq); return nil }})
	o, err := e.Run(context.Background())
	if !errors.Is(err, boom) || !errors.Is(o.Cancelled, boom) {
		t.Fatalf("%v (cancelled: %v), want boom", err, o.Cancelled)
	}
	for _, s := range acked {
		if s >= 5 {
			t.Fatalf("batch %d acknowledged after batch 5 failed", s)
		}
	}
}

// A source's own failure is the outcome's SourceErr, with the batches it sent before processed.
func TestEngineReportsTheSourcesError(t *testing.T) {
	var n atomic.Int64
	e := NewEngine(EngineConfig{Source: &seqSource{streams: 2, rows: 10, batch: 5, failStream: 1}, Workers: 2,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(context.Context, *Job) error { n.Add(1); return nil }, nil
		}})
	o, err := e.Run(context.Background())
	if err != nil || o.SourceErr == nil || !o.SourceFailed || n.Load() != 2 {
		t.Fatalf("%d batches then %+v, %v; want 2 batches then the failing range", n.Load(), o, err)
	}
}

// Stop ends the read gracefully: the source stops, the run does not fail.
func TestEngineStopInterrupts(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	stop := make(chan struct{})
	e := NewEngine(EngineConfig{Source: src, Workers: 1, Stop: stop,
		NewWorker: func(int) (func(context.Context, *Job) error, func()) {
			return func(_ context.Context, j *Job) error {
				if j.Seq == 3 {
					close(stop)
				}
				return nil
			}, nil
		}})
	o, err := e.Run(context.Background())
	if err != nil || o.SourceErr != nil || !o.Interrupted {
		t.Fatalf("%+v, %v; want interrupted without error", o, err)
	}
}

// seqSource emits streams of numbered rows (values: stream index, row number); it fails when it
// reaches stream failStream (0: never).
type seqSource struct {
	streams, rows, batch int
	failStream           int
	release              *atomic.Int64 // counts the batches released (nil: batches have no Release)
}

func (s *seqSource) Run(ctx context.Context, resume map[string]StreamState, out chan<- Batch) error {
	for si := 0; si < s.streams; si++ {
		if s.failStream > 0 && si == s.failStream {
			return errors.New("range s" + strconv.Itoa(si) + " keeps failing")
		}
		name := fmt.Sprintf("s%d", si)
		for i := 0; i < s.rows; i += s.batch {
			b := Batch{Stream: name}
			for j := i; j < i+s.batch && j < s.rows; j++ {
				b.Records = append(b.Records, Record{Seq: int64(j), Values: []Value{Int(int64(si)), Int(int64(j))}})
			}
			b.Cursor, b.Done = strconv.Itoa(min(i+s.batch, s.rows)), i+s.batch >= s.rows
			if s.release != nil {
				released := false
				b.Release = func() {
					if released {
						panic("batch released twice")
					}
					released = true
					s.release.Add(1)
				}
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
