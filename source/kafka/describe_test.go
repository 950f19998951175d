package kafka_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// The group is described with its members whatever their client: a member that subscribed with
// a version 2 or 3 consumer subscription (Kafka's own consumer, franz-go, kafka-console-consumer
// run with the group's name) is listed. kafka-go's Client.DescribeGroups decodes every member's
// subscription and reads versions 0 and 1 only: the whole answer became "failed to decode member
// metadata ... non-zero number of bytes remaining" (segmentio/kafka-go#1212), and a stuck join's error, which lists the
// members so that strays can be stopped, could name none.
func TestDescribeGroupListsMembersOfOtherClients(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("kfake only")
	}
	c := kafkatest.Start(t, kfake.SeedTopics(1, "described"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumerGroup("g-described"), kgo.ConsumeTopics("described"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ClientID("stray-consumer"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for ctx := context.Background(); ; {
			if f := cl.PollFetches(ctx); f.IsClientClosed() {
				return
			}
		}
	}()
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/described?group=g-described", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	wait.For(t, func() bool {
		desc, err = cfg.DescribeGroup(context.Background())
		return err != nil || strings.Contains(desc, "Stable")
	}, "the group to be stable")
	if err != nil {
		t.Fatalf("describe a group with a franz-go member: %v", err)
	}
	if !strings.Contains(desc, "1 members") || !strings.Contains(desc, "client stray-consumer") {
		t.Fatalf("the group described as %q: want its franz-go member", desc)
	}
	t.Log(desc)
}
