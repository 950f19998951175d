package kafka_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/rekey/rekey/pipeline"
	"github.com/rekey/rekey/source/kafka"
	"github.com/rekey/rekey/source/kafka/kafkatest"
)

// A window of a topic of two tables (PostgreSQL's events, named in source.schema and
// source.table) gives the rows of the table it reads (Window.Table, the mapping's source.table)
// and counts the other table's events as skipped: rows read = records + skipped. Without a
// table, the first event's table is the one and an event of another fails the read, naming both.
// Before, the other table's rows came out as rows of the mapping's table.
func TestWindowOfSeveralTables(t *testing.T) {
	c := kafkatest.Start(t)
	topic := c.CreateTopic(t, "window-tables", 1)
	ev := func(table, id string) kafkago.Message {
		return kafkago.Message{Key: []byte(`{"orderid":` + id + `}`), Value: []byte(`{"op":"c","source":{"version":"3.4.1.Final","connector":"postgresql","name":"srv","db":"shop","schema":"public","table":"` + table +
			`"},"before":null,"after":{"userid":"u` + id + `","orderid":` + id + `}}`)}
	}
	c.Produce(t, topic, ev("orders", "1"), ev("customers", "2"), ev("orders", "3"), ev("customers", "4"))
	cfg, err := kafka.ParseURI("kafka://"+c.Brokers[0]+"/"+topic+"?format=debezium", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kafka.NewWindow(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Table = "public.orders"
	var ids []int64
	var skipped int64
	for _, b := range collect(t, w, nil) {
		skipped += b.Skipped
		for _, r := range b.Records {
			if r.Err != nil {
				t.Fatalf("offset %d: %v", r.Seq, r.Err)
			}
			ids = append(ids, r.Values[1].Num)
		}
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 3 || skipped != 2 {
		t.Errorf("rows %v and %d skipped, want orders 1 and 3, and the 2 customers skipped", ids, skipped)
	}

	w, err = kafka.NewWindow(context.Background(), cfg, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan pipeline.Batch, 16)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx, nil, out); close(out) }()
	for range out {
	}
	err = <-errc
	if err == nil {
		t.Fatal("a window of two tables without a table read both as one")
	}
	for _, s := range []string{"public.customers", "public.orders", "offset 1", "source.table: public.orders"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q: %v", s, err)
		}
	}
}
