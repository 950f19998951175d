package cqltest

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/rekey/rekey/internal/wait"
)

func scanAll(sess *gocql.Session, q string, pageSize int, args ...any) (int, error) {
	iter := sess.Query(q, args...).PageSize(pageSize).Iter()
	var id int32
	n := 0
	for iter.Scan(&id) {
		n++
	}
	return n, iter.Close()
}

// A failed page surfaces as the iterator's error, with the right type and code; once the
// fault is spent the same scan succeeds.
func TestFailPage(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 5000)
	sess := newSession(t, s)

	codes := []struct {
		code ErrorCode
		is   func(error) bool
	}{
		{ErrReadTimeout, func(err error) bool { var e *gocql.RequestErrReadTimeout; return errors.As(err, &e) }},
		{ErrUnavailable, func(err error) bool { var e *gocql.RequestErrUnavailable; return errors.As(err, &e) }},
		{ErrOverloaded, func(err error) bool { return errCode(err) == gocql.ErrCodeOverloaded }},
		{ErrReadFailure, func(err error) bool { var e *gocql.RequestErrReadFailure; return errors.As(err, &e) }},
	}
	for _, c := range codes {
		f := s.FailPage(FaultMatch{Table: "t", Page: 3, Times: 1}, c.code)
		n, err := scanAll(sess, "SELECT id FROM ks.t", 1000)
		if err == nil || !c.is(err) {
			t.Fatalf("code %#x: scan error = %v (%T)", c.code, err, err)
		}
		if n != 2000 {
			t.Errorf("code %#x: %d rows before the failure, want 2000", c.code, n)
		}
		if f.Fired() != 1 {
			t.Errorf("fired %d times", f.Fired())
		}
		n, err = scanAll(sess, "SELECT id FROM ks.t", 1000)
		if err != nil || n != 5000 {
			t.Fatalf("code %#x: retry: %d rows, %v", c.code, n, err)
		}
	}
	if st := s.Stats(); st.Faults != int64(len(codes)) {
		t.Errorf("stats faults = %d", st.Faults)
	}

	// An always-failing fault on one range only: other ranges are unaffected.
	s.ClearFaults()
	always := s.FailPage(FaultMatch{Range: RangeContains(0)}, ErrReadTimeout)
	if _, err := scanAll(sess, "SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", 1000, int64(-10), int64(10)); err == nil {
		t.Error("range containing 0 did not fail")
	}
	if _, err := scanAll(sess, "SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", 1000, int64(10), int64(math.MaxInt64)); err != nil {
		t.Errorf("other range failed: %v", err)
	}
	r := ScanRange{Keyspace: "ks", Table: "t", Start: -10, End: 10}
	if st := s.Stats().Ranges[r]; st.Faults != 1 || st.Pages != 0 {
		t.Errorf("range stats %+v", st)
	}
	s.RemoveFault(always)
	if _, err := scanAll(sess, "SELECT id FROM ks.t WHERE token(id) > ? AND token(id) <= ?", 1000, int64(-10), int64(10)); err != nil {
		t.Errorf("after RemoveFault: %v", err)
	}
}

// Resume after a failure: a reader that keeps its last page state retries the failed page
// and ends with every row exactly once.
func TestResumeAfterFailure(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 5000)
	sess := newSession(t, s)
	s.FailPage(FaultMatch{Page: 2, Times: 2}, ErrReadTimeout)
	s.FailPage(FaultMatch{Page: 4, Times: 1}, ErrOverloaded)

	seen := map[int32]int{}
	var state []byte
	failures := 0
	for {
		iter := sess.Query("SELECT id FROM ks.t").PageSize(1000).PageState(state).Iter()
		var id int32
		var got []int32
		for iter.Scan(&id) {
			got = append(got, id)
		}
		next := iter.PageState()
		if err := iter.Close(); err != nil {
			failures++
			if failures > 10 {
				t.Fatal("too many failures")
			}
			continue // retry the same page
		}
		for _, id := range got {
			seen[id]++
		}
		if len(next) == 0 {
			break
		}
		state = next
	}
	if failures != 3 {
		t.Errorf("%d failures, want 3", failures)
	}
	if len(seen) != 5000 {
		t.Fatalf("%d distinct rows", len(seen))
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("id %d seen %d times", id, c)
		}
	}
}

func TestDelayPage(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 3000)
	sess := newSession(t, s, func(c *gocql.ClusterConfig) { c.Timeout = 2 * time.Second })

	s.DelayPage(FaultMatch{Page: 2, Times: 1}, 300*time.Millisecond)
	start := time.Now()
	n, err := scanAll(sess, "SELECT id FROM ks.t", 1000)
	if err != nil || n != 3000 {
		t.Fatalf("delayed scan: %d rows, %v", n, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("scan took %v, want >= 300ms", d)
	}

	// A delay longer than the client's timeout is a client-side timeout.
	short := newSession(t, s, func(c *gocql.ClusterConfig) { c.Timeout = 100 * time.Millisecond })
	s.DelayPage(FaultMatch{Page: 1, Times: 1}, time.Second)
	_, err = scanAll(short, "SELECT id FROM ks.t", 1000)
	if !errors.Is(err, gocql.ErrTimeoutNoResponse) {
		t.Errorf("timeout: got %v", err)
	}
}

// DropPage and DropConnections break connections under gocql, which fails the requests in
// flight and then reconnects by itself.
func TestDropConnections(t *testing.T) {
	s := newServer(t)
	seedInts(t, s, "t", 3000)
	sess := newSession(t, s, func(c *gocql.ClusterConfig) { c.Timeout = 2 * time.Second })

	f := s.DropPage(FaultMatch{Page: 2, Times: 1})
	if _, err := scanAll(sess, "SELECT id FROM ks.t", 1000); err == nil {
		t.Error("scan survived a dropped connection")
	}
	if f.Fired() != 1 {
		t.Errorf("DropPage fired %d times", f.Fired())
	}
	waitOK(t, sess)

	// A request held in flight by a delay fails when all connections are dropped.
	held := s.DelayPage(FaultMatch{Times: 1}, 5*time.Second)
	conns := s.Stats().Connections
	done := make(chan error, 1)
	go func() {
		_, err := scanAll(sess, "SELECT id FROM ks.t", 1000)
		done <- err
	}()
	wait.For(t, func() bool { return held.Fired() == 1 }, "the query held in flight by the delay")
	s.DropConnections()
	select {
	case err := <-done:
		if err == nil {
			t.Error("in-flight query survived DropConnections")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("in-flight query did not fail after DropConnections")
	}
	waitOK(t, sess)
	if got := s.Stats().Connections; got <= conns {
		t.Errorf("no reconnection: %d connections before, %d after", conns, got)
	}
}

// waitOK waits until the session can scan again (gocql refills its pool asynchronously, and
// on a busy machine a host it marked down waits for the next reconnection round).
func waitOK(t *testing.T, sess *gocql.Session) {
	t.Helper()
	var n int
	var err error
	if !wait.Until(func() bool {
		n, err = scanAll(sess, "SELECT id FROM ks.t", 1000)
		return err == nil && n == 3000
	}, wait.Timeout) {
		t.Fatalf("session did not recover: %d rows, %v", n, err)
	}
}
