package replicate_test

import (
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestClosingMemberStaysInGroup: a member whose rolls take longer to close than its session
// timeout when a rebalance begins (a slow disk or target) stays in the group for the rebalance
// timeout, which is what that timeout is for: it commits the offsets of the rolls it closed, and
// the partitions' next owner does not read them again. Before, kafka-go stopped heartbeating as
// the rebalance began and the broker dropped the member after its session timeout: its offset
// commits were refused and the messages replayed.
func TestClosingMemberStaysInGroup(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-closing", 2)
	group := "g-closing"
	msgs, want, _ := jsonStream(2, 100)
	// each partition's first message first: the first roll of an assignment closes after its
	// first batch, and the rest must be in rolls open at the rebalance
	var first, rest []kafkago.Message
	for i, m := range msgs {
		if i%100 == 0 {
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	c.Produce(t, topic, first...)
	dir := t.TempDir()
	const session = 2 * time.Second
	cfgA := config(t, c, topic, group, "json", dir)
	cfgA.RollInterval = time.Hour // A's rolls stay open until the rebalance
	cfgA.Group.SessionTimeout, cfgA.Group.RebalanceTimeout = session, 60*time.Second
	var slow, blocked atomic.Bool
	release := make(chan struct{})
	cfgA.Hooks.Commit = func(step replicate.CommitStep, partition int, first, last int64) error {
		if step == replicate.StepFinished && slow.Load() {
			blocked.Store(true)
			<-release
		}
		return nil
	}
	a := start(t, cfgA)
	waitCommitted(t, c, group, topic, map[int]int64{0: 1, 1: 1}, 60*time.Second)
	c.Produce(t, topic, rest...)
	wait.For(t, func() bool { return a.r.Metrics().MessagesIn.Load() == int64(len(msgs)) }, "A to read every message")

	slow.Store(true)
	cfgB := config(t, c, topic, group, "json", dir)
	cfgB.Group.SessionTimeout, cfgB.Group.RebalanceTimeout = session, 60*time.Second
	b := start(t, cfgB)
	wait.For(t, func() bool { return blocked.Load() }, "A to close its rolls, slowly, as B joins")
	// three session timeouts with A closing its rolls: the broker must keep it
	dropped := wait.Until(func() bool { _, members := groupState(t, c, group); return members < 2 }, 3*session)
	close(release)
	if dropped {
		t.Fatalf("the broker dropped A while it closed its rolls, %s (session timeout) after the rebalance began, before the rebalance timeout", session)
	}
	waitCommitted(t, c, group, topic, endOffsets(t, c, topic), 60*time.Second)
	if n := a.r.Metrics().CommitErrors.Load(); n != 0 {
		t.Errorf("A: %d offset commits refused", n)
	}
	if n := b.r.Metrics().MessagesIn.Load(); n != 0 {
		t.Errorf("B read %d messages A had committed", n)
	}
	for _, rn := range []*running{a, b} {
		if err := rn.shutdown(t); err != nil {
			t.Fatal(err)
		}
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
}
