package replicate

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/source/kafka/kafkademo"
)

// The rows-written counter (added once per batch, not per row) holds every upsert of a batch
// once the batch is applied, and none of its rejected messages.
func TestRowsWrittenCountedPerBatch(t *testing.T) {
	r := ordersReplicator(t, t.TempDir())
	defer r.man.close()
	w := r.detachedWorker(0, 1)
	gen := kafkademo.NewOrders(1)
	var msgs []kafkago.Message
	for i := range 30 {
		m := gen.Next()
		if i%10 == 3 {
			m.Value = []byte(`{"userid": "u1", "orderid": "not a number"}`)
		}
		m.Offset = int64(i)
		msgs = append(msgs, m)
	}
	for at := 0; at < len(msgs); at += 16 {
		if err := w.processMessages(msgs[at:min(at+16, len(msgs))]); err != nil {
			t.Fatal(err)
		}
		want := int64(min(at+16, len(msgs)))
		if in := r.metrics.MessagesIn.Load(); in != want {
			t.Fatalf("after the batch at %d: %d messages in, want %d", at, in, want)
		}
		rejected := (want + 6) / 10 // offsets 3, 13, 23
		if got := r.metrics.RowsWritten.Load(); got != want-rejected {
			t.Errorf("after the batch at %d: %d rows written, want %d", at, got, want-rejected)
		}
	}
	if err := w.closeRoll("stop"); err != nil {
		t.Fatal(err)
	}
	if got := r.metrics.RowsWritten.Load(); got != 27 {
		t.Errorf("after the roll: %d rows written, want 27", got)
	}
}
