package replicate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/replicate"
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

// A session timeout the broker does not take (below its group.min.session.timeout.ms, 6 s by
// default, or above its max) ends replicate at once with an error naming --session-timeout and
// the broker's bounds: every join is refused (INVALID_SESSION_TIMEOUT), which was retried until
// the join limit, whose error then blamed a killed member holding the group's rebalance.
func TestSessionTimeoutTheBrokerRefusesFailsAtOnce(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("the session timeout below a real broker's minimum is the config's 6s")
	}
	c := kafkatest.Start(t, kfake.GroupMinSessionTimeout(6*time.Second))
	topic := c.CreateTopic(t, "orders-session", 1)
	cfg := config(t, c, topic, "g-session", "json", t.TempDir()) // a 3 s session timeout
	rn := start(t, cfg)
	var err error
	select {
	case err = <-rn.done:
	case <-time.After(2 * time.Minute):
		close(rn.stop)
		t.Fatal("replicate still runs in a group whose broker refuses its session timeout")
	}
	if !errors.Is(err, kafkago.InvalidSessionTimeout) || !errors.Is(err, replicate.ErrGroupSettings) || !strings.Contains(err.Error(), "--session-timeout 3s") {
		t.Fatalf("replicate ended with %v; want INVALID_SESSION_TIMEOUT and --session-timeout named", err)
	}
	t.Log(err)
}
