package replicate_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// An offset commit the broker refuses (its coordinator loading, moving) is tried again: at the
// roll interval while the partition is idle, and at the stop. Before, only a later roll's commit
// carried it: a partition that went idle after its last roll kept its group offset behind what
// the output held for as long as no message came, stop included (Kafka's lag never reached 0).
func TestRefusedOffsetCommitOfAnIdlePartitionIsRetried(t *testing.T) {
	c := kafkatest.Start(t)
	if c.Fake == nil {
		t.Skip("refuses an offset commit with the in-process broker's request control")
	}
	topic := c.CreateTopic(t, "orders-recommit", 1)
	group := c.Group("g-recommit")
	var refused atomic.Int32
	c.Fake.ControlKey(kmsg.OffsetCommit.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		r := req.(*kmsg.OffsetCommitRequest)
		if r.Group != group || refused.Add(1) > 1 {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, tp := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = 14 // COORDINATOR_LOAD_IN_PROGRESS
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	msgs, _, _ := jsonStream(1, 40)
	c.Produce(t, topic, msgs...)
	cfg := config(t, c, topic, group, "json", t.TempDir())
	rn := start(t, cfg)
	// the messages come in one batch: the first roll closes after it, its commit is refused, and
	// no message follows
	waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 20*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if refused.Load() == 0 {
		t.Fatal("no offset commit was refused: the test does not reach the case")
	}
}
