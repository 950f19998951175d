package replicate_test

import (
	"testing"
	"time"

	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestStopWhileJoinBlocked: a stop while the group's join is held by a killed member (in the
// group until its session times out, here longer than the test) ends Run at once: leaving the
// group does not wait for the join, and nothing is lost (offsets are committed only after
// durable output). The group is still rebalancing when Run has returned.
func TestStopWhileJoinBlocked(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-stop-join", 2)
	group := c.Group("g-stop-join")
	msgs, _, _ := jsonStream(2, 20)
	c.Produce(t, topic, msgs...)
	joinDead(t, c, group, topic, 2, 5*time.Minute)
	cfg := config(t, c, topic, group, "json", t.TempDir())
	cfg.Group.RebalanceTimeout = 5 * time.Minute // the join may take that long: leaving must not wait for it
	rn := start(t, cfg)
	waitFor(t, "the replicator's join to wait for the killed member", 30*time.Second, func() bool {
		state, members := groupState(t, c, group)
		st, _ := rn.r.Metrics().State()
		return st == "joining" && state == "PreparingRebalance" && members == 2
	})
	close(rn.stop)
	select {
	case err := <-rn.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return on stop: blocked leaving the group while the join waits for the killed member")
	}
	if state, _ := groupState(t, c, group); state != "PreparingRebalance" {
		t.Errorf("group state %s when Run returned, want PreparingRebalance (Run waited for the join to end)", state)
	}
}
