package kafka_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A window's sample holds about SampleBytes of messages: each of its runs in a partition stops
// once it holds its share (at least one message), so large messages are sampled fewer, still
// from every run. Before, it read n messages however large: the 20,000 that place quantile split
// keys, of 2 MB messages, would be 40 GB.
func TestWindowSampleStaysWithinSampleBytes(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "bigsample", 1)
	const n, size, budget = 400, 2 << 10, 32 << 10
	body := strings.Repeat("b", size)
	var msgs []kafkago.Message
	for i := range n {
		msgs = append(msgs, kafkago.Message{Value: []byte(fmt.Sprintf(`{"userid":"%s","orderid":%d}`, body, i))})
	}
	c.Produce(t, topic, msgs...)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=json", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.SampleBytes = budget
	sample, err := w.Sample(context.Background(), 300)
	if err != nil {
		t.Fatal(err)
	}
	var first, last int64 = n, -1
	for _, r := range sample {
		first, last = min(first, r.Values[1].Num), max(last, r.Values[1].Num)
	}
	// 16 runs, each at least one message
	if len(sample) < 16 || int64(len(sample))*size > budget+16*size {
		t.Fatalf("sample of %d messages of %d bytes; want at most %d bytes (and one a run)", len(sample), size, budget)
	}
	if first >= n/4 || last < 3*n/4 {
		t.Fatalf("messages %d..%d sampled; want them spread over 0..%d", first, last, n-1)
	}
}
