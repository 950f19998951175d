package replicate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestJoinWatchdog: a member whose join the broker holds longer than every timeout the member
// configured (here a member that joined and stopped heartbeating, with long timeouts of its own)
// fails, naming the group's state and members, instead of staying "joining" for ever.
func TestJoinWatchdog(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-join-stuck", 2)
	group := c.Group("g-join-stuck")
	joinDead(t, c, group, topic, 2, 5*time.Minute)
	cfg := config(t, c, topic, group, "json", t.TempDir())
	cfg.Group.RebalanceTimeout = 2 * time.Second
	rn := start(t, cfg)
	select {
	case err := <-rn.done:
		if err == nil {
			t.Fatal("Run returned nil, want the join watchdog's error")
		}
		// the members named: the dead one (client kgo) and this one; Kafka lists this member twice
		// when its join outlasted kafka-go's request deadline (rebalance timeout + 10 s): the
		// coordinator keeps the first join's member, and kafka-go joins again as a new one
		for _, want := range []string{"consumer group " + group, "no partitions assigned after joining", "state PreparingRebalance", "(client kgo,", "(client rekey,"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		t.Log(err)
		if st, _ := rn.r.Metrics().State(); st != "failed" {
			t.Errorf("state %s, want failed", st)
		}
	case <-time.After(time.Minute):
		st, _ := rn.r.Metrics().State()
		t.Fatalf("still %q after a minute: the member waits for a join the broker holds, silently", st)
	}
}
