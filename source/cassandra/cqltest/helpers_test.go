package cqltest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

func newServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSession(t testing.TB, s *Server, mods ...func(*gocql.ClusterConfig)) *gocql.Session {
	t.Helper()
	c := s.NewCluster()
	c.Logger = newTestLogger(t)
	for _, m := range mods {
		m(c)
	}
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	t.Cleanup(sess.Close)
	return sess
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// errCode returns the CQL error code carried by a gocql error, or -1.
func errCode(err error) int {
	var re gocql.RequestError
	if errors.As(err, &re) {
		return re.Code()
	}
	return -1
}

func int32Bytes(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// seedInts creates ks.<name> (id int PRIMARY KEY, v text) with ids 0..n-1.
func seedInts(t testing.TB, s *Server, name string, n int) {
	t.Helper()
	must(t, s.CreateTable("ks", name, []Column{{"id", "int"}, {"v", "text"}}, []string{"id"}, nil))
	must(t, s.InsertMany("ks", name, n, func(i int, r map[string]any) error {
		r["id"] = int32(i)
		r["v"] = "value"
		return nil
	}))
}

// testLogger sends gocql's log lines to the test log (shown only on failure or with -v) and
// drops those that come after the test ended, when t.Log would panic.
type testLogger struct {
	t    testing.TB
	mu   *sync.Mutex
	done *bool
}

func newTestLogger(t testing.TB) testLogger {
	l := testLogger{t: t, mu: &sync.Mutex{}, done: new(bool)}
	t.Cleanup(func() { l.mu.Lock(); *l.done = true; l.mu.Unlock() })
	return l
}

func (l testLogger) log(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !*l.done {
		l.t.Log("gocql: " + s)
	}
}

func (l testLogger) Print(v ...any)                 { l.log(fmt.Sprint(v...)) }
func (l testLogger) Printf(format string, v ...any) { l.log(fmt.Sprintf(format, v...)) }
func (l testLogger) Println(v ...any)               { l.log(fmt.Sprintln(v...)) }
