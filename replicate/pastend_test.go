package replicate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A group whose committed offset is past its partition's end (the topic deleted and created
// again under the same name while the group kept its offsets, or a log truncated by an unclean
// leader election) stops replicate with an error naming the partition and both offsets, and
// commits nothing. It used to wait without a word until the partition reached the committed
// offset, then read on from there: the messages of the new log below it were skipped.
func TestGroupOffsetPastThePartitionsEnd(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-past-end", 1)
	group := c.Group("g-past-end")
	msgs, _, _ := jsonStream(1, 10)
	c.Produce(t, topic, msgs...)
	commitOffset(t, c, group, topic, 0, 50)

	rn := start(t, config(t, c, topic, group, "json", t.TempDir()))
	err := rn.ended(t, "at committed offset 50, past the partition's end 10, without an error: "+
		"it waits for the partition to reach offset 50 and would skip the messages produced at offsets 10 to 49")
	var past *kafka.PastEndError
	if !errors.As(err, &past) {
		t.Fatalf("run ended with %v, want the offset past the partition's end", err)
	}
	if past.Partition != 0 || past.Next != 50 || past.End != 10 {
		t.Fatalf("error %+v, want partition 0, offset 50, end 10", past)
	}
	for _, want := range []string{topic, "partition 0", "50", "end offset 10", "new consumer group"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := c.Committed(t, group, topic, 1)[0]; got != 50 {
		t.Errorf("committed offset %d after the error, want 50", got)
	}
}

// commitOffset commits offset for group's partition of topic from outside the group, as a group
// of an earlier topic of the same name would have left it.
func commitOffset(t *testing.T, c *kafkatest.Cluster, group, topic string, partition int, offset int64) {
	t.Helper()
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	resp, err := cl.OffsetCommit(context.Background(), &kafkago.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafkago.OffsetCommit{topic: {{Partition: partition, Offset: offset}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("commit offset %d of %s/%d: %v", offset, topic, partition, p.Error)
		}
	}
}

// The topic deleted and created again under the same name, its group's offsets deleted with it
// (as Kafka deletes a deleted topic's committed offsets): the folder's manifest.json still
// records the old log's next offset, which replicate continues from. Past the new log's end,
// that stops replicate with the error; it used to wait there and skip the new log's messages
// below it.
func TestRecreatedTopicBelowTheOutputsLastRoll(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-recreated", 1)
	group := c.Group("g-recreated")
	msgs, _, _ := jsonStream(1, 60)
	c.Produce(t, topic, msgs...)
	dir := t.TempDir()
	cfg := config(t, c, topic, group, "json", dir)
	rn := start(t, cfg)
	waitCommitted(t, c, group, topic, map[int]int64{0: 60}, 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}

	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	if _, err := cl.DeleteTopics(context.Background(), &kafkago.DeleteTopicsRequest{Topics: []string{topic}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.OffsetDelete(context.Background(), &kafkago.OffsetDeleteRequest{GroupID: group, Topics: map[string][]int{topic: {0}}}); err != nil {
		t.Fatal(err)
	}
	c.CreateTopic(t, "orders-recreated", 1)
	c.Produce(t, topic, msgs[:10]...)
	if got := c.Committed(t, group, topic, 1); len(got) != 0 {
		t.Fatalf("the group still has offsets %v of the deleted topic", got)
	}

	rn = start(t, cfg)
	err := rn.ended(t, "at the manifest's offset 60, past the new log's end 10, without an error: "+
		"it would skip the new log's messages below offset 60")
	var past *kafka.PastEndError
	if !errors.As(err, &past) || past.Next != 60 || past.End != 10 {
		t.Fatalf("run ended with %v, want the offset 60 past the partition's end 10", err)
	}
}

// ended waits for the run to end on its own and returns its error; a run still going after
// wait.Timeout is stopped and fails the test, saying why it should have ended (stuck).
func (rn *running) ended(t *testing.T, stuck string) error {
	t.Helper()
	select {
	case err := <-rn.done:
		return err
	case <-time.After(wait.Timeout):
		close(rn.stop)
		t.Fatalf("replicate still runs after %s %s", wait.Timeout, stuck)
		return nil
	}
}
