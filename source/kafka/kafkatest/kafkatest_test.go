package kafkatest

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// A test topic keeps messages stamped long ago: with the broker's default time retention (7
// days, checked every 10 s by the real-peer broker) a report test's messages of 2024 were
// deleted between their write and their read, and the report read no rows.
func TestTopicsKeepOldMessages(t *testing.T) {
	c := Start(t)
	topic := c.CreateTopic(t, "keeps-old", 1)
	cl := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second}
	resp, err := cl.DescribeConfigs(context.Background(), &kafkago.DescribeConfigsRequest{
		Resources: []kafkago.DescribeConfigRequestResource{{ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{RetentionConfig}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == RetentionConfig {
				if e.ConfigValue != "-1" {
					t.Fatalf("topic %s: %s = %s, want -1 (no time retention)", topic, RetentionConfig, e.ConfigValue)
				}
				return
			}
		}
	}
	t.Fatalf("topic %s: %s not described: %+v", topic, RetentionConfig, resp.Resources)
}
