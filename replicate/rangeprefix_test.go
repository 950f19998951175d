package replicate

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
)

// A key whose leading column is a hash of the partition key, with the partition key itself after
// a clustering column ([crc32(a) % 16 AS h][b][a][c]), puts the rows of several partitions under
// one h, ordered by b before a: the captured range delete (a = 1 AND b >= 3 AND b < 5) and
// partition delete (a = 2) of Debezium's Cassandra connector are no one range of that key. Into a
// table they are rejected (range_tombstone). Before, they became h = .. AND b >= 3 AND b < 5 and
// h = .., deleting the rows of every partition sharing the hash.
func TestRangeDeleteUnderAHashPrefixOfManyPartitionsIsRejected(t *testing.T) {
	prog := capturedProgram(t, "[crc32(a) % 16 AS h][b][a][c]")
	r := &Replicator{cfg: Config{Program: prog, Kafka: kafka.Config{Format: kafka.FormatDebezium}}, target: prog.Target(), log: zap.NewNop()}
	w := r.newPartWorker(0, nil, outputCaps{}, 2)
	seen := 0
	for _, ev := range capturedEvents(t) {
		chs := w.dec.Decode(nil, ev.Key, ev.Value)
		if ev.CQL != "DELETE FROM capture.ev WHERE a = 1 AND b >= 3 AND b < 5" && ev.CQL != "DELETE FROM capture.ev WHERE a = 2" {
			continue
		}
		seen++
		ops := w.operations(nil, &chs[0])
		if len(ops) != 1 || ops[0].kind != opReject || ops[0].err.Code != pipeline.CodeRangeTombstone {
			var got []string
			for _, op := range ops {
				got = append(got, describe(op, prog.Target().KeyLen))
			}
			t.Errorf("%s: %s; want the range_tombstone reject", ev.CQL, strings.Join(got, "; "))
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the captured range and partition deletes, want 2", seen)
	}
}
