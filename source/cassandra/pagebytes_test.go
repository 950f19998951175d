package cassandra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rekey/rekey/source/cassandra"
	"github.com/rekey/rekey/source/cassandra/cassandratest"
	"github.com/rekey/rekey/source/cassandra/cqltest"
)

// A page (one batch) holds at most PageBytes of values when the rows are large, whatever
// page_size says: a range of large cells is read in smaller pages, each row once. Before, every
// page held page_size rows however large: a table of 1.99 MB cells read with --memory 128MiB
// held 545 MiB (a page of 5,000 such rows would be 10 GB).
func TestPagesOfLargeRowsStayWithinPageBytes(t *testing.T) {
	c := cassandratest.Open(t)
	const n, size, pageBytes = 48, 64 << 10, 256 << 10
	must(t, c.CreateTable("pb", "t", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}, []string{"id"}, nil))
	must(t, c.InsertMany("pb", "t", n, func(i int, r map[string]any) error {
		r["id"] = int32(i)
		r["v"] = strings.Repeat(fmt.Sprint(i%10), size)
		return nil
	}))
	src := open(t, c, "pb", "t", "splits=1&workers=1", func(cfg *cassandra.Config) { cfg.PageBytes = pageBytes })
	batches, err := collect(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, b := range batches {
		bytes := 0
		for _, r := range b.Records {
			seen[r.Values[0].Num] = true
			for _, v := range r.Values {
				bytes += len(v.Str)
			}
		}
		if bytes > pageBytes && len(b.Records) > 1 {
			t.Errorf("page %d: %d rows, %d bytes of values; want at most %d bytes (or one row)", i+1, len(b.Records), bytes, pageBytes)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct rows read, want %d", len(seen), n)
	}
}

// A sample of large rows holds about PageBytes a worker too: each slice of the ring gives fewer
// rows (at least one). Before, it gave n rows however large: the 20,000 rows that place quantile
// split keys, of 2 MB cells, would be 40 GB.
func TestSampleOfLargeRowsStaysWithinPageBytes(t *testing.T) {
	c := cassandratest.Open(t)
	const n, size = 200, 32 << 10
	must(t, c.CreateTable("pbs", "t", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}, []string{"id"}, nil))
	must(t, c.InsertMany("pbs", "t", n, func(i int, r map[string]any) error {
		r["id"] = int32(i)
		r["v"] = strings.Repeat(fmt.Sprint(i%10), size)
		return nil
	}))
	src := open(t, c, "pbs", "t", "workers=1", func(cfg *cassandra.Config) { cfg.PageBytes, cfg.SampleRanges = 64<<10, 8 })
	sample, err := src.Sample(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(sample) < 4 || len(sample) > 8 {
		t.Fatalf("sample of %d rows of %d bytes; want one of each of the 8 slices at most (64 KiB), and some", len(sample), size)
	}
}

// A sample takes n rows from the slices of the ring, each its share: a count the slices do not
// divide evenly is not rounded up per slice and cut from the last ones. Before, 100 rows of 64
// slices took 2 from each of the first 50 and none from the 14 slices at the ring's end, a
// fifth of the table's partitions never in the sample.
func TestSampleTakesEverySliceShare(t *testing.T) {
	c := cassandratest.Open(t)
	const rows = 20000
	must(t, c.CreateTable("shares", "t", []cqltest.Column{{Name: "id", Type: "int"}, {Name: "v", Type: "text"}}, []string{"id"}, nil))
	must(t, c.InsertMany("shares", "t", rows, func(i int, r map[string]any) error {
		r["id"] = int32(i)
		r["v"] = "x"
		return nil
	}))
	src := open(t, c, "shares", "t", "")
	const n = 100
	bs, err := src.SampleBatches(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	got, slices := 0, 0
	for _, b := range bs {
		got += len(b.Records)
		if len(b.Records) > 0 {
			slices++
		}
	}
	if got != n || slices != cassandra.DefaultSampleRanges {
		t.Errorf("sample of %d rows from %d of the %d slices, want %d rows from every slice", got, slices, cassandra.DefaultSampleRanges, n)
	}
}
