package replicate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A member paused past its session timeout (here: its batch held before its statements run,
// while the broker stops hearing its heartbeats, as for a stopped process, a frozen VM or a
// network partition from the brokers) loses its partition to another member, which applies that
// batch and newer changes of the same keys. Resumed, the paused member must not run its batch's
// statements: the table would go back to the older values (a table gives no fencing). It stops
// before them, joins the group again, and the table keeps the newest values.
func TestPausedMemberDoesNotApplyOverItsSuccessor(t *testing.T) {
	c := kafkatest.Start(t)
	if c.Fake == nil {
		t.Skip("pauses a member's heartbeats with the in-process broker's request control")
	}
	topic := c.CreateTopic(t, "orders-paused", 1)
	group := c.Group("g-paused")
	keys := []string{"u1", "u2", "u3"}
	produce := func(version int) {
		var msgs []kafkago.Message
		for _, k := range keys {
			msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, k),
				Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"amount":%d,"note":"v%d"}`, k, version, version)})
		}
		c.Produce(t, topic, msgs...)
	}

	// the broker stops hearing the paused member's heartbeats once paused is set
	var mu sync.Mutex
	var member, paused string
	c.Fake.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		id := req.(*kmsg.HeartbeatRequest).MemberID
		mu.Lock()
		defer mu.Unlock()
		if paused == "" {
			member = id // the first member's, until it pauses
			return nil, nil, false
		}
		if id == paused {
			return nil, errors.New("paused"), true
		}
		return nil, nil, false
	})

	db := mysqltest.GMS(t)
	sqlConfig := func(name string) replicate.Config {
		cfg := config(t, c, topic, group, "json", t.TempDir())
		tgt, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.SQL = sqlsink.Config{Target: tgt, Conns: 1}
		cfg.Logger = cfg.Logger.Named(name)
		return cfg
	}
	cfgA := sqlConfig("a")
	db.Exec(t, mysqlsql.DDL(cfgA.Program.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	held, release := make(chan struct{}), make(chan struct{})
	cfgA.Hooks.Commit = func(s replicate.CommitStep, _ int, first, _ int64) error {
		switch {
		case s == replicate.StepApplying && first == 3:
			close(held)
			<-release
		case s == replicate.StepApplying && first > 3:
			// a has read b's newer changes too: killed before them, it leaves its older batch
			// as the table's last word, unless it did not apply it
			return errors.New("killed")
		}
		return nil
	}
	produce(1)
	a := start(t, cfgA)
	waitCommitted(t, c, group, topic, map[int]int64{0: 3}, 30*time.Second)
	produce(2)
	<-held // a has read offsets 3-5 and is about to apply them
	wait.For(t, func() bool { mu.Lock(); defer mu.Unlock(); return member != "" }, "the first member's heartbeat")
	mu.Lock()
	paused = member
	mu.Unlock()

	// b takes the partition over once the broker dropped a, applies offsets 3-5 and newer changes
	b := start(t, sqlConfig("b"))
	produce(3)
	waitCommitted(t, c, group, topic, map[int]int64{0: 9}, 60*time.Second)
	close(release) // a resumes
	ctx := context.Background()
	amounts := func() map[string]int64 {
		rows, err := db.DB(t).QueryContext(ctx, "SELECT userid, amount FROM orders")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]int64{}
		for rows.Next() {
			var u string
			var amt int64
			if err := rows.Scan(&u, &amt); err != nil {
				t.Fatal(err)
			}
			got[u] = amt
		}
		return got
	}
	// a joins the group again once it gave up its batch, or is killed after applying it
	wait.For(t, func() bool { return a.r.Metrics().Rebalances.Load() >= 2 || len(a.done) > 0 }, "the paused member to join again")
	if n := a.r.Metrics().LeasesLost.Load(); n != 1 {
		t.Errorf("rekey_leases_lost_total %d, want 1", n)
	}
	got := amounts()
	for _, k := range keys {
		if got[k] != 3 {
			t.Errorf("key %s: amount %d, want 3, the newest change (the paused member applied its older batch over it)", k, got[k])
		}
	}
	for _, err := range []error{a.shutdown(t), b.shutdown(t)} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A member paused in the middle of a batch's statements (a batch of two statements: a key
// comes twice) loses its partition as one paused before them does. Resumed, it must not run
// the rest of its batch over the newer changes its successor applied: the lease is asked before
// every statement, not only before the first.
func TestMemberPausedMidBatchDoesNotApplyOverItsSuccessor(t *testing.T) {
	c := kafkatest.Start(t)
	if c.Fake == nil {
		t.Skip("pauses a member's heartbeats with the in-process broker's request control")
	}
	topic := c.CreateTopic(t, "orders-paused-mid", 1)
	group := c.Group("g-paused-mid")
	keys := []string{"u1", "u2", "u3", "u1"}
	produce := func(version int) {
		var msgs []kafkago.Message
		for _, k := range keys {
			msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, k),
				Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"amount":%d,"note":"v%d"}`, k, version, version)})
		}
		c.Produce(t, topic, msgs...)
	}
	var mu sync.Mutex
	var member, paused string
	c.Fake.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		id := req.(*kmsg.HeartbeatRequest).MemberID
		mu.Lock()
		defer mu.Unlock()
		if paused == "" {
			member = id
			return nil, nil, false
		}
		if id == paused {
			return nil, errors.New("paused"), true
		}
		return nil, nil, false
	})
	db := mysqltest.GMS(t)
	sqlConfig := func(name string) replicate.Config {
		cfg := config(t, c, topic, group, "json", t.TempDir())
		tgt, err := sqlsink.ParseURI(db.URI(""), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		cfg.SQL = sqlsink.Config{Target: tgt, Conns: 1}
		cfg.Logger = cfg.Logger.Named(name)
		return cfg
	}
	cfgA := sqlConfig("a")
	db.Exec(t, mysqlsql.DDL(cfgA.Program.Target(), mysqlsql.KeyCollations[db.DDLDialect()]))
	held, release := make(chan struct{}), make(chan struct{})
	var inBatch, once sync.Once
	var applying bool
	cfgA.Hooks.Commit = func(s replicate.CommitStep, _ int, first, _ int64) error {
		switch {
		case s == replicate.StepApplying && first == 4:
			inBatch.Do(func() { mu.Lock(); applying = true; mu.Unlock() })
		case s == replicate.StepApplying && first > 4:
			return errors.New("killed")
		}
		return nil
	}
	cfgA.Hooks.Statement = func() {
		mu.Lock()
		in := applying
		mu.Unlock()
		if in {
			once.Do(func() { // after the batch's first statement
				close(held)
				<-release
			})
		}
	}
	produce(1)
	a := start(t, cfgA)
	waitCommitted(t, c, group, topic, map[int]int64{0: 4}, 30*time.Second)
	produce(2)
	<-held
	wait.For(t, func() bool { mu.Lock(); defer mu.Unlock(); return member != "" }, "the first member's heartbeat")
	mu.Lock()
	paused = member
	mu.Unlock()
	b := start(t, sqlConfig("b"))
	produce(3)
	waitCommitted(t, c, group, topic, map[int]int64{0: 12}, 60*time.Second)
	close(release)
	wait.For(t, func() bool { return a.r.Metrics().Rebalances.Load() >= 2 || len(a.done) > 0 }, "the paused member to join again")
	rows, err := db.DB(t).QueryContext(context.Background(), "SELECT userid, amount FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var u string
		var amt int64
		if err := rows.Scan(&u, &amt); err != nil {
			t.Fatal(err)
		}
		got[u] = amt
	}
	rows.Close()
	for _, k := range keys[:3] {
		if got[k] != 3 {
			t.Errorf("key %s: amount %d, want 3, the newest change (the paused member applied the rest of its older batch over it)", k, got[k])
		}
	}
	for _, err := range []error{a.shutdown(t), b.shutdown(t)} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
