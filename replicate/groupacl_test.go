package replicate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A consumer group the broker's ACLs do not let the user join (GROUP_AUTHORIZATION_FAILED: the
// user may read the topic, not use the group) ends replicate at once with an error naming the
// group and the grant to make, as refused credentials do: no retry can fix an ACL. The refusal
// was retried as a rebalance: replicate sat in "joining" for 2 x session timeout + rebalance
// timeout, then failed saying a killed member may hold the group's rebalance.
func TestGroupTheUserMayNotUseFailsAtOnce(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("SASL users and ACLs are set up in kfake only")
	}
	allow := func(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: typ, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c := kafkatest.Start(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "pw"),
		kfake.User("PLAIN", "rk", "pw", allow(kmsg.ACLResourceTypeTopic, "acl-orders", kmsg.ACLOperationDescribe),
			allow(kmsg.ACLResourceTypeTopic, "acl-orders", kmsg.ACLOperationRead)),
		kfake.SeedTopics(1, "acl-orders"))
	cfg := config(t, c, "acl-orders", "g-acl", "json", t.TempDir())
	cfg.Kafka.SASL = kafka.SASLConfig{Mechanism: "plain", User: "rk", Password: "pw"}
	rn := start(t, cfg)
	var err error
	select {
	case err = <-rn.done:
	case <-time.After(2 * time.Minute): // the join limit is 16 s (2 x 3 s + 10 s)
		close(rn.stop)
		t.Fatal("replicate still runs in a group the broker refuses")
	}
	if !errors.Is(err, kafkago.GroupAuthorizationFailed) || !strings.Contains(err.Error(), "--group g-acl") {
		t.Fatalf("replicate ended with %v; want GROUP_AUTHORIZATION_FAILED and the grant to make", err)
	}
	t.Log(err)
}
