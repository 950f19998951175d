package cdcdemo

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// role is a member's part in ks.ev's events: its partition key, clustering columns, regular
// columns, range bounds.
var role = map[string]string{"a": "partition", "b": "clustering", "c": "clustering", "x": "regular", "y": "regular",
	"_range_start": "bound", "_range_end": "bound"}

// shapes are an event's op with each member of its key and of its "after" by role and kind: a
// cell ("cell", "cell:null" for a null value, "+ts" with a deletion_ts), a bare null, or a bound.
func shapes(t *testing.T, key, value []byte) []string {
	t.Helper()
	var k map[string]json.RawMessage
	var v struct {
		Op    string                     `json:"op"`
		After map[string]json.RawMessage `json:"after"`
	}
	if err := json.Unmarshal(key, &k); err != nil {
		t.Fatalf("key %s: %v", key, err)
	}
	if err := json.Unmarshal(value, &v); err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	var parts []string
	for name, raw := range k {
		kind := "value"
		if string(raw) == "null" {
			kind = "null"
		}
		parts = append(parts, v.Op+" key."+role[name]+"="+kind)
	}
	for name, raw := range v.After {
		kind := "null"
		if string(raw) != "null" {
			var cell struct {
				Value       json.RawMessage `json:"value"`
				DeletionTS  json.RawMessage `json:"deletion_ts"`
				Method      string          `json:"method"`
				Unsupported json.RawMessage `json:"unsupported"`
			}
			if err := json.Unmarshal(raw, &cell); err != nil {
				t.Fatalf("after.%s %s: %v", name, raw, err)
			}
			switch {
			case cell.Method != "":
				kind = "bound"
			case string(cell.Value) == "null":
				kind = "cell:null"
			default:
				kind = "cell"
			}
			if kind != "bound" && string(cell.DeletionTS) != "null" {
				kind += "+ts"
			}
		}
		parts = append(parts, v.Op+" "+role[name]+"="+kind)
	}
	return parts
}

// TestEventsShapedAsTheRealConnectors: every shape of a member the stand-in writes (by op, the
// member's role in the key or "after", and its kind: a cell, a null cell, a bare null, a bound) is
// one the real connector wrote in the events captured from it
// (source/kafka/testdata/debezium-cassandra5-events.jsonl, on a table of the same columns). The
// real connector also writes shapes the stand-in does not (a TTL's expiry in deletion_ts, a
// partition delete).
func TestEventsShapedAsTheRealConnectors(t *testing.T) {
	f, err := os.Open("../testdata/debezium-cassandra5-events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	real := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Key, Value json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		for _, sh := range shapes(t, ev.Key, ev.Value) {
			real[sh] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	srv, err := cqltest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := CreateTable(srv); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(srv, 2, 5)
	var msgs []kafkago.Message
	for range 400 {
		m, err := w.mutate()
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	seen := map[string]int{}
	for _, m := range msgs {
		seen[strings.SplitN(string(m.Value), `"op":"`, 2)[1][:1]]++
		for _, sh := range shapes(t, m.Key, m.Value) {
			if !real[sh] {
				t.Fatalf("the stand-in writes %s in %s\nwhich the real connector never wrote; its shapes:\n%s", sh, m.Value,
					strings.Join(slices.Sorted(maps.Keys(real)), "\n"))
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("the stand-in wrote the ops %v in 400 mutations, want i, u, d and r", seen)
	}
}
