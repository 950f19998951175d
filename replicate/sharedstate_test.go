package replicate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// TestMembersSharingAStateFolderKeepEachOthersOffsets: two members of a group into one table
// that share a --state folder (the default one, .rekey-state/<hash of the table>, of two
// processes on one machine) each wrote offsets.json from their own copy, so the last writer
// dropped the partitions only the other had committed; once Kafka forgot the group's offsets, such
// a partition was read again from its first retained message (and messages retention deleted
// since would have been skipped without a word). Each member writes the partitions it committed
// into what the file holds.
func TestMembersSharingAStateFolderKeepEachOthersOffsets(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-shared-state", 2)
	group := c.Group("g-shared-state")
	msgs, _, _ := jsonStream(2, 20)
	c.Produce(t, topic, msgs...)
	db := mysqltest.GMS(t)
	state := t.TempDir()
	var mu sync.Mutex
	assigned := map[string][]int{} // each member's partitions in its last generation
	cfgFor := func(name string) replicate.Config {
		cfg := config(t, c, topic, group, "json", state)
		target, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.SQL = sqlsink.Config{Target: target, Conns: 1}
		cfg.Hooks.Joined = func(_ int32, parts []int) {
			mu.Lock()
			assigned[name] = parts
			mu.Unlock()
		}
		return cfg
	}
	db.Exec(t, mysqlsql.DDL(program(t).Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	// both members read offsets.json (none yet) before either commits
	newRunning := func(cfg replicate.Config) *running {
		r, err := replicate.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return &running{r: r, stop: make(chan struct{}), done: make(chan error, 1)}
	}
	run := func(rn *running) { go func() { rn.done <- rn.r.Run(context.Background(), rn.stop) }() }
	a, b := newRunning(cfgFor("a")), newRunning(cfgFor("b"))
	run(a)
	waitCommitted(t, c, group, topic, map[int]int64{0: 20, 1: 20}, 60*time.Second) // a applied both partitions
	run(b)
	wait.For(t, func() bool { return a.r.Metrics().Assigned() == 1 && b.r.Metrics().Assigned() == 1 }, "a partition each")
	mu.Lock()
	pa, pb := assigned["a"][0], assigned["b"][0]
	mu.Unlock()
	// b commits its own partition only: it never held a's
	c.Produce(t, topic, kafkago.Message{Partition: pb, Value: []byte(`{"userid":"new-b","orderid":1,"amount":1,"note":"b"}`)})
	waitCommitted(t, c, group, topic, map[int]int64{pa: 20, pb: 21}, 60*time.Second)
	for _, rn := range []*running{a, b} {
		if err := rn.shutdown(t); err != nil {
			t.Fatal(err)
		}
	}

	// Kafka forgets the group's offsets; a's partition gets one new message. A member that
	// stopped while the group rebalanced is dropped after its session timeout.
	wait.For(t, func() bool { _, n := groupState(t, c, group); return n == 0 }, "the group without members")
	c.DeleteGroup(t, group)
	c.Produce(t, topic, kafkago.Message{Partition: pa, Value: []byte(`{"userid":"new-a","orderid":1,"amount":1,"note":"a"}`)})
	rn := start(t, cfgFor("c"))
	// the group has no offset of b's partition: c reads nothing new there
	waitCommitted(t, c, group, topic, map[int]int64{pa: 21, pb: -1}, 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if got := rn.r.Metrics().MessagesIn.Load(); got != 1 {
		t.Errorf("read %d messages after the group's offsets were forgotten, want the 1 after the offsets the members committed (partition %d was read again from its start)", got, pa)
	}
}

// TestStateFolderOfAnotherTopicRefused: two replications of different topics into one table
// have one default --state folder (.rekey-state/<hash of the table>). Their rejects files are
// named by partition and offsets only, so the second one's first batch of a partition removed
// the first one's rejects files of that partition as files of its own replayed batches, and each
// wrote offsets.json without the other's offsets. A member whose state folder holds another
// topic's offsets is refused, naming the folder, the topic and --state.
func TestStateFolderOfAnotherTopicRefused(t *testing.T) {
	c := kafkatest.Start(t)
	topicX, topicY := c.CreateTopic(t, "orders-state-x", 1), c.CreateTopic(t, "orders-state-y", 1)
	msgs, _, poison := jsonStream(1, 20)
	if len(poison) == 0 {
		t.Fatal("no poison message: nothing to reject")
	}
	c.Produce(t, topicX, msgs...)
	c.Produce(t, topicY, msgs...)
	db := mysqltest.GMS(t)
	state := t.TempDir()
	cfgFor := func(topic string) replicate.Config {
		cfg := config(t, c, topic, c.Group("g-"+topic), "json", state)
		target, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.SQL = sqlsink.Config{Target: target, Conns: 1}
		return cfg
	}
	db.Exec(t, mysqlsql.DDL(program(t).Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	x := start(t, cfgFor(topicX))
	waitCommitted(t, c, c.Group("g-"+topicX), topicX, map[int]int64{0: 20}, 60*time.Second)
	if err := x.shutdown(t); err != nil {
		t.Fatal(err)
	}
	rejectsOfX := rejectLines(t, state)
	if len(rejectsOfX) != len(poison) {
		t.Fatalf("%d reject lines of topic %s, want %d", len(rejectsOfX), topicX, len(poison))
	}
	r, err := replicate.New(context.Background(), cfgFor(topicY))
	if err == nil {
		// what it did: its first batch removed the rejects of topic X's partition 0
		rn := &running{r: r, stop: make(chan struct{}), done: make(chan error, 1)}
		go func() { rn.done <- r.Run(context.Background(), rn.stop) }()
		waitCommitted(t, c, c.Group("g-"+topicY), topicY, map[int]int64{0: 20}, 60*time.Second)
		rn.shutdown(t)
		lines := 0
		for _, n := range rejectLines(t, state) {
			lines += n
		}
		t.Fatalf("a replication of topic %s into the state folder of topic %s's was accepted; the folder's reject lines: %d of %d (both topics')",
			topicY, topicX, lines, 2*len(poison))
	}
	if !errors.Is(err, replicate.ErrStateOfAnotherTopic) || !strings.Contains(err.Error(), topicX) || !strings.Contains(err.Error(), "--state") {
		t.Errorf("refused with %v, want the topic whose offsets the folder holds and --state named", err)
	}
}
