package cassandratest

import (
	"sync"
	"testing"

	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// Two tests of one process that use the same table of a real cluster take turns: the second
// waits to drop and re-create it until the first has ended.
func TestTestsTakeTurnsWithATable(t *testing.T) {
	if !Open(t).Real() {
		t.Skip("each test has its own in-process server: tables are shared only on a real cluster")
	}
	waited := make(chan string, 1)
	claimWaits = func(table string) { waited <- table }
	defer func() { claimWaits = nil }()
	cols := []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}
	second := &laterTB{TB: t}
	created := make(chan error, 1)
	if !t.Run("first", func(t *testing.T) {
		first := Open(t)
		if err := first.CreateTable("claims", "t", cols, []string{"id"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := first.InsertMany("claims", "t", 1, func(i int, r map[string]any) error {
			r["id"], r["v"] = i, "first"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		go func() { created <- Open(second).CreateTable("claims", "t", cols, []string{"id"}, nil) }()
		select {
		case table := <-waited:
			if table != "claims.t" {
				t.Fatalf("the second test waited for %s, want claims.t", table)
			}
		case err := <-created:
			t.Fatalf("the second test re-created claims.t while the first used it (%v)", err)
		}
		var n int
		if err := first.sess.Query(`SELECT count(*) FROM claims.t`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("the first test's table holds %d rows (%v), want its 1", n, err)
		}
	}) {
		return
	}
	if err := <-created; err != nil { // the first has ended: the second goes on
		t.Fatal(err)
	}
	second.cleanUp()
}

// laterTB is a test's TB for work it starts on another goroutine, whose cleanups run when
// cleanUp is called rather than when the test ends.
type laterTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (l *laterTB) Cleanup(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

func (l *laterTB) cleanUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.cleanups) - 1; i >= 0; i-- {
		l.cleanups[i]()
	}
}
