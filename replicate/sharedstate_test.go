package replicate_test

import (
	"context"
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

	// Kafka forgets the group's offsets; a's partition gets one new message
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
