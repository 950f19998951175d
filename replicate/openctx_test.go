package replicate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/sink/sqlsink"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// New into a table connects through its ctx: a start whose context is cancelled (the process
// stopping) while the target refuses connections ends with the cancellation. The connection was
// made under a context of its own, so the start went on retrying the target (up to --retries,
// backoffs of up to 10s: minutes) and failed with the target's error instead.
func TestNewIntoATableHonoursItsContext(t *testing.T) {
	tgt, err := sqlsink.ParseURI("mysql://root@127.0.0.1:1/db", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t, &kafkatest.Cluster{Brokers: []string{"127.0.0.1:1"}}, "orders", "g", "json", t.TempDir())
	// a retry or two, at once: the test needs no wait to tell the two apart
	cfg.SQL = sqlsink.Config{Target: tgt, Conns: 1, Retries: 1, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = replicate.New(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context: %v, want the cancellation", err)
	}
}
