package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A topic the broker's ACLs do not let the user describe is reported as refused, with the grant
// to make, not as missing. kafka-go's Client answers Metadata from its cache of the broker's
// list of all topics, from which Kafka leaves out, without an error, the topics the user may not
// describe (a request naming the topic gets TOPIC_AUTHORIZATION_FAILED): the look-up said "topic
// not found", and a user checked the topic's name rather than its ACLs.
func TestTopicTheUserMayNotDescribeIsRefusedNotMissing(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("needs kfake's users and ACLs")
	}
	c := kafkatest.Start(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "pw"),
		kfake.User("PLAIN", "reader", "pw", kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "other",
			Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}),
		kfake.SeedTopics(2, "guarded", "other"))
	getenv := func(k string) string {
		if k == kafka.PasswordEnv {
			return "pw"
		}
		return ""
	}
	offsets := func(uri string) ([]kafka.PartitionOffsets, error) {
		cfg, err := kafka.ParseURI(uri, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Offsets(context.Background())
	}
	_, err := offsets("kafka://" + c.Brokers[0] + "/guarded?sasl=plain&user=reader")
	if !errors.Is(err, kafkago.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "User:reader --operation Describe") {
		t.Fatalf("offsets of a topic the user may not describe: %v; want TOPIC_AUTHORIZATION_FAILED and the grant to make", err)
	}
	t.Log(err)
	// a topic that does not exist is still not found
	if _, err := offsets("kafka://" + c.Brokers[0] + "/absent?sasl=plain&user=admin"); !errors.Is(err, kafkago.UnknownTopicOrPartition) || errors.Is(err, kafkago.TopicAuthorizationFailed) {
		t.Fatalf("offsets of a topic that does not exist: %v; want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	// and the topic the user may describe is read
	if offs, err := offsets("kafka://" + c.Brokers[0] + "/other?sasl=plain&user=reader"); err != nil || len(offs) != 2 {
		t.Fatalf("offsets of a topic the user may describe: %v, %v", offs, err)
	}
}
