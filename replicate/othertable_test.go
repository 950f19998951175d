package replicate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/replicate"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
	"github.com/rekey/rekey/transform"
)

// multiTableStream is a topic Debezium's topic routing filled with two tables, as the MySQL
// connector names them in each event's source (db, table): a row of shop.orders, then a row of
// shop.customers whose columns fit the mapping, and the delete of a customers row (its event,
// then its tombstone) whose key is the orders row's.
func multiTableStream() []kafkago.Message {
	src := func(table string) string {
		return `"source":{"version":"3.4.1.Final","connector":"mysql","name":"srv","ts_ms":1700000000000,"db":"shop","table":"` + table + `","server_id":1,"file":"binlog.000003","pos":4321,"row":0}`
	}
	key := []byte(`{"userid":"a","orderid":1}`)
	return []kafkago.Message{
		{Key: key, Value: []byte(`{"op":"c",` + src("orders") + `,"before":null,"after":{"userid":"a","orderid":1,"amount":10,"note":"order"}}`)},
		{Key: []byte(`{"userid":"b","orderid":2}`), Value: []byte(`{"op":"c",` + src("customers") + `,"before":null,"after":{"userid":"b","orderid":2,"amount":99,"note":"customer"}}`)},
		{Key: key, Value: []byte(`{"op":"d",` + src("customers") + `,"before":{"userid":"a","orderid":1,"amount":5,"note":"customer"},"after":null}`)},
		{Key: key}, // the delete's tombstone
	}
}

// A mapping that states its table (source.table) applies that table's events only: the other
// table's are counted by table, in the manifest (rows_in = rows_written + rows_rejected +
// rows_skipped) and the metrics, never applied. Before, every event of the topic was applied
// to the mapping's table: the customers row was written as an order, and the customers delete
// (and its tombstone) deleted the order of the same key.
func TestOtherTableEventsAreSkippedAndCounted(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "multi-table", 1)
	c.Produce(t, topic, multiTableStream()...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-multi", "debezium", dir)
	m, err := transform.Decode([]byte(strings.Replace(mappingYAML, "  name: shop.orders\n", "  name: shop.orders\n  table: shop.orders\n", 1)), "orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Program, err = transform.Compile(m, nil); err != nil {
		t.Fatal(err)
	}
	rn := start(t, cfg)
	waitCommitted(t, c, "g-multi", topic, endOffsets(t, c, topic), 60*time.Second)
	if err := rn.shutdown(t); err != nil {
		t.Fatal(err)
	}
	want := model{}
	want.upsert(row{userid: "a", amount: 10, note: "order"}, 1)
	compareModels(t, applyOutputs(t, cfg.Program.Target(), cfg.Plan, dir), want)
	man := readManifest(t, dir)
	if man.RowsIn != 4 || man.RowsWritten != 1 || man.RowsRejected != 0 || man.RowsSkipped != 3 {
		t.Errorf("manifest rows in %d, written %d, rejected %d, skipped %d; want 4 = 1 + 0 + 3", man.RowsIn, man.RowsWritten, man.RowsRejected, man.RowsSkipped)
	}
	if got := rn.r.Metrics().OtherTables(); len(got) != 1 || got["shop.customers"] != 3 {
		t.Errorf("other tables counted %v, want shop.customers 3", got)
	}
}

// A mapping that does not state its table reads the table of the topic's first event: an
// event of another table stops the run, naming both tables, the partition and offset, and
// source.table; nothing from that offset on is applied, nor committed.
func TestOtherTableStopsTheRunWithoutSourceTable(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "multi-table-stop", 1)
	c.Produce(t, topic, multiTableStream()...)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-multi-stop", "debezium", dir)
	rn := start(t, cfg)
	var err error
	select {
	case err = <-rn.done:
	case <-time.After(60 * time.Second):
		rn.shutdown(t)
		t.Fatal("the run went on past an event of another table")
	}
	if err == nil || errors.Is(err, errCrash) {
		t.Fatalf("run ended with %v, want the other table's refusal", err)
	}
	for _, s := range []string{"shop.customers", "shop.orders", "partition 0 offset 1", "source.table: shop.orders", topic} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q: %v", s, err)
		}
	}
	if got := c.Committed(t, "g-multi-stop", topic, 1); got[0] > 1 {
		t.Errorf("committed offset %d, past the other table's event at 1", got[0])
	}
}

// source.table names the table of Debezium change events: a topic read as JSON rows, which name
// no table, refuses it (ErrSchema: invalid use), rather than ignore it.
func TestSourceTableRefusedForJSONRows(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "json-rows", 1)
	dir := t.TempDir()
	cfg := config(t, c, topic, "g-json-table", "json", dir)
	m, err := transform.Decode([]byte(strings.Replace(mappingYAML, "  name: shop.orders\n", "  name: shop.orders\n  table: shop.orders\n", 1)), "orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Program, err = transform.Compile(m, nil); err != nil {
		t.Fatal(err)
	}
	_, err = replicate.New(context.Background(), cfg)
	if !errors.Is(err, kafka.ErrSchema) || !strings.Contains(err.Error(), "source.table") || !strings.Contains(err.Error(), "format=debezium") {
		t.Fatalf("New with source.table on JSON rows: %v, want refused", err)
	}
}
