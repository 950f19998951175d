package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A topic deleted while it is read ends the fetch with an error naming it, once the brokers have
// not known it for topicGoneWait: kafka-go's leader look-up took an unknown topic for a passing
// state and asked again for ever, so the fetch stood still without a word (a migration from the
// topic never ended; a replication never said why it read nothing).
func TestFetchOfADeletedTopicFails(t *testing.T) {
	defer func(w time.Duration) { topicGoneWait = w }(topicGoneWait)
	topicGoneWait = time.Second
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "deleted", 1)
	c.Produce(t, topic, kafkago.Message{Value: []byte("m0")}, kafkago.Message{Value: []byte("m1")})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := &Config{Brokers: c.Brokers, Topic: topic}
	f := cfg.StartFetch(ctx, &kafkago.Dialer{}, 0, 0, FetchOptions{MaxWait: 50 * time.Millisecond})
	defer f.Stop()
	got := 0
	for got < 2 {
		b, ok := <-f.C
		if !ok {
			t.Fatalf("the fetch ended after %d of 2 messages: %v", got, f.Err())
		}
		got += len(b.Messages)
	}
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	resp, err := cl.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatal(err)
	}
	for range f.C {
	}
	err = f.Err()
	if ctx.Err() != nil {
		t.Fatalf("the fetch of a deleted topic did not end in 60 s")
	}
	// a broker that creates topics on demand (Kafka's default) has created it again, empty, at
	// the fetch's own look-up: the fetch's offset is then past the new log's end
	var past *PastEndError
	if errors.As(err, &past) && kafkatest.Real() {
		t.Logf("the broker created the topic again: %v", err)
		return
	}
	if !errors.Is(err, kafkago.UnknownTopicOrPartition) || !strings.Contains(err.Error(), topic+"/0") || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("the fetch ended with %v, want an error naming the partition and saying the topic is gone", err)
	}
	t.Log(err)
}
