package replicate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// Kafka forgets a group's committed offsets after offsets.retention.minutes without a member
// (DeleteGroup here), and a group without offsets starts at the first retained message. A
// replication into a table continues from the next offset its state folder recorded instead: the
// messages after it are applied once, not read again from the start, and messages retention
// deleted since the stop stop it with the gap error, where it went on without them.
func TestTableReplicationWhoseGroupOffsetsWereForgotten(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		name := map[bool]string{false: "nothing deleted", true: "retention deleted messages"}[deleted]
		t.Run(name, func(t *testing.T) {
			c := kafkatest.Start(t)
			topic := c.CreateTopic(t, "orders-forgotten", 1)
			group := c.Group("g-forgotten")
			msgs, _, _ := jsonStream(1, 181)
			c.Produce(t, topic, msgs[:100]...)
			db := mysqltest.GMS(t)
			cfg := config(t, c, topic, group, "json", t.TempDir())
			db.Exec(t, mysqlsql.DDL(cfg.Program.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
			target, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			cfg.SQL = sqlsink.Config{Target: target, Conns: 1}
			rn := start(t, cfg)
			waitCommitted(t, c, group, topic, map[int]int64{0: 100}, 60*time.Second)
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}

			c.Produce(t, topic, msgs[100:]...)
			if deleted {
				c.DeleteRecords(t, topic, 0, 150)
			}
			c.DeleteGroup(t, group)

			rn = start(t, cfg)
			if deleted {
				var gap *kafka.GapError
				select {
				case err := <-rn.done:
					if !errors.As(err, &gap) || gap.Next != 100 || gap.First != 150 {
						t.Fatalf("run ended with %v, want the gap from offset 100 to 150", err)
					}
				case <-committedTo(c, group, topic, 181):
					t.Fatal("the group's forgotten offsets let the replication skip the deleted messages 100-149 silently: offset 181 committed")
				}
				return
			}
			waitCommitted(t, c, group, topic, map[int]int64{0: 181}, 60*time.Second)
			wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() >= 81 }, "the new messages read")
			if got := rn.r.Metrics().MessagesIn.Load(); got != 81 {
				t.Errorf("read %d messages after the group's offsets were forgotten, want the 81 after offset 100 (not the topic again from its start)", got)
			}
			if err := rn.shutdown(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}
