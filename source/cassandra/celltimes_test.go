package cassandra_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// With CellWriteTimes each record carries every regular cell's write time (Record.Times, epoch
// ms: WRITETIME()'s microseconds floored, so two writes within one millisecond get one
// timestamp), 0 for the key columns, unset cells and non-frozen collections, which have no single
// write time; the records' values are those of a read without it. Without it, no times.
func TestCellWriteTimes(t *testing.T) {
	c := cassandratest.Open(t)
	must(t, c.CreateTable("ct", "ev", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"},
		{Name: "b", Type: "int"}, {Name: "tags", Type: "set<text>"}}, []string{"id"}, nil))
	const n = 60
	must(t, c.InsertMany("ct", "ev", n, func(i int, row map[string]any) error {
		row["id"] = i
		row["a"] = cqltest.Cell{Value: fmt.Sprint("a", i), WriteTime: oldWrite + int64(i)*1777}
		if i%3 != 0 { // every third row has no b
			row["b"] = cqltest.Cell{Value: i, WriteTime: newWrite - int64(i)}
		}
		if i%2 == 0 {
			row["tags"] = []string{"x"}
		}
		return nil
	}))
	src := open(t, c, "ct", "ev", "page_size=7&splits=4", func(cfg *cassandra.Config) { cfg.CellWriteTimes = true })
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	seen := 0
	for _, b := range batches {
		for _, r := range b.Records {
			seen++
			if r.Err != nil {
				t.Fatalf("%s: %v", b.Position(&r), r.Err)
			}
			i := r.Values[0].Num
			want := []int64{0, (oldWrite + i*1777) / 1000, (newWrite - i) / 1000, 0}
			if i%3 == 0 {
				want[2] = 0
			}
			if fmt.Sprint(r.Times) != fmt.Sprint(want) {
				t.Errorf("id %d: times %v, want %v", i, r.Times, want)
			}
			if r.Values[1].Str != fmt.Sprint("a", i) {
				t.Errorf("id %d: a %q", i, r.Values[1].Str)
			}
		}
	}
	if seen != n {
		t.Fatalf("%d records, want %d", seen, n)
	}
	plain := open(t, c, "ct", "ev", "")
	batches, err = collect(context.Background(), plain, nil)
	must(t, err)
	for _, b := range batches {
		for _, r := range b.Records {
			if r.Times != nil {
				t.Fatalf("times %v without CellWriteTimes", r.Times)
			}
		}
	}
}

// A cell written before Cassandra's first millisecond ends (USING TIMESTAMP 0, or a negative
// time) carries 1 ms, the first time Record.Times can hold (0 is none): as none, its copy would
// get the target's clock and beat every write after it.
func TestCellWriteTimesBeforeTheFirstMillisecond(t *testing.T) {
	c := cassandratest.Open(t)
	must(t, c.CreateTable("ct", "first", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "a", Type: "text"}}, []string{"id"}, nil))
	writes := []int64{999, -5, 1000, 2999}
	must(t, c.InsertMany("ct", "first", len(writes), func(i int, row map[string]any) error {
		row["id"] = i
		row["a"] = cqltest.Cell{Value: "x", WriteTime: writes[i]}
		return nil
	}))
	src := open(t, c, "ct", "first", "", func(cfg *cassandra.Config) { cfg.CellWriteTimes = true })
	batches, err := collect(context.Background(), src, nil)
	must(t, err)
	got := map[int64]int64{}
	for _, b := range batches {
		for _, r := range b.Records {
			got[r.Values[0].Num] = r.Times[1]
		}
	}
	if want := map[int64]int64{0: 1, 1: 1, 2: 1, 3: 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cell times by id %v, want %v (written at %v us)", got, want, writes)
	}
}
