package sqlsink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rekey/rekey/internal/testnet"
	"github.com/rekey/rekey/pipeline"
)

// A server that accepts the connection and never answers (a hung server, a port of another
// service, a proxy with no backend) fails Open after the connect check's wait with an error that
// says so, names the server and says what to do: before, it was "connect to ...: context deadline
// exceeded".
func TestOpenOfASilentServerSaysItDoesNotAnswer(t *testing.T) {
	defer func(d time.Duration) { pingTimeout = d }(pingTimeout)
	pingTimeout = 200 * time.Millisecond
	addr := testnet.Silent(t, nil)
	tgt, err := ParseURI("mysql://root@"+addr+"/db", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s := pipeline.TargetSchema{Table: "t", KeyLen: 1, Columns: []pipeline.Column{{Name: "k", Type: pipeline.TypeBigint, KeyPos: 0}}}
	done := make(chan error, 1)
	go func() {
		w, err := Open(context.Background(), Config{Target: tgt, Schema: s, Conns: 1})
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "run the same command again") {
			t.Fatalf("Open of a server that never answers: %v; want it named, said not to answer, and what to do", err)
		}
		t.Log(err)
	case <-time.After(time.Minute):
		t.Fatal("Open still waits for a silent server a minute after its 200ms connect check")
	}
}
