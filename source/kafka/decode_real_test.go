package kafka

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// TestDecodeRealCassandraConnectorEvents decodes events captured from Debezium's Cassandra
// connector (debezium-connector-cassandra-5 3.4.1.Final on Cassandra 5.0, deploy/dev/peers.sh),
// one per CQL statement, in testdata/debezium-cassandra5-events.jsonl, on the table
// (a int, b int, c int, x text, y int, PRIMARY KEY ((a), b, c)). The real connector names every
// column in "after": the columns a mutation did not write are a bare null, not a cell, and so are
// _range_start and _range_end outside a range tombstone. A cell deleted is {"value": null,
// "deletion_ts": null}; a cell written with a TTL carries its expiry in deletion_ts; a delete of a
// clustering prefix is a range tombstone with both bounds inclusive.
func TestDecodeRealCassandraConnectorEvents(t *testing.T) {
	want := map[string]string{
		"INSERT INTO capture.ev (a, b, c, x, y) VALUES (1, 1, 1, 'one', 10)":            "upsert 1|1|1|one|10 set all",
		"UPDATE capture.ev SET x = 'uno' WHERE a = 1 AND b = 1 AND c = 1":               "upsert 1|1|1|uno|~ set 11110",
		"DELETE y FROM capture.ev WHERE a = 1 AND b = 1 AND c = 1":                      "upsert 1|1|1|~|~ set 11101",
		"INSERT INTO capture.ev (a, b, c, x) VALUES (1, 2, 1, 'two') USING TTL 100":     "upsert 1|2|1|two|~ set 11110",
		"DELETE FROM capture.ev WHERE a = 1 AND b = 2 AND c = 1":                        "delete 1|2|1|~|~ set 11100",
		"DELETE FROM capture.ev WHERE a = 1 AND b >= 3 AND b < 5":                       "range delete 1|~|~|~|~ set 10000 start [3] incl end [5] excl",
		"DELETE FROM capture.ev WHERE a = 2":                                            "delete 2|~|~|~|~ set 10000",
		"INSERT INTO capture.ev (a, b, c, x, y) VALUES (3, 1, 1, null, 5)":              "upsert 3|1|1|~|5 set all",
		"INSERT INTO capture.ev (a, b, c, x) VALUES (4, 1, 1, 'four')":                  "upsert 4|1|1|four|~ set 11110",
		"UPDATE capture.ev SET y = 7 WHERE a = 4 AND b = 1 AND c = 1":                   "upsert 4|1|1|~|7 set 11101",
		"UPDATE capture.ev SET x = 'cuatro', y = 8 WHERE a = 4 AND b = 1 AND c = 1":     "upsert 4|1|1|cuatro|8 set all",
		"UPDATE capture.ev SET x = 'quatre', y = null WHERE a = 4 AND b = 1 AND c = 1":  "upsert 4|1|1|quatre|~ set all",
		"INSERT INTO capture.ev (a, b, c, x, y) VALUES (4, 1, 2, 't', 1) USING TTL 100": "upsert 4|1|2|t|1 set all",
		"UPDATE capture.ev USING TTL 100 SET y = 9 WHERE a = 4 AND b = 1 AND c = 1":     "upsert 4|1|1|~|9 set 11101",
		"DELETE FROM capture.ev WHERE a = 4 AND b = 1":                                  "range delete 4|~|~|~|~ set 10000 start [1] incl end [1] incl",
	}
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, ev := range capturedEvents(t) {
		w, ok := want[ev.CQL]
		if !ok {
			t.Fatalf("captured event of %q: no expectation", ev.CQL)
		}
		seen++
		if got := showCells(d.Decode(nil, ev.Key, ev.Value)); got != w {
			t.Errorf("%s:\n got %s\nwant %s", ev.CQL, got, w)
		}
	}
	if seen != len(want) {
		t.Fatalf("decoded %d captured events, want %d", seen, len(want))
	}
}

// TestDecodeRealConnectorCollectionsAndTuples decodes events captured from the same connector on
// the table (p int PRIMARY KEY, l list<text>, st set<int>, m map<text, int>, fl frozen<list<int>>,
// fm frozen<map<text, int>>, tp tuple<int, text>), one per statement, in
// testdata/debezium-cassandra5-collections-events.jsonl. An INSERT's cells hold whole values; a
// tuple is an object of field1, field2, ..., read as the array the Cassandra source writes. An
// UPDATE's cell of a non-frozen collection holds only the elements the update wrote (the append
// ['c'] alone, the put {'q': 4} alone, a whole new map as an element put, a removal as [""]): it
// is rejected, naming the column; an UPDATE of a frozen collection writes it whole and is applied.
// An empty non-frozen collection is null, as Cassandra holds it (and a copy reads it); an empty
// frozen one is a value.
func TestDecodeRealConnectorCollectionsAndTuples(t *testing.T) {
	want := []string{
		`upsert 1|["a","b"]|[1,3]|{"j":2,"k":1}|[3,1,2]|{"x":1}|[7,"t"] set all`,
		`reject collection_update l`,
		`reject collection_update m`,
		`reject collection_update l`,
		`upsert 1|~|~|~|[9]|~|~ set 1000100`,
		`upsert 3|~|~|~|[]|~|[5,null] set 1100101`,
	}
	schema := pipeline.SourceSchema{{Name: "p", Type: "int"}, {Name: "l", Type: "list<text>"}, {Name: "st", Type: "set<int>"},
		{Name: "m", Type: "map<text, int>"}, {Name: "fl", Type: "frozen<list<int>>"}, {Name: "fm", Type: "frozen<map<text, int>>"}, {Name: "tp", Type: "tuple<int, text>"}}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	evs := capturedEventsIn(t, "testdata/debezium-cassandra5-collections-events.jsonl")
	if len(evs) != len(want) {
		t.Fatalf("%d captured events, want %d", len(evs), len(want))
	}
	for i, ev := range evs {
		// the captures come from tables of this shape in two keyspaces: each event is read as
		// the table it names
		d.Tables = nil
		cs := d.Decode(nil, ev.Key, ev.Value)
		got := showCells(cs)
		if len(cs) == 1 && cs[0].Err != nil {
			got = "reject " + cs[0].Err.Code + " " + cs[0].Err.Field
			if !strings.Contains(cs[0].Err.Message, "frozen") || !strings.Contains(cs[0].Err.Message, "--repair") {
				t.Errorf("%s: the reject does not say what to do: %s", ev.CQL, cs[0].Err.Message)
			}
		}
		if got != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", ev.CQL, got, want[i])
		}
	}
}

// A counter column: the connector publishes no events of a counter table, so a Debezium source
// refuses it when it opens; a JSON source reads it as a bigint.
func TestCounterColumnRefusedForDebezium(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "p", Type: "int"}, {Name: "n", Type: "counter"}}
	if _, err := NewDecoder(Config{Format: FormatDebezium}, schema); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `column "n" is a Cassandra counter`) || !strings.Contains(err.Error(), "migrate") {
		t.Errorf("a counter column with format=debezium: %v", err)
	}
	d, err := NewDecoder(Config{Format: FormatJSON}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(d.Decode(nil, nil, []byte(`{"p":1,"n":-7}`))); got != "upsert 1|-7" {
		t.Errorf("a counter in a JSON row: %s", got)
	}
}

// A run of the connector's events published again (the same commit log positions) after newer
// ones is marked as repeated by a decoder that skips repeats, and counted; another row of the mutation at
// the last position (a batch of rows of one partition: one position, several events), and the
// events of another segment (another replica's commit log) are not repeats. A decoder that does
// not skip repeats decodes every event.
func TestRepeatedConnectorEventsSkipped(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	type event struct{ key, value []byte }
	var evs []event
	for _, ev := range capturedEvents(t) {
		evs = append(evs, event{ev.Key, ev.Value})
	}
	// the stream: every event, then the last 10 again, then another row at the last position,
	// that row again, and the first event as another replica's segment holds it
	last := evs[len(evs)-1]
	other := event{[]byte(`{"a":4,"b":1,"c":9}`), last.value}
	replica := event{evs[0].key, []byte(strings.Replace(string(evs[0].value), `"file":"CommitLog-7-`, `"file":"CommitLog-7-9`, 1))}
	stream := append(append(append([]event{}, evs...), evs[len(evs)-10:]...), other, other, replica)
	for _, skip := range []bool{true, false} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		d.SkipRepeats = skip
		changes := 0
		for _, ev := range stream {
			for _, ch := range d.Decode(nil, ev.key, ev.value) {
				if !ch.Repeat {
					changes++
				}
			}
		}
		want, repeats := len(evs)+2, int64(11)
		if !skip {
			want, repeats = len(stream), 0
		}
		if changes != want || d.Repeats != repeats {
			t.Errorf("skip repeats %v: %d changes, %d repeats; want %d and %d", skip, changes, d.Repeats, want, repeats)
		}
	}
}

// capturedEvent is one of the real connector's events in testdata, with the CQL that made it.
type capturedEvent struct {
	CQL   string          `json:"cql"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

// capturedEvents reads testdata/debezium-cassandra5-events.jsonl, in the order captured.
func capturedEvents(t testing.TB) []capturedEvent {
	t.Helper()
	return capturedEventsIn(t, "testdata/debezium-cassandra5-events.jsonl")
}

// capturedEventsIn reads the captured events of a testdata file, in the order captured.
func capturedEventsIn(t testing.TB, path string) []capturedEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var evs []capturedEvent
	for sc.Scan() {
		var ev capturedEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// Two range deletes of one partition in one mutation (a BATCH of DELETE ... WHERE a = 1 AND b >= 3
// AND b < 5 and ... b >= 7 AND b < 9) are two events at one commit log position with one message
// key (the partition key, the clustering columns null): the connector makes an event of each
// range tombstone of the partition update, at the mutation's position. Before, the second was
// taken for a repeat of the first and skipped, and its rows were never deleted. Either published
// again is still a repeat.
func TestSecondRangeOfAMutationIsNotARepeat(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	var first capturedEvent
	for _, ev := range capturedEvents(t) {
		if strings.Contains(ev.CQL, "b >= 3 AND b < 5") {
			first = ev
		}
	}
	if first.Value == nil {
		t.Fatal("no captured range tombstone")
	}
	second := strings.NewReplacer(`"value":"3"`, `"value":"7"`, `"value":"5"`, `"value":"9"`).Replace(string(first.Value))
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	d.SkipRepeats = true
	var got []string
	for _, v := range []string{string(first.Value), second, string(first.Value), second} {
		cs := d.Decode(nil, first.Key, []byte(v))
		if cs[0].Repeat {
			got = append(got, "repeat")
		} else {
			got = append(got, showCells(cs))
		}
	}
	want := []string{"range delete 1|~|~|~|~ set 10000 start [3] incl end [5] excl", "range delete 1|~|~|~|~ set 10000 start [7] incl end [9] excl", "repeat", "repeat"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// BenchmarkDecodeCassandraEvents decodes the real connector's events, as replicate does (repeats
// skipped), each at a commit log position of its own.
func BenchmarkDecodeCassandraEvents(b *testing.B) {
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	pos := regexp.MustCompile(`"pos":\d+`)
	var keys, values [][]byte
	for i := 0; len(values) < 4096; i++ {
		for _, ev := range capturedEvents(b) {
			keys = append(keys, ev.Key)
			values = append(values, pos.ReplaceAll(ev.Value, []byte(fmt.Sprintf(`"pos":%d`, len(values)))))
		}
	}
	newDecoder := func() *Decoder {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			b.Fatal(err)
		}
		d.SkipRepeats = true
		return d
	}
	d := newDecoder()
	b.ReportAllocs()
	b.ResetTimer()
	var cs []Change
	for i := 0; i < b.N; i++ {
		j := i % len(values)
		if j == 0 && i > 0 {
			b.StopTimer()
			d = newDecoder()
			b.StartTimer()
		}
		cs = d.Decode(cs[:0], keys[j], values[j])
	}
}

// TestDecodeRealRangeBoundsOfADescColumn decodes range tombstones the real connector published
// for a table clustered (b DESC, c ASC) (testdata/debezium-cassandra5-desc-events.jsonl, same
// connector and node): the bounds come in the table's clustering order, so "b >= 3" runs from
// the partition's start to 3, and a bound names b's type ReversedType(Int32Type), which the
// change carries as b being DESC.
func TestDecodeRealRangeBoundsOfADescColumn(t *testing.T) {
	want := map[string]string{
		"DELETE FROM capture.evd WHERE a = 1 AND b >= 3":               "start [] incl end [3 DESC] incl",
		"DELETE FROM capture.evd WHERE a = 1 AND b >= 3 AND b < 5":     "start [5 DESC] excl end [3 DESC] incl",
		"DELETE FROM capture.evd WHERE a = 1 AND b = 2 AND c >= 1":     "start [2 DESC 1 ASC] incl end [2 DESC] incl",
		"DELETE FROM capture.evd WHERE a = 1 AND b = 2":                "start [2 DESC] incl end [2 DESC] incl",
		"DELETE FROM capture.evd WHERE a = 1 AND b < 7":                "start [7 DESC] excl end [] incl",
		"INSERT INTO capture.evd (a, b, c, x) VALUES (1, 1, 1, 'one')": "",
	}
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}}
	d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
	if err != nil {
		t.Fatal(err)
	}
	bound := func(b pipeline.ClusteringBound) string {
		var s []string
		for i, v := range b.Vals {
			s = append(s, v.String(), map[bool]string{true: "DESC", false: "ASC"}[b.Desc[i]])
		}
		return "[" + strings.Join(s, " ") + "] " + map[bool]string{true: "incl", false: "excl"}[b.Inclusive]
	}
	evs := capturedEventsIn(t, "testdata/debezium-cassandra5-desc-events.jsonl")
	if len(evs) != len(want) {
		t.Fatalf("%d captured events, want %d", len(evs), len(want))
	}
	for _, ev := range evs {
		w, ok := want[ev.CQL]
		if !ok {
			t.Fatalf("captured event of %q: no expectation", ev.CQL)
		}
		cs := d.Decode(nil, ev.Key, ev.Value)
		if len(cs) != 1 || cs[0].Err != nil {
			t.Fatalf("%s: %s", ev.CQL, show(cs))
		}
		got := ""
		if r := cs[0].Range; r != nil {
			got = "start " + bound(r.Start) + " end " + bound(r.End)
		}
		if got != w {
			t.Errorf("%s:\n got %s\nwant %s", ev.CQL, got, w)
		}
	}
}
