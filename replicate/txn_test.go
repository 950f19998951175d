package replicate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rekey/rekey/internal/wait"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A transaction the producer aborted changes nothing in the table: its upserts of keys a
// committed transaction wrote before, and of keys of its own, are left out, and so are its
// messages from the counts; the committed transactions around it and a plain producer's messages
// written while it was open are applied in offset order.
func TestAbortedTransactionsAreNotReplicated(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "orders-txn", 1)
	ctx := context.Background()
	txn, plain := c.Producers(t, topic)
	want := model{}
	var applied, last int64
	upsert := func(cl *kgo.Client, userid string, amount int64, keep bool) {
		t.Helper()
		r := row{userid: userid, amount: amount, note: fmt.Sprintf("n%d", amount)}
		rec := &kgo.Record{Key: fmt.Appendf(nil, `{"userid":%q,"orderid":1}`, userid),
			Value: fmt.Appendf(nil, `{"userid":%q,"orderid":1,"amount":%d,"note":%q}`, userid, amount, r.note)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if keep {
			want.upsert(r, 1)
			applied++
			last = rec.Offset
		}
	}
	for i, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		upsert(txn, "u-shared", int64(100*i), commit) // a key every transaction writes
		upsert(txn, fmt.Sprintf("u-txn%d", i), int64(100*i+1), commit)
		upsert(plain, fmt.Sprintf("u-plain%d", i), int64(100*i+2), true)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	group := c.Group("g-txn")
	rn := start(t, config(t, c, topic, group, "json", dir))
	// the partition ends with a commit marker, after the last message
	waitCommitted(t, c, group, topic, map[int]int64{0: last + 1}, 30*time.Second)
	wait.For(t, func() bool { return rn.r.Metrics().MessagesIn.Load() >= applied }, "the messages counted")
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	p := program(t)
	compareModels(t, applyOutputs(t, p.Target(), plan(t, p), dir), want)
	if n := rn.r.Metrics().MessagesIn.Load(); n != applied {
		t.Errorf("%d messages in, want the %d committed ones", n, applied)
	}
	m := readManifest(t, dir)
	if m.RowsIn != applied || m.RowsWritten != applied || m.RowsRejected != 0 {
		t.Errorf("manifest rows in %d, written %d, rejected %d; want %d, %d, 0", m.RowsIn, m.RowsWritten, m.RowsRejected, applied, applied)
	}
}
