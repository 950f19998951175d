// Package cdcdemo plays an application writing to a Cassandra table and Debezium's Cassandra
// connector publishing each mutation to Kafka: the cut-over test's and the playground's changes.
//
// The events are written as the connector's JSON converter (schemas.enable=false) writes them,
// checked against events captured from the real connector (debezium-connector-cassandra-5
// 3.4.1.Final on Cassandra 5.0; source/kafka/testdata/debezium-cassandra5-events.jsonl):
// {"ts_ms", "op", "source", "after"}; "after" names every column, a cell {"value",
// "deletion_ts", "set": true} for each the mutation wrote and a bare null for the others, and
// "_range_start"/"_range_end", null but in a range tombstone. Ops are i, u, d and r. A cell
// deleted (DELETE y FROM ...) is a cell of value null and deletion_ts null; a row delete's cells
// carry the delete's time in deletion_ts. The message key names the primary key, the clustering
// columns null for a partition delete or a range tombstone.
package cdcdemo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// Cell is the connector's cell of a value written (v is its JSON literal).
func Cell(v string) string { return `{"value":` + v + `,"deletion_ts":null,"set":true}` }

// DeletedCell is the connector's cell of a row delete: value null, the delete's time (µs) in
// deletion_ts.
func DeletedCell() string { return `{"value":null,"deletion_ts":1700000000000000,"set":true}` }

// NullCell is the connector's cell of a cell deleted (DELETE col FROM ..., or a null written):
// value null and deletion_ts null.
func NullCell() string { return `{"value":null,"deletion_ts":null,"set":true}` }

// RangeBound is a range tombstone's bound: method (INCL_START_BOUND, EXCL_END_BOUND, ...) and
// clustering column name/value pairs, Int32 typed.
func RangeBound(method string, vals ...string) string {
	var parts []string
	for i := 0; i+1 < len(vals); i += 2 {
		parts = append(parts, `{"name":"`+vals[i]+`","value":"`+vals[i+1]+`","type":"org.apache.cassandra.db.marshal.Int32Type"}`)
	}
	return `{"method":"` + method + `","values":[` + strings.Join(parts, ",") + `]}`
}

// Keyspace and Table are the table the Writer mutates: ks.ev (a int, b int, c int, x text, y int,
// PRIMARY KEY ((a), b, c)).
const (
	Keyspace = "ks"
	Table    = "ev"
)

// Mapping maps ks.ev to the Lindorm table ev with the same key (mappings/ev.yaml holds it too).
const Mapping = `# ev: the cut-over rehearsal's table (go run ./cmd/playground cutover serves ks.ev in Cassandra and
# cutover.ev as the SQL target; README's "Cut-over without downtime" runs against it).
#
# The key is Cassandra's own, [a][b][c] (a the partition key, b and c clustering columns): the
# rehearsal is about losing nothing while the table changes, not about the key's design.
version: 1
source:
  name: ks.ev
  columns:
    a: int
    b: int
    c: int
    x: text
    y: int
target:
  table: ev
  primary_key: "[a][b][c]"
`

// Columns are ks.ev's columns, for cqltest's CreateTable.
var Columns = []cqltest.Column{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"},
	{Name: "x", Type: "text"}, {Name: "y", Type: "int"}}

// CreateTable creates ks.ev in srv.
func CreateTable(srv *cqltest.Server) error {
	return srv.CreateTable(Keyspace, Table, Columns, []string{"a"}, []string{"b", "c"})
}

// Event is the connector's event of a mutation of ks.ev made at wt, keyed by key (the primary
// key; the partition key alone for a range tombstone), placed in partition a % partitions so
// that the topic is partitioned by the Cassandra partition key.
func Event(op string, wt time.Time, key string, partition int, cells ...string) kafkago.Message {
	// each event a mutation of its own, at the next position of the node's commit log (the
	// connector publishes one segment's events in position order)
	source := fmt.Sprintf(`{"version":"2.7.0.Final","connector":"cassandra","name":"cutover","ts_ms":%d,"ts_us":%d,"snapshot":"false",`+
		`"db":"NULL","cluster":"Test Cluster","file":"CommitLog-7-1.log","pos":%d,"keyspace":"ks","table":"ev"}`, wt.UnixMilli(), wt.UnixMicro(), commitLogPos.Add(100))
	// every column is named: those the mutation did not write as a bare null
	named := map[string]bool{}
	for _, c := range cells {
		named[c[1:strings.Index(c[1:], `"`)+1]] = true
	}
	for _, col := range append(columnNames(), "_range_start", "_range_end") {
		if !named[col] {
			cells = append(cells, `"`+col+`":null`)
		}
	}
	return kafkago.Message{Partition: partition, Key: []byte(key),
		Value: []byte(`{"ts_ms":` + strconv.FormatInt(wt.UnixMilli(), 10) + `,"op":"` + op + `","source":` + source + `,"after":{` + strings.Join(cells, ",") + `}}`)}
}

var commitLogPos atomic.Int64

func columnNames() []string {
	names := make([]string, len(Columns))
	for i, c := range Columns {
		names[i] = c.Name
	}
	return names
}

// Model is Cassandra's table ks.ev: row key (a, b, c) -> regular column -> literal ("NULL": no
// cell).
type Model map[[3]int]map[string]string

// Rows are the model's rows, "a b c x y" each, sorted.
func (m Model) Rows() []string {
	out := make([]string, 0, len(m))
	for k, cols := range m {
		out = append(out, fmt.Sprintf("%d %d %d %s %s", k[0], k[1], k[2], cols["x"], cols["y"]))
	}
	sort.Strings(out)
	return out
}

// Writer is the application and the connector: it mutates ks.ev in a CQL test server (inserts,
// updates of some columns, cell deletes, row deletes, range tombstones) and, once Topic is set,
// publishes each mutation's event after the mutation is applied, in the order of the mutations
// (the commit log's).
type Writer struct {
	srv        *cqltest.Server
	partitions int
	rng        *rand.Rand

	mu    sync.Mutex
	topic *kafkago.Writer
	model Model
	ends  []int64 // the next offset of each partition, of the events this writer published
	n     int     // mutations published
}

// NewWriter mutates ks.ev in srv (CreateTable first) with events for a topic of partitions
// partitions; the same seed gives the same mutations.
func NewWriter(srv *cqltest.Server, partitions int, seed uint64) *Writer {
	return &Writer{srv: srv, partitions: partitions, rng: rand.New(rand.NewPCG(seed, 3)), model: Model{}, ends: make([]int64, partitions)}
}

// Seed makes n mutations without events: the table before capturing starts.
func (w *Writer) Seed(n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range n {
		if _, err := w.mutate(); err != nil {
			return err
		}
	}
	return nil
}

// Capture starts publishing every further mutation's event to topic (a kafka-go Writer that
// places messages by their Partition field).
func (w *Writer) Capture(topic *kafkago.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.topic = topic
}

// store writes the model's row k into the test server, as Cassandra holds it after a mutation.
func (w *Writer) store(k [3]int) error {
	row := w.model[k]
	if row == nil {
		_, err := w.srv.Delete(Keyspace, Table, map[string]any{"a": k[0], "b": k[1], "c": k[2]})
		return err
	}
	vals := map[string]any{"a": k[0], "b": k[1], "c": k[2], "x": nil, "y": nil}
	if v := row["x"]; v != "NULL" {
		vals["x"] = v
	}
	if v := row["y"]; v != "NULL" {
		y, _ := strconv.Atoi(v)
		vals["y"] = y
	}
	return w.srv.Insert(Keyspace, Table, vals)
}

// mutate makes one random mutation in Cassandra and returns its event. x is never null, so that
// no row is key-only (migrate rejects those: Lindorm cannot store them).
func (w *Writer) mutate() (kafkago.Message, error) {
	rng := w.rng
	k := [3]int{rng.IntN(8), rng.IntN(6), rng.IntN(4)}
	partition := k[0] % w.partitions
	key := fmt.Sprintf(`{"a":%d,"b":%d,"c":%d}`, k[0], k[1], k[2])
	keyCells := []string{`"a":` + Cell(fmt.Sprint(k[0])), `"b":` + Cell(fmt.Sprint(k[1])), `"c":` + Cell(fmt.Sprint(k[2]))}
	now := time.Now()
	setX := func(row map[string]string) string {
		row["x"] = fmt.Sprint("s", rng.IntN(1000))
		return `"x":` + Cell(`"`+row["x"]+`"`)
	}
	setY := func(row map[string]string) string {
		if rng.IntN(3) == 0 { // DELETE y FROM ks.ev WHERE ...: a null cell
			row["y"] = "NULL"
			return `"y":` + NullCell()
		}
		row["y"] = fmt.Sprint(rng.IntN(1000))
		return `"y":` + Cell(row["y"])
	}
	row := w.model[k]
	var m kafkago.Message
	switch r := rng.IntN(20); {
	case r < 6 || row == nil && r < 14: // INSERT INTO ks.ev (a, b, c, x[, y]) VALUES (...)
		if row == nil {
			row = map[string]string{"y": "NULL"}
			w.model[k] = row
		}
		cells := append(keyCells, setX(row))
		if rng.IntN(2) == 0 {
			cells = append(cells, setY(row))
		}
		m = Event("i", now, key, partition, cells...)
	case r < 14: // UPDATE ks.ev SET x = .. WHERE ..., SET y = .., DELETE y FROM ...
		var cells []string
		switch rng.IntN(3) {
		case 0:
			cells = append(keyCells, setX(row))
		case 1:
			cells = append(keyCells, setY(row))
		default:
			cells = append(keyCells, setX(row), setY(row))
		}
		m = Event("u", now, key, partition, cells...)
	case r < 18: // DELETE FROM ks.ev WHERE a = .. AND b = .. AND c = ..
		delete(w.model, k)
		m = Event("d", now, key, partition, append(keyCells, `"x":`+DeletedCell(), `"y":`+DeletedCell())...)
	default: // DELETE FROM ks.ev WHERE a = .. AND b >= .. AND b < ..
		lo := rng.IntN(6)
		hi := lo + 1 + rng.IntN(2)
		var gone [][3]int
		for rk := range w.model {
			if rk[0] == k[0] && rk[1] >= lo && rk[1] < hi {
				gone = append(gone, rk)
			}
		}
		for _, rk := range gone {
			delete(w.model, rk)
			if err := w.store(rk); err != nil {
				return m, err
			}
		}
		return Event("r", now, fmt.Sprintf(`{"a":%d,"b":null,"c":null}`, k[0]), partition, `"a":`+Cell(fmt.Sprint(k[0])),
			`"_range_start":`+RangeBound("INCL_START_BOUND", "b", fmt.Sprint(lo)),
			`"_range_end":`+RangeBound("EXCL_END_BOUND", "b", fmt.Sprint(hi))), nil
	}
	return m, w.store(k)
}

// Step makes n mutations and publishes their events (when capturing) before it returns. A failed
// publish is an error: the application stops rather than leave a mutation without its event.
func (w *Writer) Step(ctx context.Context, n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := make([]kafkago.Message, 0, n)
	for range n {
		m, err := w.mutate()
		if err != nil {
			return fmt.Errorf("mutate %s.%s: %w", Keyspace, Table, err)
		}
		msgs = append(msgs, m)
	}
	if w.topic == nil {
		return nil
	}
	if err := w.topic.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish %d events: %w", len(msgs), err)
	}
	for _, m := range msgs {
		w.ends[m.Partition]++
	}
	w.n += len(msgs)
	return nil
}

// Run makes 5 mutations every interval until ctx ends or stop is closed.
func (w *Writer) Run(ctx context.Context, interval time.Duration, stop <-chan struct{}) error {
	tick := time.NewTicker(interval) // the application's pace, not a synchronisation
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-tick.C:
		}
		// a publish under way finishes even when ctx ends: its mutations are made
		if err := w.Step(context.WithoutCancel(ctx), 5); err != nil {
			return err
		}
	}
}

// Published is the number of events published.
func (w *Writer) Published() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Ends are the next offsets of the topic's partitions after the events published (the topic's
// end offsets when this writer is its only producer and it started empty).
func (w *Writer) Ends() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.ends...)
}

// Rows are Cassandra's rows now, as Model.Rows.
func (w *Writer) Rows() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.model.Rows()
}
