package kafka

import (
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// A cell Debezium's Cassandra connector sends with a value and a deletion_ts was written with a
// TTL (USING TTL: deletion_ts is its expiry), which replicate does not apply: the change counts
// those cells (TTLCells), so that replicate can say so. The captured events: INSERT ... USING
// TTL 100 of x (one cell; its key cells carry none), of x and y (two), UPDATE USING TTL 100 of y
// (one); the other events none, a delete's deletion_ts being its own time.
func TestDecodeCountsCellsWrittenWithATTL(t *testing.T) {
	want := map[string]int{
		"INSERT INTO capture.ev (a, b, c, x) VALUES (1, 2, 1, 'two') USING TTL 100":     1,
		"INSERT INTO capture.ev (a, b, c, x, y) VALUES (4, 1, 2, 't', 1) USING TTL 100": 2,
		"UPDATE capture.ev USING TTL 100 SET y = 9 WHERE a = 4 AND b = 1 AND c = 1":     1,
	}
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range capturedEvents(t) {
		chs := d.Decode(nil, ev.Key, ev.Value)
		if got := chs[0].TTLCells; got != want[ev.CQL] {
			t.Errorf("%s: %d cells with a TTL, want %d", ev.CQL, got, want[ev.CQL])
		}
	}
}
