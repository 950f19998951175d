package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
)

// Every batch the source sends reaches exactly one worker, each worker finishes once after its
// last job, and the feed reports the source's end.
func TestEngineHandsEveryBatchToOneWorker(t *testing.T) {
	src := &seqSource{streams: 3, rows: 100, batch: 7}
	feed := StartFeed(context.Background(), src, nil, 2)
	var rows, finished atomic.Int64
	ws := StartWorkers(4, 0, func(int) (func(Batch), func()) {
		return func(b Batch) { rows.Add(int64(len(b.Records))) }, func() { finished.Add(1) }
	})
	for b := range feed.Batches {
		ws.Jobs() <- b
	}
	ws.Close()
	if err := feed.Err(); err != nil {
		t.Fatal(err)
	}
	if rows.Load() != 300 || finished.Load() != 4 {
		t.Fatalf("%d rows processed, %d workers finished; want 300 and 4", rows.Load(), finished.Load())
	}
}

// Discard stops a source that is blocked on a full feed and returns its error: the
// cancellation, which the caller asked for.
func TestFeedDiscardStopsABlockedSource(t *testing.T) {
	src := &seqSource{streams: 1, rows: 1 << 20, batch: 10}
	feed := StartFeed(context.Background(), src, nil, 1)
	<-feed.Batches
	if err := feed.Discard(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Discard: %v, want the source's context.Canceled", err)
	}
}

// A source's own failure is what Err returns.
func TestFeedReportsTheSourcesError(t *testing.T) {
	feed := StartFeed(context.Background(), &seqSource{streams: 2, rows: 10, batch: 5, failStream: 1}, nil, 4)
	n := 0
	for range feed.Batches {
		n++
	}
	if err := feed.Err(); err == nil || n != 2 {
		t.Fatalf("%d batches then %v; want 2 batches then the failing range", n, err)
	}
}

// seqSource emits streams of numbered rows (values: stream index, row number); it fails when it
// reaches stream failStream (0: never).
type seqSource struct {
	streams, rows, batch int
	failStream           int
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
			select {
			case out <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
