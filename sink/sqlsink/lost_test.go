package sqlsink

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/zap"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/sink/sqlsink/mysqlsql"
	"github.com/rekey/rekey/sink/sqlsink/mysqltest"
)

// stalledSession is the id of the session whose statement waits in the stall trigger, 0 when
// none does.
func stalledSession(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var id int64
	err := db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND DB = DATABASE()").Scan(&id)
	if err != nil && err != sql.ErrNoRows {
		t.Error(err)
	}
	return id
}

// sessionGone tells whether the session id has ended.
func sessionGone(t *testing.T, db *sql.DB, id int64) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
		t.Error(err)
	}
	return n == 0
}

// stallTable creates the table t (k bigint primary key, v varchar) in a MariaDB, whose first
// insert of v = 'old' waits until gate, which the test holds, is released; its retries do not.
func stallTable(t *testing.T) (*mysqltest.Server, pipeline.TargetSchema, *sql.DB, *sql.Conn) {
	t.Helper()
	srv := mysqltest.MariaDB(t)
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{
		{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}, {Name: "v", Type: pipeline.TypeVarchar, KeyPos: -1}}}
	srv.Exec(t, mysqlsql.DDL(s, mysqlsql.KeyCollations[srv.DDLDialect()]),
		"CREATE SEQUENCE firsts",
		"CREATE TRIGGER stall BEFORE INSERT ON t FOR EACH ROW IF NEW.v = 'old' AND NEXTVAL(firsts) = 1 THEN DO GET_LOCK('gate', 60); END IF")
	db := srv.DB(t)
	gate, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close() })
	if _, err := gate.ExecContext(context.Background(), "DO GET_LOCK('gate', 0)"); err != nil {
		t.Fatal(err)
	}
	return srv, s, db, gate
}

// A statement whose connection is lost while the server still runs it (a connection a load
// balancer cuts, a read timeout, a cancelled context) goes on on the server: it must be over
// before it is tried again, or the first try can land after the retry and after the key's later
// changes, and an older value wins. Here the first try of an upsert waits in the table's trigger
// (as a statement waits behind a lock, or on a loaded server) until the key's next change is
// written.
func TestLostStatementDoesNotLandAfterLaterChanges(t *testing.T) {
	srv, s, db, gate := stallTable(t)
	var cut atomic.Bool
	var zombie atomic.Int64
	p := newFaultProxy(t, srv.Addr, nil, nil)
	p.cutAfter = func(b []byte) bool {
		if !bytes.Contains(b, []byte("INSERT INTO")) || cut.Swap(true) {
			return false
		}
		// the server runs the statement, and waits in it, when its client goes
		return wait.Until(func() bool { zombie.Store(stalledSession(t, db)); return zombie.Load() != 0 }, wait.Timeout)
	}
	tgt := targetVia(t, p.l, srv.Database)
	w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	for _, v := range []string{"old", "new"} {
		if _, err := w.Apply(ctx, []Op{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text(v)}}}); err != nil {
			t.Fatalf("apply %s: %v", v, err)
		}
	}
	if !cut.Load() {
		t.Fatal("the first insert's connection was never cut")
	}
	if _, err := gate.ExecContext(context.Background(), "DO RELEASE_LOCK('gate')"); err != nil {
		t.Fatal(err)
	}
	wait.For(t, func() bool { return sessionGone(t, db, zombie.Load()) }, "the session of the first try of the insert to end")
	var v string
	if err := db.QueryRow("SELECT v FROM t WHERE k = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "new" {
		t.Errorf("v = %q after the upserts of 'old' then 'new': the first try of 'old', cut off from its client, landed last", v)
	}
}

// A statement whose context is cancelled (a hard stop: the partition's next owner goes on with
// the key's later changes) has ended on the server when Apply returns.
func TestCancelledStatementEndsOnTheServer(t *testing.T) {
	srv, s, db, gate := stallTable(t)
	defer gate.ExecContext(context.Background(), "DO RELEASE_LOCK('gate')")
	w := openWriter(t, srv, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stalled atomic.Int64
	go func() {
		wait.Until(func() bool { stalled.Store(stalledSession(t, db)); return stalled.Load() != 0 }, wait.Timeout)
		cancel()
	}()
	if _, err := w.Apply(ctx, []Op{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("old")}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("apply: %v, want it cancelled", err)
	}
	if id := stalled.Load(); id == 0 || !sessionGone(t, db, id) {
		t.Errorf("the cancelled upsert still runs on the server (session %d): it would land after the key's later changes", id)
	}
}

// A statement running when its guard stops holding (replicate's lease runs out mid-statement:
// the partition's next owner goes on with the key's later changes) is ended on the server, and
// Apply returns the guard's error, rather than waiting for it to land whenever the server gets
// to it.
func TestStatementEndsWhenItsGuardStopsHolding(t *testing.T) {
	srv, s, db, gate := stallTable(t)
	defer gate.ExecContext(context.Background(), "DO RELEASE_LOCK('gate')")
	w := openWriter(t, srv, s, 1)
	errLost := errors.New("lease lost")
	var lost atomic.Bool
	ctx := WithGuard(context.Background(), func() (time.Duration, error) {
		if lost.Load() {
			return 0, errLost
		}
		return 10 * time.Millisecond, nil
	})
	var stalled atomic.Int64
	go func() {
		wait.Until(func() bool { stalled.Store(stalledSession(t, db)); return stalled.Load() != 0 }, wait.Timeout)
		lost.Store(true)
	}()
	if _, err := w.Apply(ctx, []Op{{Values: []pipeline.Value{pipeline.Int(1), pipeline.Text("old")}}}); !errors.Is(err, errLost) {
		t.Fatalf("apply: %v, want the guard's error", err)
	}
	if id := stalled.Load(); id == 0 || !sessionGone(t, db, id) {
		t.Errorf("the upsert still runs on the server (session %d) once its guard stopped holding", id)
	}
}

// A server numbers its sessions anew when it restarts: the id of a session lost before the
// restart may name another client's session after it (another worker's connection, an
// application's). Ending the lost statement's session leaves such a session alone.
func TestSettleLeavesAnotherSessionOfTheSameID(t *testing.T) {
	srv := mysqltest.MariaDB(t)
	tgt, err := ParseURI("mysql://root@"+srv.Addr+"/"+srv.Database, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mysql.NewConnector(tgt.driverConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &sessionConnector{Connector: conn, d: tgt.Dialect, log: zap.NewNop()}
	db := sql.OpenDB(c)
	defer db.Close()
	// a session now holding the id, which the connector learnt when it opened it
	other, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var lost *sessionConn
	other.Raw(func(dc any) error { lost = dc.(*sessionConn); return nil })
	// as if it were the session of a statement lost before a restart: another client's then
	stale := lost.session
	stale.host = "10.9.9.9:4242"
	c.settle(context.Background(), stale, errors.New("connection lost"))
	if err := other.PingContext(context.Background()); err != nil || sessionGone(t, srv.DB(t), stale.id) {
		t.Errorf("the session of id %d, another client's since the restart, was ended (%v)", stale.id, err)
	}
}
