package kafka

import (
	"strings"
	"testing"

	"github.com/rekey/rekey/pipeline"
)

// The events of Debezium's Cassandra connector name their table in source.keyspace and
// source.table ("db" is "NULL" there): a decoder of keyspace.table applies that table's events
// and marks every event of another table OtherTable, with nothing to apply. Before, the table an
// event named was never read, and every event of a topic was applied to the mapping's table.
func TestCassandraEventsOfAnotherTable(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "a", Type: "int"}, {Name: "b", Type: "int"}, {Name: "c", Type: "int"}, {Name: "x", Type: "text"}, {Name: "y", Type: "int"}}
	evs := capturedEvents(t)
	for _, c := range []struct{ table, other string }{{"capture.ev", ""}, {"capture.other", "capture.ev"}, {"NULL.ev", "capture.ev"}} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		d.Table = c.table
		for _, ev := range evs {
			ch := d.Decode(nil, ev.Key, ev.Value)[0]
			if ch.OtherTable != c.other || ch.TableErr != nil {
				t.Fatalf("source.table %s, %s: other table %q (%v), want %q", c.table, ev.CQL, ch.OtherTable, ch.TableErr, c.other)
			}
			if c.other != "" && (ch.Op != 0 || ch.Err != nil || ch.Values != nil) {
				t.Fatalf("source.table %s, %s: an event of another table gives %+v, want nothing to apply", c.table, ev.CQL, ch)
			}
			if c.other == "" && ch.Op == 0 {
				t.Fatalf("source.table %s, %s: the table's own event is not applied: %+v", c.table, ev.CQL, ch)
			}
		}
	}
}

// A relational event names its table in source.db, source.schema (PostgreSQL, SQL Server,
// Oracle) and source.table: the mapping names it schema.table or db.schema.table, or db.table
// when the event has no schema (MySQL). The tombstone that follows another table's delete is
// that table's too: its key, applied, would delete the mapping's row of the same key. Without a
// stated table the first event's is the topic's, for every decoder sharing Tables, and an event
// of another table is refused with the error that stops the read.
func TestRelationalEventsOfAnotherTable(t *testing.T) {
	schema := pipeline.SourceSchema{{Name: "id", Type: "bigint"}, {Name: "v", Type: "text"}}
	pg := func(table, op string) []byte {
		return []byte(`{"op":"` + op + `","source":{"connector":"postgresql","db":"shop","schema":"public","table":"` + table + `"},"before":{"id":1,"v":"b"},"after":{"id":1,"v":"a"}}`)
	}
	my := []byte(`{"op":"c","source":{"connector":"mysql","db":"shop","table":"orders"},"after":{"id":1,"v":"a"}}`)
	key := []byte(`{"id":1}`)
	for _, c := range []struct {
		table string
		value []byte
		other string
	}{
		{"public.orders", pg("orders", "c"), ""},
		{"shop.public.orders", pg("orders", "c"), ""},
		{"shop.orders", pg("orders", "c"), "public.orders"},
		{"other.public.orders", pg("orders", "c"), "public.orders"},
		{"public.orders", pg("customers", "c"), "public.customers"},
		{"public.orders", pg("xorders", "c"), "public.xorders"},
		{"shop.orders", my, ""},
		{"shop.xorders", my, "shop.orders"},
		{"hop.orders", my, "shop.orders"},
	} {
		d, err := NewDecoder(Config{Format: FormatDebezium}, schema)
		if err != nil {
			t.Fatal(err)
		}
		d.Table = c.table
		if ch := d.Decode(nil, key, c.value)[0]; ch.OtherTable != c.other || ch.TableErr != nil || (c.other == "") != (ch.Op == OpUpsert) {
			t.Errorf("source.table %s, %s: other table %q, op %v (%v); want %q", c.table, c.value, ch.OtherTable, ch.Op, ch.TableErr, c.other)
		}
	}

	d, _ := NewDecoder(Config{Format: FormatDebezium}, schema)
	d.Table = "public.orders"
	for i, want := range []struct {
		value []byte
		other string
		op    Op
	}{{pg("customers", "d"), "public.customers", 0}, {nil, "public.customers", 0}, {pg("orders", "d"), "", OpDelete}, {nil, "", OpDelete}} {
		if ch := d.Decode(nil, key, want.value)[0]; ch.OtherTable != want.other || ch.Op != want.op {
			t.Errorf("delete and tombstone %d: other table %q, op %v; want %q, %v", i, ch.OtherTable, ch.Op, want.other, want.op)
		}
	}

	var seen TableSeen
	d0, _ := NewDecoder(Config{Format: FormatDebezium}, schema)
	d1, _ := NewDecoder(Config{Format: FormatDebezium}, schema)
	d0.Tables, d1.Tables = &seen, &seen
	if ch := d0.Decode(nil, key, pg("orders", "c"))[0]; ch.OtherTable != "" || ch.Op != OpUpsert {
		t.Fatalf("the first event: %+v, want applied", ch)
	}
	ch := d1.Decode(nil, key, pg("customers", "u"))[0]
	if ch.OtherTable != "public.customers" || ch.TableErr == nil {
		t.Fatalf("another table's event after the first's on another partition: %+v, want refused", ch)
	}
	for _, s := range []string{"public.customers", "public.orders", "source.table: public.orders"} {
		if !strings.Contains(ch.TableErr.Error(), s) {
			t.Errorf("the error does not say %q: %v", s, ch.TableErr)
		}
	}
}

// A source.table that names the events' table only ignoring case ("Public.Orders" for
// public.orders) matches none of them: rather than skip every event of the table as another
// table's, the read stops saying to write the name as the events give it.
func TestSourceTableDifferingInCase(t *testing.T) {
	d, err := NewDecoder(Config{Format: FormatDebezium}, pipeline.SourceSchema{{Name: "id", Type: "bigint"}})
	if err != nil {
		t.Fatal(err)
	}
	d.Table = "Public.Orders"
	ch := d.Decode(nil, nil, []byte(`{"op":"c","source":{"connector":"postgresql","db":"shop","schema":"public","table":"orders"},"after":{"id":1}}`))[0]
	if ch.TableErr == nil || !strings.Contains(ch.TableErr.Error(), "public.orders") || !strings.Contains(ch.TableErr.Error(), "Public.Orders") {
		t.Fatalf("source.table differing from the events' table in case: %+v, want the read stopped naming both", ch)
	}
}
