package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A partition's source sends its messages decoded, one change per message in offset order, from
// the stream's resume cursor, each batch's Cursor the offset after it, with the partition's high
// watermark. Batches not yet released keep their values while later ones are decoded: a worker
// applies one batch while the source decodes the next.
func TestPartitionSourceDecodesEveryMessageOnce(t *testing.T) {
	_, src := partitionSource(t, "partition-source", 300)
	src.Fetch.BatchLen = 64
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan pipeline.Batch, 64)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx, map[string]pipeline.StreamState{src.Stream(): {Cursor: "100"}}, out) }()
	var held []pipeline.Batch
	for next := int64(100); next < 300; {
		select {
		case b := <-out:
			d := b.Payload.(*kafka.Decoded)
			if len(d.Changes) == 0 {
				if b.Cursor != "" {
					t.Fatalf("a batch without changes moves the cursor to %q", b.Cursor)
				}
				continue // the high watermark only
			}
			for i := range d.Changes {
				if d.Changes[i].Offset != next {
					t.Fatalf("change of offset %d, want %d", d.Changes[i].Offset, next)
				}
				next++
			}
			if b.Cursor != strconv.FormatInt(next, 10) || b.Stream != src.Stream() || d.HighWaterMark != 300 {
				t.Fatalf("batch of %s ending before %d: cursor %q, high watermark %d", b.Stream, next, b.Cursor, d.HighWaterMark)
			}
			held = append(held, b) // released only after every batch was decoded
		case <-ctx.Done():
			t.Fatalf("offsets up to %d read, then nothing", next)
		}
	}
	if len(held) < 3 {
		t.Fatalf("%d batches: want several, decoded while the first ones are held", len(held))
	}
	for _, b := range held {
		for _, ch := range b.Payload.(*kafka.Decoded).Changes {
			i := ch.Offset
			switch {
			case i%50 == 49:
				if ch.Op != kafka.OpDelete || !ch.Tombstone {
					t.Fatalf("offset %d: %+v, want a tombstone", i, ch)
				}
			case i%97 == 96:
				if ch.Err == nil {
					t.Fatalf("offset %d: decoded, want a reject", i)
				}
			default:
				if want := fmt.Sprintf("u0-%d", i); ch.Err != nil || ch.Values[0].Str != want || ch.Values[1].Num != i {
					t.Fatalf("offset %d: %v %v, want %s and %d (overwritten by a later batch?)", i, ch.Values, ch.Err, want, i)
				}
			}
		}
		b.Release()
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("source ended with %v, want its context's end", err)
	}
}

// A fetch that fails (here: messages deleted before they were read, refused by Gap) ends the
// source with its error.
func TestPartitionSourceEndsWithTheFetchError(t *testing.T) {
	c, src := partitionSource(t, "partition-gap", 20)
	c.DeleteRecords(t, src.Config.Topic, 0, 10)
	lost := errors.New("lost")
	src.Fetch.Gap = func(next, first int64) error { return fmt.Errorf("%d to %d: %w", next, first, lost) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan pipeline.Batch, 64)
	if err := src.Run(ctx, nil, out); !errors.Is(err, lost) {
		t.Fatalf("source ended with %v, want the gap's error", err)
	}
	if len(out) != 0 {
		t.Fatalf("%d batches sent from past the gap", len(out))
	}
}

// A bounded source (End) sends the messages before End, each once, and then ends by itself: a
// batch that reaches past End is cut there. One starting at End sends nothing.
func TestPartitionSourceEndsAtItsEnd(t *testing.T) {
	_, src := partitionSource(t, "partition-end", 300)
	src.Fetch.BatchLen = 64
	src.Offset, src.End = 10, 200 // 200 is inside a fetched batch of 64
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan pipeline.Batch, 64)
	if err := src.Run(ctx, nil, out); err != nil {
		t.Fatalf("a bounded source ended with %v", err)
	}
	close(out)
	next := int64(10)
	for b := range out {
		for _, ch := range b.Payload.(*kafka.Decoded).Changes {
			if ch.Offset != next {
				t.Fatalf("change of offset %d, want %d", ch.Offset, next)
			}
			next++
		}
		b.Release()
	}
	if next != 200 {
		t.Fatalf("read up to %d, want the messages before End (200)", next)
	}
	src.Offset = 200
	empty := make(chan pipeline.Batch, 1)
	if err := src.Run(ctx, nil, empty); err != nil || len(empty) != 0 {
		t.Fatalf("a source starting at its end: %v, %d batches", err, len(empty))
	}
}

// partitionSource is the source of a new topic's one partition, which holds n orders messages
// (produceOrders), from offset 0.
func partitionSource(t *testing.T, name string, n int) (*kafkatest.Cluster, *kafka.PartitionSource) {
	t.Helper()
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, name, 1)
	produceOrders(t, c, topic, 1, n)
	return c, topicSource(t, c, topic)
}

// topicSource is the source of topic's partition 0, read as JSON orders from offset 0.
func topicSource(t *testing.T, c *kafkatest.Cluster, topic string) *kafka.PartitionSource {
	t.Helper()
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := cfg.Dialer()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := kafka.NewDecoder(cfg, schema)
	if err != nil {
		t.Fatal(err)
	}
	return &kafka.PartitionSource{Config: &cfg, Dialer: dialer, Partition: 0, Decoder: dec}
}

// A topic written by a transactional producer ends with a commit marker, which is no message.
// A bounded read up to the end offset ends there by itself: the Window of migrate and report
// (its Idle, which ends a stalled window, set out of reach) and the PartitionSource of verify
// (which before waited for a message at or past End for ever), and the source's last batch
// carries the position past the marker.
func TestBoundedReadsEndAtATransactionMarker(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "txn-end", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	txn, _ := c.Producers(t, topic)
	for i := range 2 {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			v := fmt.Sprintf(`{"userid":"u%d","orderid":%d}`, i, j)
			if err := txn.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	const end, messages = 8, 6 // three messages and a marker a transaction
	src := topicSource(t, c, topic)
	src.End = end

	w, err := kafka.NewWindow(ctx, *src.Config, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Idle = time.Hour
	out := make(chan pipeline.Batch, 64)
	if err := w.Run(ctx, nil, out); err != nil {
		t.Fatalf("the window over offsets 0-%d ended with %v, want it to end at its end offset", end-1, err)
	}
	close(out)
	n := 0
	for b := range out {
		n += len(b.Records)
	}
	if n != messages {
		t.Errorf("the window read %d records, want %d", n, messages)
	}

	sent := make(chan pipeline.Batch, 64)
	if err := src.Run(ctx, nil, sent); err != nil {
		t.Fatalf("the source bounded at %d ended with %v, want it to end there", end, err)
	}
	close(sent)
	var next int64
	n = 0
	for b := range sent {
		d := b.Payload.(*kafka.Decoded)
		n += len(d.Changes)
		next = d.Next
	}
	if n != messages || next != end {
		t.Errorf("the source sent %d changes and ended at position %d, want %d and %d", n, next, messages, end)
	}
}
