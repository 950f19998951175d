package replicate_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// joinDead joins group as a member that takes every partition of topic and then stops
// heartbeating, as a killed process does: the broker keeps it (and its partitions) until its
// session times out.
func joinDead(t testing.TB, c *kafkatest.Cluster, group, topic string, partitions int, session time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = int32(session.Milliseconds()), int32(session.Milliseconds())
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, proto)
	var jr *kmsg.JoinGroupResponse
	for i := 0; i < 3; i++ {
		if jr, err = join.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if jr.ErrorCode == kerr.MemberIDRequired.Code {
			join.MemberID = jr.MemberID
			continue
		}
		break
	}
	if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
		t.Fatalf("join %s: %v", group, err)
	}
	asg := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic = topic
	for p := 0; p < partitions; p++ {
		at.Partitions = append(at.Partitions, int32(p))
	}
	asg.Topics = append(asg.Topics, at)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID, sync.ProtocolType, sync.Protocol = group, jr.Generation, jr.MemberID, jr.ProtocolType, jr.Protocol
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jr.MemberID, asg.AppendTo(nil)
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(sr.ErrorCode); err != nil {
		t.Fatalf("sync %s: %v", group, err)
	}
}

// groupState is the group's state as the broker describes it (DescribeGroups):
// "PreparingRebalance", "CompletingRebalance", "Stable", "Empty", "Dead".
func groupState(t testing.TB, c *kafkatest.Cluster, group string) (state string, members int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("describe group %s: %v", group, err)
	}
	return resp.Groups[0].State, len(resp.Groups[0].Members)
}

// waitFor polls cond until it holds, or fails the test after timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !wait.Until(cond, timeout) {
		t.Fatalf("waited %v for %s; it never came", timeout, what)
	}
}
