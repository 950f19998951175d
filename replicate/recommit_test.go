package replicate_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/internal/wait"
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
	refuseFirstCommit(c, group, &refused)
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

// Into a table, a batch's offset commit Kafka refuses is tried again when the partition's work
// ends (a stop, a rebalance): before, the group's offset stayed before the batch's messages,
// applied already, until a later batch's commit, and a stop left it there.
func TestRefusedOffsetCommitIntoATableIsRetriedAtTheStop(t *testing.T) {
	g := newPausableGroup(t, "recommit-sql", []string{"u1", "u2", "u3"})
	var refused atomic.Int32
	refuseFirstCommit(g.c, g.group, &refused)
	g.produce(1)
	a := start(t, g.sqlConfig("a"))
	wait.For(t, func() bool {
		return refused.Load() > 0 && a.r.Metrics().Lag() == 0 && a.r.Metrics().CommitErrors.Load() > 0
	},
		"the batch's commit to be refused")
	if err := a.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if got := g.c.Committed(t, g.group, g.topic, 1); got[0] != int64(len(g.keys)) {
		t.Errorf("committed offsets %v after the stop, want partition 0 at %d (its batch is applied)", got, len(g.keys))
	}
}

// refuseFirstCommit makes the in-process broker refuse group's first offset commit
// (COORDINATOR_LOAD_IN_PROGRESS), counting it in refused.
func refuseFirstCommit(c *kafkatest.Cluster, group string, refused *atomic.Int32) {
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
}
