package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
)

// A fetch that found no new message becomes a batch without changes nor cursor that carries the
// high watermark (a consumer's lag moves on an idle partition); its Release is harmless.
func TestPartitionSourceSendsTheHighWatermarkOfAnEmptyFetch(t *testing.T) {
	dec, err := NewDecoder(Config{Format: FormatJSON}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &PartitionSource{Config: &Config{Topic: "t"}, Partition: 3, Decoder: dec}
	free := make(chan *Decoded, 1)
	b := s.batch(s.Stream(), FetchBatch{HighWaterMark: 42}, &Fetcher{free: make(chan []kafkago.Message, 1)}, free)
	d := b.Payload.(*Decoded)
	if len(d.Changes) != 0 || b.Cursor != "" || d.HighWaterMark != 42 || b.Stream != Stream("t", 3) {
		t.Fatalf("%+v with %+v; want no changes, no cursor, high watermark 42", b, d)
	}
	b.Release()
	if len(free) != 1 {
		t.Fatal("the released payload is not reused")
	}
}
