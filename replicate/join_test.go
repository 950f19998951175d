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
		// The error names the member holding the join (the dead one, client kgo). How many members
		// it counts differs: kfake shows the dead member and this one; the real coordinator also
		// keeps this member's own earlier join attempt, abandoned when kafka-go's read of the held
		// JoinGroup timed out and it joined again, until that attempt's session times out.
		wants := []string{"consumer group " + group, "no partitions assigned after joining", "state PreparingRebalance", "members: ", "(client kgo,"}
		if !kafkatest.Real() {
			wants = append(wants, "2 members")
		}
		for _, want := range wants {
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
