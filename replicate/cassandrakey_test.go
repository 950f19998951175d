package replicate

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/source/kafka"
)

// A target key computed from a regular (non-primary-key) column of a Cassandra table cannot be
// replicated from Debezium's Cassandra connector: an UPDATE (or an INSERT over a row) that changes
// the column moves the row to another key, and the event carries no old row to find the old key
// by. Both captured events (INSERT x = 'one', then UPDATE SET x = 'uno', on a table keyed
// (a, b, c)) are rejected, naming the column, into files and into a table alike. Before, the
// insert wrote the row under key one/1/1/1 and the update wrote it again under uno/1/1/1,
// leaving the first behind: two rows for one, without a reject.
func TestCassandraKeyFromARegularColumnIsRejected(t *testing.T) {
	prog := capturedProgram(t, "[x][a][b][c]")
	evs := capturedEvents(t)[:2]
	if !strings.HasPrefix(evs[0].CQL, "INSERT") || !strings.Contains(evs[1].CQL, "SET x = 'uno'") {
		t.Fatalf("captured events %+v: want the INSERT and the UPDATE of x first", evs)
	}
	for _, caps := range []outputCaps{{wholeRows: true}, {}} {
		r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium}}, target: prog.Target(), log: zap.NewNop()}
		w := r.newPartWorker(0, nil, caps, 2)
		var got []string
		for _, ev := range evs {
			chs := w.dec.Decode(nil, ev.Key, ev.Value)
			for _, op := range w.operations(nil, &chs[0]) {
				got = append(got, describe(op, prog.Target().KeyLen))
			}
		}
		for i, g := range got {
			if i > 1 || !strings.HasPrefix(g, "reject transform "+CodeRegularKeyColumn+` field="x": `) {
				t.Errorf("files %v: got\n\t%s\nwant each event rejected, %s naming x", caps.wholeRows, strings.Join(got, "\n\t"), CodeRegularKeyColumn)
				break
			}
		}
		if len(got) != 2 {
			t.Errorf("files %v: got\n\t%s\nwant two rejects", caps.wholeRows, strings.Join(got, "\n\t"))
		}
	}
}
