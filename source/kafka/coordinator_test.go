package kafka_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// On a fresh broker the first group requests fail for a moment while the broker creates its
// offsets topic and loads the group's coordinator (Kafka 4.4 answered a new group's offset fetch
// with NOT_COORDINATOR; `replicate --mark-start`, the cut-over's first command, exited 3). The
// group's offsets are asked for again until the coordinator answers.
func TestGroupOffsetsWaitForTheCoordinator(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(2, "fresh"))
	var fetches, commits atomic.Int32
	c.Fake.ControlKey(kmsg.OffsetFetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		if fetches.Add(1) > 2 {
			return nil, nil, false
		}
		resp := req.(*kmsg.OffsetFetchRequest).ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = 16 // NOT_COORDINATOR
		return resp, nil, true
	})
	c.Fake.ControlKey(kmsg.OffsetCommit.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		if commits.Add(1) > 1 {
			return nil, nil, false
		}
		r := req.(*kmsg.OffsetCommitRequest)
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
	produceOrders(t, c, "fresh", 2, 10)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/fresh?group=g", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := cfg.MarkStart(context.Background())
	if err != nil {
		t.Fatalf("mark the start while the coordinator loads: %v", err)
	}
	got, err := cfg.GroupOffsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if got[o.Partition] != o.End {
			t.Errorf("partition %d: committed %d, want the end %d", o.Partition, got[o.Partition], o.End)
		}
	}
	if fetches.Load() < 3 || commits.Load() < 2 {
		t.Errorf("%d offset fetches, %d commits: the refusals were not met", fetches.Load(), commits.Load())
	}
}

// A partition just created, or whose leader is moving, is answered for a moment with
// NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE (Kafka 4 answered a topic created the moment
// before so, and its offsets look-up failed). The offsets are asked for again until a leader
// answers.
func TestOffsetsWaitForThePartitionLeaders(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's request control")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(2, "moving"))
	var lists atomic.Int32
	c.Fake.ControlKey(kmsg.ListOffsets.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		n := lists.Add(1)
		if n > 3 {
			return nil, nil, false
		}
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, tp := range r.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
				if n == 2 {
					rp.ErrorCode = 5 // LEADER_NOT_AVAILABLE
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	produceOrders(t, c, "moving", 2, 10)
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/moving", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := cfg.Offsets(context.Background())
	if err != nil {
		t.Fatalf("offsets while the leaders are not ready: %v", err)
	}
	var n int64
	for _, o := range offs {
		n += o.End - o.First
	}
	if len(offs) != 2 || n != 20 {
		t.Errorf("offsets %+v, want 2 partitions holding 10 messages each", offs)
	}
	if lists.Load() < 4 {
		t.Errorf("%d offset requests: the refusals were not met", lists.Load())
	}
}
