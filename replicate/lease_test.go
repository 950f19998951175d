package replicate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	g := newPausableGroup(t, "paused", []string{"u1", "u2", "u3"})
	cfgA := g.sqlConfig("a")
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
	g.produce(1)
	a := start(t, cfgA)
	waitCommitted(t, g.c, g.group, g.topic, map[int]int64{0: 3}, 30*time.Second)
	g.produce(2)
	<-held // a has read offsets 3-5 and is about to apply them
	g.pause()

	// b takes the partition over once the broker dropped a, applies offsets 3-5 and newer changes
	b := start(t, g.sqlConfig("b"))
	g.produce(3)
	waitCommitted(t, g.c, g.group, g.topic, map[int]int64{0: 9}, 60*time.Second)
	close(release) // a resumes
	// a joins the group again once it gave up its batch, or is killed after applying it
	wait.For(t, func() bool { return a.r.Metrics().Rebalances.Load() >= 2 || len(a.done) > 0 }, "the paused member to join again")
	if n := a.r.Metrics().LeasesLost.Load(); n != 1 {
		t.Errorf("rekey_leases_lost_total %d, want 1", n)
	}
	got := g.amounts()
	for _, k := range g.keys {
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
	g := newPausableGroup(t, "paused-mid", []string{"u1", "u2", "u3", "u1"})
	cfgA := g.sqlConfig("a")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var applying atomic.Bool // the batch's statements have begun: the statement hook then pauses
	cfgA.Hooks.Commit = func(s replicate.CommitStep, _ int, first, _ int64) error {
		switch {
		case s == replicate.StepApplying && first == 4:
			applying.Store(true)
		case s == replicate.StepApplying && first > 4:
			return errors.New("killed")
		}
		return nil
	}
	cfgA.Hooks.Statement = func() {
		if applying.Load() {
			once.Do(func() { // after the batch's first statement
				close(held)
				<-release
			})
		}
	}
	g.produce(1)
	a := start(t, cfgA)
	waitCommitted(t, g.c, g.group, g.topic, map[int]int64{0: 4}, 30*time.Second)
	g.produce(2)
	<-held
	g.pause()
	b := start(t, g.sqlConfig("b"))
	g.produce(3)
	waitCommitted(t, g.c, g.group, g.topic, map[int]int64{0: 12}, 60*time.Second)
	close(release)
	wait.For(t, func() bool { return a.r.Metrics().Rebalances.Load() >= 2 || len(a.done) > 0 }, "the paused member to join again")
	got := g.amounts()
	for _, k := range g.keys[:3] {
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

// pausableGroup is a topic of one partition on the in-process broker, a consumer group whose
// first member's heartbeats the broker stops hearing once pause is called, and the SQL table
// the members apply to.
type pausableGroup struct {
	t            *testing.T
	c            *kafkatest.Cluster
	topic, group string
	keys         []string
	db           *mysqltest.Server
	mu           sync.Mutex
	member       string // the first member's id, until it pauses
	paused       string
}

func newPausableGroup(t *testing.T, name string, keys []string) *pausableGroup {
	c := kafkatest.Start(t)
	if c.Fake == nil {
		t.Skip("pauses a member's heartbeats with the in-process broker's request control")
	}
	g := &pausableGroup{t: t, c: c, topic: c.CreateTopic(t, "orders-"+name, 1), group: c.Group("g-" + name), keys: keys, db: mysqltest.GMS(t)}
	c.Fake.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.Fake.KeepControl()
		id := req.(*kmsg.HeartbeatRequest).MemberID
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.paused == "" {
			g.member = id
			return nil, nil, false
		}
		if id == g.paused {
			return nil, errors.New("paused"), true
		}
		return nil, nil, false
	})
	cfg := g.sqlConfig("ddl")
	g.db.Exec(t, mysqlsql.DDL(cfg.Program.Target(), mysqlsql.KeyCollations[g.db.DDLDialect()]))
	return g
}

// produce writes a change of every key, each at amount version.
func (g *pausableGroup) produce(version int) {
	var msgs []kafkago.Message
	for _, k := range g.keys {
		msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, k),
			Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"amount":%d,"note":"v%d"}`, k, version, version)})
	}
	g.c.Produce(g.t, g.topic, msgs...)
}

// sqlConfig is a member's configuration, applying to the table through one connection.
func (g *pausableGroup) sqlConfig(name string) replicate.Config {
	cfg := config(g.t, g.c, g.topic, g.group, "json", g.t.TempDir())
	tgt, err := sqlsink.ParseURI(g.db.URI(""), func(string) string { return "" })
	if err != nil {
		g.t.Fatal(err)
	}
	cfg.SQL = sqlsink.Config{Target: tgt, Conns: 1}
	cfg.Logger = cfg.Logger.Named(name)
	return cfg
}

// pause makes the broker stop hearing the first member's heartbeats.
func (g *pausableGroup) pause() {
	wait.For(g.t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.member != "" }, "the first member's heartbeat")
	g.mu.Lock()
	g.paused = g.member
	g.mu.Unlock()
}

// amounts is the table's amount of each key.
func (g *pausableGroup) amounts() map[string]int64 {
	rows, err := g.db.DB(g.t).QueryContext(context.Background(), "SELECT userid, amount FROM orders")
	if err != nil {
		g.t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int64{}
	for rows.Next() {
		var u string
		var amt int64
		if err := rows.Scan(&u, &amt); err != nil {
			g.t.Fatal(err)
		}
		got[u] = amt
	}
	return got
}
